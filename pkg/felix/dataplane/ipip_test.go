package dataplane

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/ipip"
)

// ipipHosts: an IPIP pool (mode given), this host (198.18.0.1/24 on eth0, tunnel 10.65.0.1), a
// local block, a remote host in another subnet and one in this host's subnet.
func ipipHosts(mode string) []calc.Update {
	typ := calc.PoolIPIP
	if mode == "Never" {
		typ = calc.PoolNoEncap
	}
	route := func(dst, node, nodeIP string, rt calc.RouteType, same bool) calc.Update {
		return calc.RouteUpdate{Route: &calc.Route{Dst: pfx(dst), Type: rt, DstNode: node, DstNodeIP: addr(nodeIP),
			PoolName: "ip", PoolType: typ, VXLANMode: "Never", IPIPMode: mode, SameSubnet: same}}
	}
	return []calc.Update{
		calc.ConfigUpdate{HostIPv4: pfx("198.18.0.1/24"), IPIPTunnelAddr: addr("10.65.0.1")},
		calc.IPPoolUpdate{Pool: &calc.IPPool{Name: "ip", CIDR: pfx("10.65.0.0/16"), VXLANMode: "Never", IPIPMode: mode}},
		route("10.65.0.0/26", "host1", "198.18.0.1", calc.RouteLocalWorkload, true),
		route("10.65.1.0/26", "host2", "198.18.1.2", calc.RouteRemoteWorkload, false),
		route("10.65.2.0/26", "host3", "198.18.0.3", calc.RouteRemoteWorkload, true),
		route("10.65.2.9/32", "host4", "198.18.1.4", calc.RouteRemoteTunnel, false),
	}
}

func routeLines(h *harness) []string {
	var out []string
	for _, r := range h.routes.routes() {
		s := r.Dst.String()
		if r.Blackhole {
			out = append(out, "blackhole "+s)
			continue
		}
		if r.Gateway.IsValid() {
			s += " via " + r.Gateway.String()
		}
		s += " dev " + r.Dev
		if r.Onlink {
			s += " onlink"
		}
		if r.MTU != 0 {
			s += fmt.Sprintf(" mtu %d", r.MTU)
		}
		out = append(out, s)
	}
	return out
}

// TestIPIPDataplane: with an IPIP pool, the dataplane creates tunl0 (recorded requests) with this
// host's tunnel address and the host MTU less 20, and routes remote blocks via the owning host
// through tunl0 onlink with tunl0's MTU, as Project Calico's felix does (Always: all of them;
// CrossSubnet: those in other subnets, the others directly via the host, onlink, on the interface
// holding this host's address, without MTU); the local block gets a blackhole. IpInIpMtu and
// IpInIpTunnelAddr override; IpInIpEnabled false turns it off.
func TestIPIPDataplane(t *testing.T) {
	h := newHarness(t, Config{Hostname: "host1"})
	h.dp.model.applyIface(iface("eth0", true, pfx("198.18.0.1/24")))
	h.send(ipipHosts("Always")...)
	if d := cmp.Diff([]string{
		"link add tunl0 type ipip mtu 1480",
		"addr add 10.65.0.1/32 dev tunl0",
		"link set tunl0 up",
	}, h.ipip.Requests()); d != "" {
		t.Errorf("tunl0 requests (-want +got):\n%s", d)
	}
	want := []string{
		"blackhole 10.65.0.0/26",
		"10.65.1.0/26 via 198.18.1.2 dev tunl0 onlink mtu 1480",
		"10.65.2.0/26 via 198.18.0.3 dev tunl0 onlink mtu 1480",
		"10.65.2.9/32 via 198.18.1.4 dev tunl0 onlink mtu 1480",
	}
	if d := cmp.Diff(want, routeLines(h)); d != "" {
		t.Errorf("Always routes (-want +got):\n%s", d)
	}

	h.send(ipipHosts("CrossSubnet")...)
	want[2] = "10.65.2.0/26 via 198.18.0.3 dev eth0 onlink"
	if d := cmp.Diff(want, routeLines(h)); d != "" {
		t.Errorf("CrossSubnet routes (-want +got):\n%s", d)
	}
	if got := h.ipip.Requests(); len(got) != 0 {
		t.Errorf("an unchanged tunl0 was written: %v", got)
	}
	if h.dp.Problems() != "" {
		t.Errorf("problems with a working tunl0: %q", h.dp.Problems())
	}

	off := false
	h2 := newHarness(t, Config{Hostname: "host1", IPIPMTU: 1400, IPIPTunnelAddr: addr("10.65.0.7")})
	h2.send(ipipHosts("Always")...)
	if d := cmp.Diff([]string{"link add tunl0 type ipip mtu 1400", "addr add 10.65.0.7/32 dev tunl0", "link set tunl0 up"},
		h2.ipip.Requests()); d != "" {
		t.Errorf("configured tunl0 (-want +got):\n%s", d)
	}
	if got := routeLines(h2); len(got) != 4 || got[1] != "10.65.1.0/26 via 198.18.1.2 dev tunl0 onlink mtu 1400" {
		t.Errorf("routes through a tunl0 of IpInIpMtu 1400: %v", got)
	}
	h3 := newHarness(t, Config{Hostname: "host1", IPIPEnabled: &off})
	h3.send(ipipHosts("Always")...)
	if got := h3.ipip.Requests(); len(got) != 0 || len(routeLines(h3)) != 0 {
		t.Errorf("IpInIpEnabled false: requests %v routes %v", got, routeLines(h3))
	}
}

// TestIPIPNoDriver: when the kernel cannot create tunl0, no route goes through it (the
// same-subnet routes of CrossSubnet still do not need it), the dataplane reports the problem
// (Problems, for felix's status line) and the metric says "no ipip driver"; the apply itself
// succeeds, so policy keeps being programmed.
func TestIPIPNoDriver(t *testing.T) {
	h := newHarness(t, Config{Hostname: "host1"})
	h.ipip.NoDriver = true
	h.dp.model.applyIface(iface("eth0", true, pfx("198.18.0.1/24")))
	h.send(ipipHosts("CrossSubnet")...)
	if d := cmp.Diff([]string{"blackhole 10.65.0.0/26", "10.65.2.0/26 via 198.18.0.3 dev eth0 onlink"}, routeLines(h)); d != "" {
		t.Errorf("routes (-want +got):\n%s", d)
	}
	if p := h.dp.Problems(); !strings.Contains(p, "2 routes of IPIP pools not programmed") || !strings.Contains(p, "no ipip driver") {
		t.Errorf("problems %q", p)
	}
	if v := testutil.ToFloat64(h.dp.metrics.ipipState.WithLabelValues(ipip.StateNoDriver.String())); v != 1 {
		t.Errorf("felix_ipip_device_state{state=\"no ipip driver\"} = %v", v)
	}
	// The pool leaves IPIP: nothing is missing any more.
	h.send(ipipHosts("Never")...)
	if p := h.dp.Problems(); p != "" {
		t.Errorf("problems after IPIP went off: %q", p)
	}
}

// ipipHostsWithMetadata: ipipHosts (CrossSubnet) and the hosts' metadata (all-hosts-net).
func ipipHostsWithMetadata() []calc.Update {
	ups := ipipHosts("CrossSubnet")
	for i, a := range []string{"198.18.0.1/24", "198.18.1.2/24", "198.18.0.3/24", "198.18.1.4/24"} {
		ups = append(ups, calc.HostMetadataUpdate{Host: &calc.HostMetadata{Hostname: fmt.Sprintf("host%d", i+1), IPv4Addr: pfx(a)}})
	}
	return ups
}

// TestIPIPRules: with IPIP on, filter INPUT accepts IP-in-IP only from the hosts' addresses
// (all-hosts-net) to a local address and drops other IP-in-IP; filter OUTPUT lets IP-in-IP to
// the hosts through; without an IPIP pool there is no such rule or set (the full ruleset is in
// testdata/ipip.nft).
func TestIPIPRules(t *testing.T) {
	h := newHarness(t, Config{Hostname: "host1"})
	h.send(ipipHostsWithMetadata()...)
	dump := h.fake.Dump()
	for _, want := range []string{
		`meta l4proto ipencap ip saddr @cali40all-hosts-net fib daddr type local accept comment "Allow IPIP packets from Calico hosts"`,
		`meta l4proto ipencap counter drop comment "Drop IPIP packets from non-Calico hosts"`,
		`meta l4proto ipencap ip daddr @cali40all-hosts-net fib saddr type local accept comment "Allow IPIP packets to other Calico hosts"`,
		`elements = { 198.18.0.1, 198.18.0.3, 198.18.1.2, 198.18.1.4 }`,
	} {
		if !strings.Contains(dump, want) {
			t.Errorf("ruleset lacks %q", want)
		}
	}
	h.send(ipipHosts("Never")...)
	if dump := h.fake.Dump(); strings.Contains(dump, "ipencap") || strings.Contains(dump, "all-hosts-net") {
		t.Errorf("IPIP rules remain after IPIP went off")
	}
}
