package startup

import (
	"net/netip"
	"testing"
)

func TestChoosePoolCIDR(t *testing.T) {
	cases := []struct {
		name  string
		hosts []string
		want  string
	}{
		{"no overlap", []string{"198.18.0.2/24", "10.65.0.1/16"}, "192.168.0.0/16"},
		{"host inside 192.168/16", []string{"192.168.1.5/24"}, "172.16.0.0/16"},
		{"172.16 taken too", []string{"192.168.1.5/24", "172.16.9.9/24"}, "172.17.0.0/16"},
		{"everything taken", append([]string{"192.168.1.5/24"}, all172()...), "192.168.0.0/16"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var hosts []netip.Prefix
			for _, h := range tc.hosts {
				hosts = append(hosts, pfx(h))
			}
			got, err := choosePoolCIDR(V4, hosts)
			if err != nil || got != pfx(tc.want) {
				t.Errorf("got %s (%v), want %s", got, err, tc.want)
			}
		})
	}
	a, _ := choosePoolCIDR(V6, nil)
	b, _ := choosePoolCIDR(V6, nil)
	if a == b || a.Bits() != 48 || a.Addr().As16()[0] != 0xfd {
		t.Errorf("IPv6 pools must be random fdXX::/48: %s %s", a, b)
	}
}

func all172() []string {
	var out []string
	for i := 16; i <= 31; i++ {
		out = append(out, netip.AddrFrom4([4]byte{172, byte(i), 1, 1}).String()+"/24")
	}
	return out
}
