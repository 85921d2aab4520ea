package dataplane

import (
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/rules"
	"github.com/calico-host/calico-host/pkg/nft"
)

// TestKernelOverlappingSpoofPrefixes: an endpoint allowed to spoof two nested prefixes
// (workloadSourceSpoofing Any) is programmed: it sends from an address of the inner prefix and
// of the outer one only, a later deny is enforced and a workload added later is programmed.
// Before the set builder merged overlapping concatenated intervals, the kernel refused the
// anti-spoofing chain (EEXIST) and every apply failed.
func TestKernelOverlappingSpoofPrefixes(t *testing.T) {
	tp := newTopology(t)
	a := tp.addWorkload(t, "a", ifA, ipA)
	b := tp.addWorkload(t, "b", ifB, ipB)
	a.Exec(t, "ip", "addr", "add", "10.65.9.9/32", "dev", "eth0")
	a.Exec(t, "ip", "addr", "add", "10.65.200.1/32", "dev", "eth0")
	a.Exec(t, "ip", "addr", "add", "10.66.0.1/32", "dev", "eth0")
	srv := listenUDP(t, b, ipB, 5353)
	open := profile("open", []calc.Rule{allow()}, []calc.Rule{allow()})
	spoofer := wep("a", ifA, []string{ipA + "/32"}, withProfiles("open"))
	spoofer.Endpoint.AllowSpoofedSourcePrefixes = []netip.Prefix{pfx("10.65.0.0/16"), pfx("10.65.9.0/24"), pfx("10.65.9.9/32")}
	k := startDataplane(t, tp, Config{WorkloadSourceSpoofing: true}, open, spoofer,
		wep("b", ifB, []string{ipB + "/32"}, withProfiles("open")))
	k.requireProgrammed()
	for _, src := range []string{"10.65.9.9", "10.65.200.1"} {
		canUDP(t, a, src, ipB, 5353)
		if !srv.received(src) {
			t.Errorf("a packet from %s (an allowed spoofed source) did not reach B", src)
		}
	}
	canUDP(t, a, "10.66.0.1", ipB, 5353)
	if srv.received("10.66.0.1") {
		t.Error("a packet from 10.66.0.1 (outside the allowed prefixes) reached B")
	}

	// A later deny is enforced and a workload added later is programmed.
	deny := gnpID("deny-5353")
	c := tp.addWorkload(t, "c", "cali0000000000c", "10.65.0.3")
	listenTCP(t, c, "10.65.0.3", 8080)
	k.send(policy(deny, []calc.Rule{{Action: calc.RuleDeny, Protocol: 17, DstPorts: ports(5353)}, allow()}, nil),
		wep("b", ifB, []string{ipB + "/32"}, withProfiles("open"), withTiers(tier("default", ids(deny), nil))),
		wep("c", "cali0000000000c", []string{"10.65.0.3/32"}, withProfiles("open")))
	k.requireProgrammed()
	check(t, "after the overlapping prefixes",
		expectation{"a to b udp 5353 (denied later)", func() bool { return canUDP(t, a, ipA, ipB, 5353) }, false},
		expectation{"a to c (added later)", func() bool { return canTCP(t, a, "10.65.0.3", 8080) }, true})
}

// TestKernelOverlappingFailsafes: two failsafe entries with nested networks (one
// FelixConfiguration default would give every host) are programmed: the failsafe port is open
// from both networks' addresses and closed from elsewhere, and a later change is applied.
// Before the set builder merged overlapping concatenated intervals, the kernel refused the
// failsafe chain (EEXIST) and every apply failed.
func TestKernelOverlappingFailsafes(t *testing.T) {
	tp := newTopology(t)
	tp.fabric.Exec(t, "ip", "addr", "add", "198.19.0.2/24", "dev", "eth0")
	tp.host.Exec(t, "ip", "route", "add", "198.19.0.0/24", "dev", "eth0")
	for _, port := range []int{22, 7001, 7002} {
		listenTCP(t, tp.host, "0.0.0.0", port)
	}
	in := gnpID("host-in")
	hep := calc.HostEndpointUpdate{Endpoint: &calc.HostEndpoint{Name: "host1-eth0", InterfaceName: "eth0",
		Tiers: []calc.TierInfo{tier("default", ids(in), nil)}}}
	cfg := Config{FailsafeInbound: []rules.ProtoPort{
		{Protocol: nft.ProtoTCP, Port: 22, Net: pfx("198.18.0.0/16")},
		{Protocol: nft.ProtoTCP, Port: 22, Net: pfx("198.18.0.0/24")},
		{Protocol: nft.ProtoTCP, Port: 22, Net: pfx("198.18.0.2/32")},
	}, FailsafeOutbound: []rules.ProtoPort{}}
	toHost := func(port int) func() bool { return func() bool { return canTCP(t, tp.fabric, "198.18.0.1", port) } }
	fromOther := func(port int) func() bool {
		return func() bool {
			ok := false
			tp.fabric.Do(t, func() {
				d := net.Dialer{Timeout: 400 * time.Millisecond, LocalAddr: &net.TCPAddr{IP: net.ParseIP("198.19.0.2")}}
				if c, err := d.Dial("tcp", fmt.Sprintf("198.18.0.1:%d", port)); err == nil {
					ok = true
					c.Close()
				}
			})
			return ok
		}
	}
	k := startDataplane(t, tp, cfg, policy(in, []calc.Rule{{Action: calc.RuleAllow, Protocol: 6, DstPorts: ports(7001)}}, nil), hep)
	k.requireProgrammed()
	check(t, "overlapping failsafes",
		expectation{"in 22 from 198.18.0.2 (failsafe)", toHost(22), true},
		expectation{"in 22 from 198.19.0.2 (no failsafe)", fromOther(22), false},
		expectation{"in 7001 (policy)", toHost(7001), true},
		expectation{"in 7002", toHost(7002), false})
	k.send(policy(in, []calc.Rule{{Action: calc.RuleAllow, Protocol: 6, DstPorts: ports(7002)}}, nil))
	k.requireProgrammed()
	check(t, "a later policy change",
		expectation{"in 22 (failsafe)", toHost(22), true},
		expectation{"in 7001 (no longer allowed)", toHost(7001), false},
		expectation{"in 7002 (now allowed)", toHost(7002), true})
}
