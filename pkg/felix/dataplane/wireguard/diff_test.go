package wireguard

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
)

func mustKey(t *testing.T) wgtypes.Key {
	k, err := wgtypes.GeneratePrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestDiffDevice: an unchanged device sends nothing (replacing a peer would reset its session);
// a changed peer is updated alone with its allowed IPs replaced; a peer no longer wanted is
// removed; key, port and mark are set when they differ.
func TestDiffDevice(t *testing.T) {
	priv, p1, p2 := mustKey(t), mustKey(t).PublicKey(), mustKey(t).PublicKey()
	ep := netip.MustParseAddrPort("198.18.0.2:51820")
	want := &Device{Family: Family{Name: "wireguard.cali", Table: 1, RulePriority: 99, Mark: 0x200000},
		PrivateKey: priv, ListenPort: 51820, Keepalive: 25 * time.Second,
		Peers: []Peer{{Node: "b", PublicKey: p1, Endpoint: ep, AllowedIPs: []netip.Prefix{netip.MustParsePrefix("10.65.1.0/26")}}}}
	_, block, _ := net.ParseCIDR("10.65.1.0/26")
	cur := &wgtypes.Device{PrivateKey: priv, ListenPort: 51820, FirewallMark: 0x200000, Peers: []wgtypes.Peer{
		{PublicKey: p1, Endpoint: net.UDPAddrFromAddrPort(ep), PersistentKeepaliveInterval: 25 * time.Second, AllowedIPs: []net.IPNet{*block}}}}
	if cfg, changed := diffDevice(cur, want); changed {
		t.Errorf("unchanged device produced %+v", cfg)
	}
	cur.Peers = append(cur.Peers, wgtypes.Peer{PublicKey: p2})
	cur.Peers[0].AllowedIPs = nil
	cur.ListenPort, cur.FirewallMark = 1, 0
	cfg, changed := diffDevice(cur, want)
	if !changed || cfg.ReplacePeers || len(cfg.Peers) != 2 || cfg.PrivateKey != nil || *cfg.ListenPort != 51820 || *cfg.FirewallMark != 0x200000 {
		t.Fatalf("diff = %+v", cfg)
	}
	if up := cfg.Peers[0]; up.PublicKey != p1 || !up.ReplaceAllowedIPs || len(up.AllowedIPs) != 1 || up.Remove {
		t.Errorf("update = %+v", up)
	}
	if rm := cfg.Peers[1]; rm.PublicKey != p2 || !rm.Remove {
		t.Errorf("removal = %+v", rm)
	}
}

func TestValidateRefusesBadDevices(t *testing.T) {
	ok := Device{Family: Family{Name: "wireguard.cali", Table: 1, RulePriority: 99, Mark: 0x200000}, ListenPort: 51820}
	if err := ok.validate(); err != nil {
		t.Fatal(err)
	}
	for name, mut := range map[string]func(d *Device){
		"long name":   func(d *Device) { d.Name = "a-very-long-interface" },
		"port":        func(d *Device) { d.ListenPort = 0 },
		"no mark":     func(d *Device) { d.Mark = 0 },
		"table 254":   func(d *Device) { d.Table = 254 },
		"tiny MTU":    func(d *Device) { d.MTU = 100 },
		"v6 endpoint": func(d *Device) { d.Peers = []Peer{{Node: "b", Endpoint: netip.MustParseAddrPort("[fd5c::1]:51820")}} },
		"v6 allowed": func(d *Device) {
			d.Peers = []Peer{{Node: "b", Endpoint: netip.MustParseAddrPort("198.18.0.2:51820"), AllowedIPs: []netip.Prefix{netip.MustParsePrefix("fd5c::/64")}}}
		},
	} {
		d := ok
		mut(&d)
		if d.validate() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
