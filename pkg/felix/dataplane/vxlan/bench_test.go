package vxlan

import (
	"fmt"
	"net"
	"net/netip"
	"testing"

	"github.com/calico-host/calico-host/internal/logtest"
	"github.com/calico-host/calico-host/pkg/netnstest"
)

func manyVTEPs(n int) []VTEP {
	out := make([]VTEP, n)
	for i := range out {
		out[i] = VTEP{
			Node:       fmt.Sprint("node", i),
			MAC:        net.HardwareAddr{0x66, 0, 0, 0, byte(i >> 8), byte(i)},
			TunnelAddr: netip.AddrFrom4([4]byte{10, 65, byte(i >> 8), byte(i)}),
			ParentAddr: netip.AddrFrom4([4]byte{198, 19, byte(i >> 8), byte(i)}),
		}
	}
	return out
}

// BenchmarkNetnsVTEPs measures programming 1000 remote VTEPs (ARP + FDB entries) into a real
// device and removing them again.
func BenchmarkNetnsVTEPs(b *testing.B) {
	netnstest.Require(b, "ping")
	ns := netnstest.New(b, "vxbench")
	ns.IP(b, "link", "add", "eth0", "type", "veth", "peer", "name", "eth1")
	ns.IP(b, "addr", "add", "198.18.0.1/24", "dev", "eth0")
	nl, err := OpenNetlink(ns.Path())
	if err != nil {
		b.Fatal(err)
	}
	defer nl.Close()
	m := NewManager(nl, logtest.Logger(b))
	vteps := manyVTEPs(1000)
	if err := m.Apply(ctx, v4Config(), nil); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := m.Apply(ctx, v4Config(), vteps); err != nil {
			b.Fatal(err)
		}
		if err := m.Apply(ctx, v4Config(), nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUnchangedApply measures an Apply with 1000 VTEPs and nothing to do (fake kernel).
func BenchmarkUnchangedApply(b *testing.B) {
	f := newFakeHost()
	m := NewManager(f, logtest.Logger(b))
	vteps := manyVTEPs(1000)
	if err := m.Apply(ctx, v4Config(), vteps); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := m.Apply(ctx, v4Config(), vteps); err != nil {
			b.Fatal(err)
		}
	}
}
