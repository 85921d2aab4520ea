package dataplane

import "testing"

// TestWorkloadMTU: Project Calico's pod MTU is the smallest MTU of the enabled encapsulations,
// each configured or the host MTU less its overhead (IPIP 20, VXLAN 50, VXLAN IPv6 70,
// WireGuard 60, WireGuard IPv6 80), and the host MTU when none is on.
func TestWorkloadMTU(t *testing.T) {
	on := func(ipip, v4, v6 bool) encapsOn { return encapsOn{ipip: ipip, vxlanV4: v4, vxlanV6: v6} }
	for _, tc := range []struct {
		name string
		cfg  Config
		on   encapsOn
		want int
	}{
		{"nothing", Config{}, on(false, false, false), 1500},
		{"IPIP", Config{}, on(true, false, false), 1480},
		{"IPIP configured", Config{IPIPMTU: 1300}, on(true, false, false), 1300},
		{"IPIP configured but off", Config{IPIPMTU: 1300}, on(false, false, false), 1500},
		{"IPIP and VXLAN", Config{}, on(true, true, false), 1450},
		{"VXLAN both versions", Config{}, on(false, true, true), 1430},
		{"VXLAN configured above IPIP's", Config{VXLANMTU: 9000}, on(true, true, false), 1480},
		{"WireGuard", Config{Wireguard: WireguardConfig{Enabled: true}}, on(false, false, false), 1440},
		{"WireGuard IPv6", Config{IPv6Support: true, Wireguard: WireguardConfig{EnabledV6: true}}, on(false, false, false), 1420},
		{"WireGuard IPv6 without IPv6", Config{Wireguard: WireguardConfig{EnabledV6: true}}, on(false, false, false), 1500},
		{"WireGuard configured with IPIP", Config{Wireguard: WireguardConfig{Enabled: true, MTU: 1470}}, on(true, false, false), 1470},
		{"everything", Config{IPv6Support: true, Wireguard: WireguardConfig{Enabled: true, EnabledV6: true}}, on(true, true, true), 1420},
	} {
		if got := workloadMTU(tc.cfg, tc.on, 1500); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}
