package startup

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"

	"github.com/vishvananda/netlink"
)

// TestInterfacesWhileLinksChurn lists the interfaces of a namespace while other links come and
// go. The kernel interrupts a multi-part dump when the table changes during it; Interfaces must
// repeat the dump rather than fail (a failed listing stops registration).
func TestInterfacesWhileLinksChurn(t *testing.T) {
	n := newTestNS(t)
	for i := range 40 {
		n.veth(fmt.Sprintf("ens%d", i), fmt.Sprintf("ens%dp", i), fmt.Sprintf("198.18.%d.2/24", i))
	}
	k := n.kernel()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() { churnLinks(ctx, n) })
	for i := range 300 {
		ifaces, err := k.Interfaces()
		if err != nil {
			t.Fatalf("listing %d: %v", i, err)
		}
		if len(ifaces) < 81 {
			t.Fatalf("listing %d: %d interfaces, want at least 81", i, len(ifaces))
		}
	}
}

// churnLinks adds and deletes a veth pair, and an address on ens0, until ctx ends (on a handle
// of its own: a netlink.Handle is not safe for concurrent use).
func churnLinks(ctx context.Context, n *testNS) {
	h, err := netlink.NewHandleAt(n.ns)
	if err != nil {
		n.t.Error(err)
		return
	}
	defer h.Close()
	ens0, err := h.LinkByName("ens0")
	if err != nil {
		n.t.Error(err)
		return
	}
	for i := 0; ctx.Err() == nil; i++ {
		v := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: fmt.Sprintf("churn%d", i%4)}, PeerName: fmt.Sprintf("churnp%d", i%4)}
		if err := h.LinkAdd(v); err == nil {
			_ = h.LinkDel(v)
		}
		a := &netlink.Addr{IPNet: &net.IPNet{IP: net.IPv4(198, 19, 0, byte(i)), Mask: net.CIDRMask(32, 32)}}
		if err := h.AddrAdd(ens0, a); err == nil {
			_ = h.AddrDel(ens0, a)
		}
	}
}
