package startup

import (
	"net/netip"
	"testing"
	"time"
)

func (h *harness) setWireguardKey(node, key string) {
	h.t.Helper()
	ctx := ctxT(h.t, 10*time.Second)
	n := h.node(node)
	n.Status.WireguardPublicKey = key
	if _, err := h.ds.Update(ctx, n); err != nil {
		h.t.Fatal(err)
	}
}

// TestWireguardTunnelAddressFollowsKey: the WireGuard tunnel address is allocated from any pool
// selecting the node (no encapsulation needed) once felix published a public key, under handle
// wireguard-tunnel-addr-<node> with Calico's attribute type, kept while the key stays, and
// released (spec.wireguard removed) when felix clears the key.
func TestWireguardTunnelAddressFollowsKey(t *testing.T) {
	env := fixtureEnv(t)
	env["CALICO_IPV4POOL_VXLAN"] = "Never"
	h := newHarness(t, env, fixtureHost())
	s := h.startup()
	ctx := ctxT(t, 60*time.Second)
	if err := s.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if n := h.node("host-z"); n.Spec.Wireguard != nil {
		t.Fatalf("a WireGuard address without a published key: %+v", n.Spec.Wireguard)
	}

	h.setWireguardKey("host-z", "bP3fO8v6iKd0fvUQ4m8wH8mYVyrbwAPe8FPxFvr0b1o=")
	if err := s.ReconcileTunnels(ctx); err != nil {
		t.Fatal(err)
	}
	n := h.node("host-z")
	if n.Spec.Wireguard == nil {
		t.Fatal("no spec.wireguard after the key was published")
	}
	a, err := netip.ParseAddr(n.Spec.Wireguard.InterfaceIPv4Address)
	if err != nil || !pfx("10.65.0.0/16").Contains(a) {
		t.Fatalf("interfaceIPv4Address %q", n.Spec.Wireguard.InterfaceIPv4Address)
	}
	if WireguardHandle("host-z") != "wireguard-tunnel-addr-host-z" {
		t.Errorf("WireGuard's handle %q", WireguardHandle("host-z"))
	}
	h.wantTunnelIPAM(a, "host-z", "wireguard-tunnel-addr-host-z", "wireguardTunnelAddress")
	if n.Spec.IPv4VXLANTunnelAddr != "" {
		t.Errorf("a VXLAN address came with WireGuard's: %s", n.Spec.IPv4VXLANTunnelAddr)
	}
	if err := s.ReconcileTunnels(ctx); err != nil {
		t.Fatal(err)
	}
	if again := h.node("host-z").Spec.Wireguard; again == nil || again.InterfaceIPv4Address != a.String() {
		t.Errorf("the WireGuard address changed: %+v", again)
	}

	h.setWireguardKey("host-z", "")
	if err := s.ReconcileTunnels(ctx); err != nil {
		t.Fatal(err)
	}
	if n := h.node("host-z"); n.Spec.Wireguard != nil {
		t.Errorf("spec.wireguard left after the key was cleared: %+v", n.Spec.Wireguard)
	}
	h.checkReleased(WireguardHandle("host-z"), a)
}

// TestWireguardHostEncryptionGivesNoAddress: in WireGuard host encryption mode
// (FELIX_WIREGUARDHOSTENCRYPTIONENABLED, as Project Calico's allocateip reads it) no WireGuard
// tunnel address of either family is allocated although both keys are published, and one
// allocated before the mode was turned on is released.
func TestWireguardHostEncryptionGivesNoAddress(t *testing.T) {
	env := fixtureEnv(t)
	env["CALICO_IPV4POOL_VXLAN"] = "Never"
	h := newHarness(t, env, fixtureHost())
	ctx := ctxT(t, 60*time.Second)
	if err := h.startup().RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	n := h.node("host-z")
	n.Status.WireguardPublicKey = "bP3fO8v6iKd0fvUQ4m8wH8mYVyrbwAPe8FPxFvr0b1o="
	n.Status.WireguardPublicKeyV6 = "cQ4gP9w7jLe1gwVR5n9xI9nZWzscxBQf9GQyGws1c2p="
	if _, err := h.ds.Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	if err := h.startup().ReconcileTunnels(ctx); err != nil {
		t.Fatal(err)
	}
	w := h.node("host-z").Spec.Wireguard
	if w == nil || w.InterfaceIPv4Address == "" || w.InterfaceIPv6Address == "" {
		t.Fatalf("without host encryption, both addresses: %+v", w)
	}

	env["FELIX_WIREGUARDHOSTENCRYPTIONENABLED"] = "true"
	s := h.startup()
	if !s.cfg.WireguardHostEncryption {
		t.Fatal("FELIX_WIREGUARDHOSTENCRYPTIONENABLED=true not read")
	}
	if err := s.ReconcileTunnels(ctx); err != nil {
		t.Fatal(err)
	}
	if w := h.node("host-z").Spec.Wireguard; w != nil {
		t.Errorf("host encryption mode: spec.wireguard %+v", w)
	}
	for _, handle := range []string{WireguardHandle("host-z"), "wireguard-v6-tunnel-addr-host-z"} {
		if h.handleExists(handle) {
			t.Errorf("handle %s survived", handle)
		}
	}
}
