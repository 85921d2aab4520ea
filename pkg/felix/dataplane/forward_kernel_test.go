package dataplane

import (
	"fmt"
	"testing"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/netnstest"
)

// Addresses of the forward test's IPv6 fabric link and workload (the IPv4 ones are the
// topology's: host 198.18.0.1, fabric 198.18.0.2, workload b 10.65.0.2).
const (
	fwdHost6, fwdFabric6, fwdB6 = "fd5c:ff::1", "fd5c:ff::2", "fd5c::b"
)

// forwardFamily is one IP family of TestKernelForwardPassOutOfLastTier: the host's and the
// fabric's addresses on eth0 and workload b's.
type forwardFamily struct {
	name              string
	host, fabric, wlB string
}

var forwardFamilies = []forwardFamily{
	{name: "IPv4", host: "198.18.0.1", fabric: "198.18.0.2", wlB: ipB},
	{name: "IPv6", host: fwdHost6, fabric: fwdFabric6, wlB: fwdB6},
}

// forwardTopology is the topology of TestKernelForwardPassOutOfLastTier: workload b (both
// families) behind the host, the fabric routing b's addresses through the host's eth0, and
// TCP listeners on ports 8080-8084 in b and in the fabric (forwarded traffic) and on the host
// (traffic to the host).
func forwardTopology(t *testing.T) (tp *topology, b *netnstest.NS) {
	tp = newTopology(t)
	tp.host.Exec(t, "sysctl", "-qw", "net.ipv6.conf.all.forwarding=1")
	for _, ns := range []*netnstest.NS{tp.host, tp.fabric} {
		ns.Exec(t, "sysctl", "-qw", "net.ipv6.conf.all.accept_dad=0", "net.ipv6.conf.eth0.accept_dad=0")
	}
	tp.host.Exec(t, "ip", "-6", "addr", "add", fwdHost6+"/64", "dev", "eth0", "nodad")
	tp.fabric.Exec(t, "ip", "-6", "addr", "add", fwdFabric6+"/64", "dev", "eth0", "nodad")
	b = tp.addWorkload(t, "b", ifB, ipB)
	tp.addWorkloadV6(t, "b", ifB, fwdB6)
	tp.fabric.Exec(t, "ip", "route", "add", ipB+"/32", "via", "198.18.0.1")
	tp.fabric.Exec(t, "ip", "-6", "route", "add", fwdB6+"/128", "via", fwdHost6)
	for _, f := range forwardFamilies {
		for port := 8080; port <= 8084; port++ {
			listenTCP(t, b, f.wlB, port)
			listenTCP(t, tp.fabric, f.fabric, port)
			listenTCP(t, tp.host, f.host, port)
		}
	}
	return tp, b
}

// passOutRules are the rules of the two tiers' policies, the same in both directions. Tier t1
// (default action Deny): ICMP and ICMPv6 pass (neighbour discovery of the host's own traffic
// on eth0); TCP 8080 and 8083 pass; TCP 8081 is denied; TCP 8082 matches nothing (end of tier
// drop). Tier t2 (default action Pass, the last tier): TCP 8083 passes by rule, 8080 by the
// tier's default action.
func passOutRules() (t1, t2 []calc.Rule) {
	tcp := func(action string, port uint16) calc.Rule {
		return calc.Rule{Action: action, Protocol: 6, DstPorts: ports(port)}
	}
	t1 = []calc.Rule{{Action: calc.RulePass, Protocol: 1}, {Action: calc.RulePass, Protocol: 58},
		tcp(calc.RulePass, 8080), tcp(calc.RulePass, 8083), tcp(calc.RuleDeny, 8081)}
	t2 = []calc.Rule{tcp(calc.RulePass, 8083), tcp(calc.RuleAllow, 9999)}
	return t1, t2
}

// TestKernelForwardPassOutOfLastTier: traffic forwarded through a host endpoint that is passed
// out of the last tier of its applyOnForward policy (by a Pass rule, or by a tier whose default
// action is Pass) is accepted, in both directions and both IP families, as in Project Calico,
// whose forward chains have no profiles and no "no profile matched" drop. A Deny rule and the
// end of a Deny tier still drop forwarded traffic. Traffic to the host itself that passes out
// of the same tiers (normal policy) meets the endpoint's profiles: dropped while no profile
// accepts it, accepted once one does.
func TestKernelForwardPassOutOfLastTier(t *testing.T) {
	tp, b := forwardTopology(t)
	p1, p2 := tierPolicyID("t1", "p"), tierPolicyID("t2", "p")
	r1, r2 := passOutRules()
	t1 := calc.TierInfo{Name: "t1", DefaultAction: "Deny", IngressPolicies: ids(p1), EgressPolicies: ids(p1)}
	t2 := calc.TierInfo{Name: "t2", DefaultAction: "Pass", IngressPolicies: ids(p2), EgressPolicies: ids(p2)}
	icmp := []calc.Rule{{Action: calc.RuleAllow, Protocol: 1}, {Action: calc.RuleAllow, Protocol: 58}}
	hep := &calc.HostEndpoint{Name: "host1-eth0", InterfaceName: "eth0", ProfileIDs: []string{"host"},
		Tiers: []calc.TierInfo{t1, t2}, ForwardTiers: []calc.TierInfo{t1, t2}}
	k := startDataplane(t, tp, Config{IPv6Support: true},
		policy(p1, r1, r1), policy(p2, r2, r2),
		profile("host", icmp, icmp), profile("open", []calc.Rule{allow()}, []calc.Rule{allow()}),
		wep("b", ifB, []string{ipB + "/32"}, withV6(fwdB6+"/128"), withProfiles("open")),
		calc.HostEndpointUpdate{Endpoint: hep})
	k.requireProgrammed()
	for _, f := range forwardFamilies {
		var exps []expectation
		for _, c := range []struct {
			port int
			why  string
			want bool
		}{
			{8080, "t1 Pass rule, t2 default Pass: passed out of the last tier", true},
			{8083, "t1 Pass rule, t2 Pass rule: passed out of the last tier", true},
			{8081, "t1 Deny rule", false},
			{8082, "no rule of t1 matches: end of tier drop", false},
		} {
			exps = append(exps,
				expectation{fmt.Sprintf("fabric to b, tcp %d (%s)", c.port, c.why), func() bool { return canTCP(t, tp.fabric, f.wlB, c.port) }, c.want},
				expectation{fmt.Sprintf("b to fabric, tcp %d (%s)", c.port, c.why), func() bool { return canTCP(t, b, f.fabric, c.port) }, c.want})
		}
		exps = append(exps, expectation{"fabric to the host, tcp 8080 (passed out of the last tier, no profile accepts)",
			func() bool { return canTCP(t, tp.fabric, f.host, 8080) }, false})
		check(t, f.name+" forwarded", exps...)
	}
	k.send(profile("host", append(icmp, calc.Rule{Action: calc.RuleAllow, Protocol: 6, DstPorts: ports(8080)}), icmp))
	for _, f := range forwardFamilies {
		check(t, f.name+" once the profile allows tcp 8080",
			expectation{"fabric to the host, tcp 8080", func() bool { return canTCP(t, tp.fabric, f.host, 8080) }, true},
			expectation{"fabric to the host, tcp 8083 (the profile does not accept it)", func() bool { return canTCP(t, tp.fabric, f.host, 8083) }, false})
	}
}
