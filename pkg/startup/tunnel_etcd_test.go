package startup

import (
	"errors"
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/vxlan"
	"github.com/calico-host/calico-host/pkg/ipam"
)

func (h *harness) setPoolVXLAN(name, mode string) {
	h.t.Helper()
	ctx := ctxT(h.t, 10*time.Second)
	p, err := datastore.GetAs[*api.IPPool](ctx, h.ds, "", name)
	if err != nil {
		h.t.Fatal(err)
	}
	p.Spec.VXLANMode = mode
	if _, err := h.ds.Update(ctx, p); err != nil {
		h.t.Fatal(err)
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
	if n.Spec.VXLANTunnelMACAddr != vxlan.MACForNode(node, false).String() {
		h.t.Errorf("vxlanTunnelMACAddr %q, want %q", n.Spec.VXLANTunnelMACAddr, vxlan.MACForNode(node, false).String())
	}
	attrs, handle, err := ipam.New(h.ds, testLogger(h.t)).GetAssignmentAttributes(ctxT(h.t, 5*time.Second), a)
	want := map[string]string{AttrNode: node, AttrType: AttrTypeVXLAN}
	if err != nil || handle != VXLANHandle(node) || !reflect.DeepEqual(attrs, want) {
		h.t.Fatalf("IPAM for %s: attrs %v handle %q err %v", a, attrs, handle, err)
	}
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
	if err != nil || !pfx("fd5c:1::/48").Contains(a6) || n.Spec.VXLANTunnelMACAddrV6 != vxlan.MACForNode("host-z", true).String() {
		t.Fatalf("IPv6 tunnel: %q %q", n.Spec.IPv6VXLANTunnelAddr, n.Spec.VXLANTunnelMACAddrV6)
	}
	attrs, handle, err := ipam.New(h.ds, testLogger(t)).GetAssignmentAttributes(ctx, a6)
	if err != nil || handle != "vxlan-v6-tunnel-addr-host-z" || attrs[AttrType] != AttrTypeVXLANV6 {
		t.Fatalf("IPv6 tunnel in IPAM: %v %q %v", attrs, handle, err)
	}
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
