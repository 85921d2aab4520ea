package dataplane

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/wireguard"
)

func testKey(t *testing.T) wgtypes.Key {
	t.Helper()
	k, err := wgtypes.GeneratePrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	return k.PublicKey()
}

// wgTableModel: this host (a) with a block, a borrowed address inside it and one outside it;
// b, a peer; c without a key; d and e publishing the same key; f with a route but no Node; g a
// peer with nothing routed to it.
func wgTableModel(t *testing.T) (*model, Config, wgtypes.Key) {
	m := newModel()
	pfx := netip.MustParsePrefix
	shared := testKey(t)
	host := func(name, addr, key, wgAddr string) {
		h := &calc.HostMetadata{Hostname: name, IPv4Addr: pfx(addr + "/24"), WireguardPublicKey: key}
		if wgAddr != "" {
			h.WireguardAddrV4 = netip.MustParseAddr(wgAddr)
		}
		m.hosts[name] = h
	}
	host("a", "198.18.0.1", testKey(t).String(), "10.65.0.1")
	host("b", "198.18.0.2", testKey(t).String(), "10.65.1.1")
	host("c", "198.18.0.3", "", "")
	host("d", "198.18.0.4", shared.String(), "")
	host("e", "198.18.0.5", shared.String(), "")
	host("g", "198.18.0.7", testKey(t).String(), "") // nothing routed to it: a peer without allowed IPs
	route := func(dst, node string, typ calc.RouteType) {
		m.routes[pfx(dst)] = &calc.Route{Dst: pfx(dst), DstNode: node, Type: typ}
	}
	route("10.65.0.0/26", "a", calc.RouteLocalWorkload)
	route("10.65.0.9/32", "a", calc.RouteLocalWorkload)  // inside the local block: no route of its own
	route("10.65.99.7/32", "a", calc.RouteLocalWorkload) // borrowed from elsewhere: thrown
	route("10.65.1.0/26", "b", calc.RouteRemoteWorkload)
	route("10.65.2.0/26", "c", calc.RouteRemoteWorkload)
	route("10.65.4.0/26", "d", calc.RouteRemoteWorkload)
	route("10.65.5.0/26", "e", calc.RouteRemoteWorkload)
	route("10.65.6.0/26", "f", calc.RouteRemoteWorkload)
	route("fd5c:1::/122", "b", calc.RouteRemoteWorkload) // the other family: not in this table
	m.weps[calc.WorkloadEndpointID{EndpointID: "w1"}] = &calc.WorkloadEndpoint{Name: "cali1",
		IPv4Nets: []netip.Prefix{pfx("10.65.0.5/32"), pfx("10.65.98.1/32"), pfx("10.65.99.7/32")}}
	cfg := FelixDefaults(Config{Hostname: "a", Wireguard: WireguardConfig{Enabled: true, RoutingTable: 7}})
	return m, cfg, shared
}

// TestWireguardTableContents: felix's WireGuard table routes peers' prefixes through the device
// and throws this host's workloads and non-peers' prefixes back to the main table, as Project
// Calico's table does; hosts sharing a key are not peers.
func TestWireguardTableContents(t *testing.T) {
	m, cfg, shared := wgTableModel(t)
	f := cfg.wgFamilies()[0]
	dev, dups := wgDevice(cfg, m, f, wgtypes.Key{1}, 1500)
	if got := dups[shared]; !slices.Equal(got, []string{"d", "e"}) || len(dups) != 1 {
		t.Errorf("shared keys %v, want d and e sharing one key", dups)
	}
	if peerNodes(dev) != "b g" || len(peerOf(dev, "g").AllowedIPs) != 0 {
		t.Fatalf("peers %+v, want b, and g without allowed IPs", dev.Peers)
	}
	var got []string
	for _, r := range wireguardRoutes([]wireguard.Device{dev}) {
		got = append(got, r.String())
	}
	want := []string{
		"10.65.1.0/26 dev " + f.Name + " table 7 scope link",
		"10.65.1.1/32 dev " + f.Name + " table 7 scope link",
		"throw 10.65.0.0/26 table 7",
		"throw 10.65.2.0/26 table 7",
		"throw 10.65.4.0/26 table 7",
		"throw 10.65.5.0/26 table 7",
		"throw 10.65.6.0/26 table 7",
		"throw 10.65.98.1/32 table 7",
		"throw 10.65.99.7/32 table 7",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("WireGuard table\n got %s\nwant %s", strings.Join(got, "\n    "), strings.Join(want, "\n    "))
	}
}

// TestWireguardSharedKeyLoggedOnce: the shared key is logged with both nodes, once while it
// stays shared, and again after it was resolved and came back.
func TestWireguardSharedKeyLoggedOnce(t *testing.T) {
	m, cfg, _ := wgTableModel(t)
	var buf strings.Builder
	d := &Dataplane{cfg: cfg, model: m, log: zerolog.New(&buf)}
	d.wireguardDevices()
	d.wireguardDevices()
	if n := strings.Count(buf.String(), "more than one node"); n != 1 || !strings.Contains(buf.String(), `"nodes":["d","e"]`) {
		t.Fatalf("log %s: want one line naming d and e", buf.String())
	}
	m.hosts["e"].WireguardPublicKey = testKey(t).String()
	d.wireguardDevices()
	m.hosts["e"].WireguardPublicKey = m.hosts["d"].WireguardPublicKey
	d.wireguardDevices()
	if n := strings.Count(buf.String(), "more than one node"); n != 2 {
		t.Errorf("log %s: want a second line after the key was shared again", buf.String())
	}
}

// TestWireguardHostEncryptionTable: with host encryption the hosts' own addresses join the
// peers' allowed IPs and the table (thrown for hosts that are not peers), and a host without a
// tunnel address gives the device its own address.
func TestWireguardHostEncryptionTable(t *testing.T) {
	m, cfg, _ := wgTableModel(t)
	cfg.Wireguard.HostEncryption = true
	m.hosts["a"].WireguardAddrV4 = netip.Addr{}
	dev, _ := wgDevice(cfg, m, cfg.wgFamilies()[0], wgtypes.Key{1}, 1500)
	if dev.Addr != netip.MustParseAddr("198.18.0.1") {
		t.Errorf("device address %v, want the host's 198.18.0.1", dev.Addr)
	}
	if !slices.Contains(peerOf(dev, "b").AllowedIPs, netip.MustParsePrefix("198.18.0.2/32")) ||
		!slices.Equal(peerOf(dev, "g").AllowedIPs, []netip.Prefix{netip.MustParsePrefix("198.18.0.7/32")}) {
		t.Errorf("peers %+v, want b and g with their host addresses", dev.Peers)
	}
	for _, h := range []string{"198.18.0.3/32", "198.18.0.4/32", "198.18.0.5/32"} {
		if !slices.Contains(dev.Throw, netip.MustParsePrefix(h)) {
			t.Errorf("throw routes %v lack %s (a host that is not a peer)", dev.Throw, h)
		}
	}
	if slices.Contains(dev.Throw, netip.MustParsePrefix("198.18.0.1/32")) {
		t.Errorf("throw routes %v include this host's own address", dev.Throw)
	}
	rc, err := cfg.rulesConfig()
	if err != nil || rc.WireguardHostMark != 0x200000 {
		t.Errorf("rules config host mark %#x (%v), want the WireGuard mark 0x200000", rc.WireguardHostMark, err)
	}
}

func peerNodes(d wireguard.Device) string {
	var names []string
	for _, p := range d.Peers {
		names = append(names, p.Node)
	}
	slices.Sort(names)
	return strings.Join(names, " ")
}

func peerOf(d wireguard.Device, node string) wireguard.Peer {
	for _, p := range d.Peers {
		if p.Node == node {
			return p
		}
	}
	return wireguard.Peer{}
}
