package dataplane

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/calico-host/calico-host/pkg/felix/calc"
)

// TestLocalBGPPeerAddrsConfigurer: configuring a workload interface sets its host-side
// addresses to the endpoint's BGP peering addresses (none for other endpoints), again when they
// change; when the endpoint goes but the interface stays, they are cleared once.
func TestLocalBGPPeerAddrsConfigurer(t *testing.T) {
	h := newHarness(t, Config{Hostname: "host1", IPv6Support: true})
	h.up("cali1")
	h.up("cali2")
	id1 := calc.WorkloadEndpointID{OrchestratorID: "cni", WorkloadID: "ns/a", EndpointID: "eth0"}
	id2 := calc.WorkloadEndpointID{OrchestratorID: "cni", WorkloadID: "ns/b", EndpointID: "eth0"}
	peer := []netip.Addr{netip.MustParseAddr("169.254.0.179"), netip.MustParseAddr("fd5c::179")}
	wep := func(id calc.WorkloadEndpointID, name, ip string, addrs []netip.Addr) calc.Update {
		return calc.WorkloadEndpointUpdate{ID: id, Endpoint: &calc.WorkloadEndpoint{Name: name,
			IPv4Nets: []netip.Prefix{netip.MustParsePrefix(ip)}, LocalBGPPeer: "rr", LocalBGPPeerAddrs: addrs}}
	}
	check := func(step, iface string, want []netip.Addr, called bool) {
		t.Helper()
		got, ok := h.ifaces.hostAddrsOf(iface)
		if ok != called || !slices.Equal(got, want) {
			t.Errorf("%s: %s host addresses %v (set: %t), want %v (set: %t)", step, iface, got, ok, want, called)
		}
	}
	h.send(wep(id1, "cali1", "10.65.0.1/32", peer), wep(id2, "cali2", "10.65.0.2/32", nil))
	check("peer", "cali1", peer, true)
	check("not a peer, no address on the interface: the kernel is not asked", "cali2", nil, false)
	h.send(wep(id1, "cali1", "10.65.0.1/32", peer[:1]))
	check("IPv6 address cleared", "cali1", peer[:1], true)

	delete(h.ifaces.hostAddrs, "cali2")
	h.send(calc.WorkloadEndpointRemove{ID: id2})
	check("a non-peer endpoint removed: nothing to clear", "cali2", nil, false)
	h.send(calc.WorkloadEndpointRemove{ID: id1})
	check("peer endpoint removed", "cali1", nil, true)
	h.ifaces.hostAddrs["cali1"] = peer
	h.send()
	check("cleared only once", "cali1", peer, true)
}

// TestLocalBGPPeerAddrsFromMonitor: the kernel is asked to change a workload interface's host
// addresses only when the monitor shows an address to take off (or felix gave it addresses
// before); an interface with only the kernel's IPv6 link-local address is left alone.
func TestLocalBGPPeerAddrsFromMonitor(t *testing.T) {
	h := newHarness(t, Config{Hostname: "host1", IPv6Support: true})
	h.dp.model.applyIface(iface("cali3", true, pfx("169.254.0.9/32"), pfx("fe80::1/64")))
	h.dp.model.applyIface(iface("cali4", true, pfx("fe80::2/64")))
	h.send(wep("a", "cali3", []string{"10.65.0.3/32"}), wep("b", "cali4", []string{"10.65.0.4/32"}))
	if got, ok := h.ifaces.hostAddrsOf("cali3"); !ok || len(got) != 0 {
		t.Errorf("cali3 has a stray address: host addresses set to %v (set: %t), want none set", got, ok)
	}
	if got, ok := h.ifaces.hostAddrsOf("cali4"); ok {
		t.Errorf("cali4 has only its link-local address: host addresses set to %v", got)
	}
}
