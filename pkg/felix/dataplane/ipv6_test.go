package dataplane

import (
	"slices"
	"strings"
	"testing"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/nft"
)

// TestGoldenIPv6Disabled: a dual-stack workload, an IPv6 pool and an IPv6 floating IP with
// IPv6Support false render no ip6 table (as Calico: IPv6 is neither policed nor NATed), and no
// IPv6 set, match or NAT in the ip table.
func TestGoldenIPv6Disabled(t *testing.T) {
	h := newHarness(t, Config{Hostname: "host1", FloatingIPs: true})
	h.up("cali11111111111")
	h.send(natAndFloatingIPs()...)
	dump := h.fake.Dump()
	checkGolden(t, "ipv6-disabled", dump)
	if got := h.fake.Tables(); !slices.Equal(got, []nft.TableID{{Family: nft.FamilyIP, Name: "calico"}}) {
		t.Errorf("tables %v, want only ip calico", got)
	}
	for _, line := range strings.Split(dump, "\n") {
		if strings.Contains(line, "ip6 ") || strings.Contains(line, "ipv6") || strings.Contains(line, "cali60") {
			t.Errorf("IPv6 in the ruleset although IPv6Support is false: %s", line)
		}
	}
}

// addWorkloadV6 gives a test workload an IPv6 address, with the host as its IPv6 gateway
// (fe80::1 on the host side of its interface) and a /128 route to it on the host.
func (tp *topology) addWorkloadV6(t *testing.T, name, iface, ip6 string) {
	w := tp.workloads[name]
	w.Exec(t, "ip", "-6", "addr", "add", ip6+"/128", "dev", "eth0", "nodad")
	w.Exec(t, "ip", "-6", "route", "add", "default", "via", "fe80::1", "dev", "eth0")
	tp.host.Exec(t, "ip", "-6", "addr", "add", "fe80::1/64", "dev", iface, "nodad")
	tp.host.Exec(t, "ip", "-6", "route", "add", ip6+"/128", "dev", iface)
}

// TestKernelIPv6Support pings between two dual-stack workloads. The destination's profile
// allows no ingress (deny all) in the first two cases: with IPv6Support false IPv6 is not
// policed and the ping gets through, while IPv4 stays denied; with IPv6Support true IPv6 is
// denied too. With an ingress-allow profile, IPv6 with IPv6Support true gets through, so the
// denial is policy and not broken plumbing.
func TestKernelIPv6Support(t *testing.T) {
	const ip6A, ip6B = "fd5c::a", "fd5c::b"
	for _, tc := range []struct {
		name        string
		ipv6        bool
		allowIn     bool
		ping6, ping bool
	}{
		{"IPv6Support false, deny all", false, false, true, false},
		{"IPv6Support true, deny all", true, false, false, false},
		{"IPv6Support true, allow", true, true, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tp := newTopology(t)
			tp.host.Exec(t, "sysctl", "-qw", "net.ipv6.conf.all.forwarding=1")
			a := tp.addWorkload(t, "a", ifA, ipA)
			tp.addWorkload(t, "b", ifB, ipB)
			tp.addWorkloadV6(t, "a", ifA, ip6A)
			tp.addWorkloadV6(t, "b", ifB, ip6B)
			var in []calc.Rule
			if tc.allowIn {
				in = []calc.Rule{allow()}
			}
			startDataplane(t, tp, Config{IPv6Support: tc.ipv6},
				profile("p", in, []calc.Rule{allow()}),
				wep("a", ifA, []string{ipA + "/32"}, withV6(ip6A+"/128"), withProfiles("p")),
				wep("b", ifB, []string{ipB + "/32"}, withV6(ip6B+"/128"), withProfiles("p")))
			check(t, tc.name,
				expectation{"ping6 A to B", func() bool { return canPing(t, a, ip6B) }, tc.ping6},
				expectation{"ping A to B", func() bool { return canPing(t, a, ipB) }, tc.ping})
		})
	}
}

// TestIPv6SupportKernelState: with IPv6Support false a dual-stack workload gets no IPv6 route
// and no IPv6 sysctls, and no IPv6 VXLAN device is made although calc reports an IPv6 tunnel
// address and VTEP; with IPv6Support true it gets all of them.
func TestIPv6SupportKernelState(t *testing.T) {
	ups := append(vxlanHosts(),
		calc.ConfigUpdate{HostIPv4: pfx("198.18.0.1/24"), HostIPv6: pfx("fd00::1/64"),
			VXLANTunnelAddrV4: addr("10.65.0.1"), VXLANTunnelAddrV6: addr("fd5c::1")},
		calc.IPPoolUpdate{Pool: &calc.IPPool{Name: "vx6", CIDR: pfx("fd5c::/48"), VXLANMode: "Always"}},
		calc.VTEPUpdate{VTEP: &calc.VTEP{Node: "host2", TunnelAddr: addr("fd5c:0:0:1::1"), ParentDeviceAddr: addr("fd00::2")}},
		wep("w1", "cali11111111111", []string{"10.65.0.9/32"}, withV6("fd5c::9/128")))
	for _, ipv6 := range []bool{false, true} {
		h := newHarness(t, Config{Hostname: "host1", IPv6Support: ipv6})
		h.up("cali11111111111")
		h.send(ups...)
		v6Routes := 0
		for _, r := range h.routes.routes() {
			if r.Dst.Addr().Is6() {
				v6Routes++
			}
		}
		var devs []string
		for _, d := range h.vxlan.devices() {
			devs = append(devs, d.Name)
		}
		h.ifaces.mu.Lock()
		sysctl6 := h.ifaces.ipv6["cali11111111111"]
		h.ifaces.mu.Unlock()
		if (v6Routes > 0) != ipv6 || sysctl6 != ipv6 || slices.Contains(devs, "vxlan-v6.calico") != ipv6 {
			t.Errorf("IPv6Support %t: %d IPv6 routes, IPv6 sysctls %t, VXLAN devices %v", ipv6, v6Routes, sysctl6, devs)
		}
	}
}
