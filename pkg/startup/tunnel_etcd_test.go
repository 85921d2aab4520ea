package startup

import (
	"errors"
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/ipam"
	"github.com/calico-host/calico-host/pkg/vtepmac"
)

// updatePool changes the spec of pool name in the datastore.
func (h *harness) updatePool(name string, change func(*api.IPPoolSpec)) {
	h.t.Helper()
	ctx := ctxT(h.t, 10*time.Second)
	p, err := datastore.GetAs[*api.IPPool](ctx, h.ds, "", name)
	if err != nil {
		h.t.Fatal(err)
	}
	change(&p.Spec)
	if _, err := h.ds.Update(ctx, p); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) setPoolVXLAN(name, mode string) {
	h.updatePool(name, func(s *api.IPPoolSpec) { s.VXLANMode = mode })
}

// wantTunnelIPAM asserts that a is allocated in IPAM under handle with Project Calico's
// attributes of a tunnel address: the node and the type.
func (h *harness) wantTunnelIPAM(a netip.Addr, node, handle, typ string) {
	h.t.Helper()
	attrs, got, err := ipam.New(h.ds, testLogger(h.t)).GetAssignmentAttributes(ctxT(h.t, 5*time.Second), a)
	want := map[string]string{AttrNode: node, AttrType: typ}
	if err != nil || got != handle || !reflect.DeepEqual(attrs, want) {
		h.t.Fatalf("IPAM for %s: attrs %v handle %q err %v, want %v handle %q", a, attrs, got, err, want, handle)
	}
}

func (h *harness) handleExists(handle string) bool {
	h.t.Helper()
	resp, err := h.raw.Get(ctxT(h.t, 5*time.Second), datastore.HandleKey(handle))
	if err != nil {
		h.t.Fatal(err)
	}
	return len(resp.Kvs) == 1
}

// checkTunnel asserts the node's VXLAN address is allocated in IPAM to this node's tunnel handle.
func (h *harness) checkTunnel(node string, within netip.Prefix) netip.Addr {
	h.t.Helper()
	n := h.node(node)
	a, err := netip.ParseAddr(n.Spec.IPv4VXLANTunnelAddr)
	if err != nil || !within.Contains(a) {
		h.t.Fatalf("ipv4VXLANTunnelAddr %q is not in %s", n.Spec.IPv4VXLANTunnelAddr, within)
	}
	if n.Spec.VXLANTunnelMACAddr != vtepmac.ForNode(node, false).String() {
		h.t.Errorf("vxlanTunnelMACAddr %q, want %q", n.Spec.VXLANTunnelMACAddr, vtepmac.ForNode(node, false).String())
	}
	h.wantTunnelIPAM(a, node, VXLANHandle(node), AttrTypeVXLAN)
	return a
}

func (h *harness) checkNoTunnel(node string, old netip.Addr) {
	h.t.Helper()
	n := h.node(node)
	if n.Spec.IPv4VXLANTunnelAddr != "" || n.Spec.VXLANTunnelMACAddr != "" {
		h.t.Fatalf("tunnel fields not cleared: %q %q", n.Spec.IPv4VXLANTunnelAddr, n.Spec.VXLANTunnelMACAddr)
	}
	h.checkReleased(VXLANHandle(node), old)
}

// checkReleased fails unless the IPAM handle is gone and old (if valid) is no longer assigned.
func (h *harness) checkReleased(handle string, old netip.Addr) {
	h.t.Helper()
	if h.handleExists(handle) {
		h.t.Fatalf("handle %s still exists", handle)
	}
	if old.IsValid() {
		_, _, err := ipam.New(h.ds, testLogger(h.t)).GetAssignmentAttributes(ctxT(h.t, 5*time.Second), old)
		if !errors.Is(err, ipam.ErrNotAssigned) {
			h.t.Fatalf("%s still assigned: %v", old, err)
		}
	}
}

func TestTunnelAddressFollowsPools(t *testing.T) {
	env := fixtureEnv(t)
	env["CALICO_IPV4POOL_VXLAN"] = "Never"
	env["CALICO_IPV6POOL_CIDR"] = "fd5c:1::/48"
	h := newHarness(t, env, fixtureHost())
	s := h.startup()
	ctx := ctxT(t, 60*time.Second)
	if err := s.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	h.checkNoTunnel("host-z", netip.Addr{})

	h.setPoolVXLAN(DefaultIPv4PoolName, api.EncapAlways)
	if err := s.ReconcileTunnels(ctx); err != nil {
		t.Fatal(err)
	}
	addr := h.checkTunnel("host-z", pfx("10.65.0.0/16"))

	before, _ := h.revisions()
	if err := s.ReconcileTunnels(ctx); err != nil {
		t.Fatal(err)
	}
	if after, _ := h.revisions(); !reflect.DeepEqual(before, after) {
		t.Errorf("reconciling an allocated tunnel address wrote to etcd")
	}
	if again := h.checkTunnel("host-z", pfx("10.65.0.0/16")); again != addr {
		t.Errorf("tunnel address changed from %s to %s", addr, again)
	}

	h.setPoolVXLAN(DefaultIPv4PoolName, api.EncapCrossSubnet)
	if err := s.ReconcileTunnels(ctx); err != nil {
		t.Fatal(err)
	}
	if again := h.checkTunnel("host-z", pfx("10.65.0.0/16")); again != addr {
		t.Errorf("CrossSubnet must keep the address: %s -> %s", addr, again)
	}

	h.setPoolVXLAN(DefaultIPv4PoolName, api.EncapNever)
	if err := s.ReconcileTunnels(ctx); err != nil {
		t.Fatal(err)
	}
	h.checkNoTunnel("host-z", addr)

	// IPv6 goes through the same code with its own handle, attribute type and MAC.
	h.setPoolVXLAN(DefaultIPv6PoolName, api.EncapAlways)
	if err := s.ReconcileTunnels(ctx); err != nil {
		t.Fatal(err)
	}
	n := h.node("host-z")
	a6, err := netip.ParseAddr(n.Spec.IPv6VXLANTunnelAddr)
	if err != nil || !pfx("fd5c:1::/48").Contains(a6) || n.Spec.VXLANTunnelMACAddrV6 != vtepmac.ForNode("host-z", true).String() {
		t.Fatalf("IPv6 tunnel: %q %q", n.Spec.IPv6VXLANTunnelAddr, n.Spec.VXLANTunnelMACAddrV6)
	}
	h.wantTunnelIPAM(a6, "host-z", "vxlan-v6-tunnel-addr-host-z", AttrTypeVXLANV6)
	if n.Spec.IPv4VXLANTunnelAddr != "" {
		t.Errorf("IPv4 tunnel address came back: %s", n.Spec.IPv4VXLANTunnelAddr)
	}
}

// TestTunnelAddressRepair: a Node address that IPAM does not hold, or that belongs to someone
// else, is replaced; the other owner's allocation is left alone.
func TestTunnelAddressRepair(t *testing.T) {
	h := newHarness(t, fixtureEnv(t), fixtureHost())
	s := h.startup()
	ctx := ctxT(t, 60*time.Second)
	if err := s.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	h.checkTunnel("host-z", pfx("10.65.0.0/16"))
	im := ipam.New(h.ds, testLogger(t))
	v4, _, err := im.AutoAssign(ctx, ipam.AutoAssignArgs{Num4: 1, HandleID: "net.container1", Hostname: "host-z",
		Attrs: map[string]string{"node": "host-z", "pod": "p1"}})
	if err != nil {
		t.Fatal(err)
	}
	workload := v4[0].Addr()
	for _, bogus := range []string{"10.65.200.1", workload.String()} {
		if err := s.updateNode(ctx, func(n *api.Node) (bool, error) { n.Spec.IPv4VXLANTunnelAddr = bogus; return true, nil }); err != nil {
			t.Fatal(err)
		}
		if err := s.ReconcileTunnels(ctx); err != nil {
			t.Fatal(err)
		}
		got := h.checkTunnel("host-z", pfx("10.65.0.0/16"))
		if got.String() == bogus {
			t.Errorf("kept %s", bogus)
		}
		if ips, err := im.IPsByHandle(ctx, VXLANHandle("host-z")); err != nil || len(ips) != 1 {
			t.Errorf("tunnel handle holds %v (%v), want exactly one address", ips, err)
		}
	}
	if attrs, handle, err := im.GetAssignmentAttributes(ctx, workload); err != nil || handle != "net.container1" || attrs["pod"] != "p1" {
		t.Errorf("the workload allocation was disturbed: %v %q %v", attrs, handle, err)
	}
}
