package dataplane

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/rules"
	"github.com/calico-host/calico-host/pkg/netnstest"
)

// Workload interfaces and addresses of the kernel tests.
const (
	ifA, ipA = "cali0000000000a", "10.65.0.1"
	ifB, ipB = "cali0000000000b", "10.65.0.2"
)

// egressAll is the profile both test workloads use: all egress allowed, no ingress.
func egressAll() calc.Update { return profile("egress", nil, []calc.Rule{allow()}) }

func kwep(name, iface, ip string, tiers ...calc.TierInfo) calc.WorkloadEndpointUpdate {
	return wep(name, iface, []string{ip + "/32"}, withProfiles("egress"), withTiers(tiers...))
}

// TestKernelPolicy proves allow and deny for TCP, UDP and ICMP between two workloads, with IP
// sets, network sets, named ports, and Pass between tiers.
func TestKernelPolicy(t *testing.T) {
	tp := newTopology(t)
	a := tp.addWorkload(t, "a", ifA, ipA)
	b := tp.addWorkload(t, "b", ifB, ipB)
	listenTCP(t, b, ipB, 8080)
	listenTCP(t, b, ipB, 8081)
	listenUDP(t, b, ipB, 5353)
	web := gnpID("b-web")
	k := startDataplane(t, tp, Config{},
		ipset("s:a", ipA+"/32"),
		namedPortSet("n:http", 6, 8080, ipB+"/32"),
		policy(web, []calc.Rule{{Action: calc.RuleAllow, Protocol: 6, SrcIPSetIDs: []string{"s:a"}, DstNamedPortIPSetIDs: []string{"n:http"}}}, nil),
		egressAll(),
		kwep("a", ifA, ipA),
		kwep("b", ifB, ipB, tier("default", ids(web), nil)))
	tcp := func(port int) func() bool { return func() bool { return canTCP(t, a, ipB, port) } }
	udp := func() bool { return canUDP(t, a, "", ipB, 5353) }
	ping := func() bool { return canPing(t, a, ipB) }
	check(t, "named port from IP set",
		expectation{"tcp 8080", tcp(8080), true}, expectation{"tcp 8081", tcp(8081), false},
		expectation{"udp 5353", udp, false}, expectation{"ping", ping, false})

	udpPol, icmpPol := gnpID("b-udp"), gnpID("b-icmp")
	k.send(
		ipset("s:netset", "10.65.0.0/30"),
		policy(udpPol, []calc.Rule{{Action: calc.RuleAllow, Protocol: 17, SrcNets: []netip.Prefix{pfx("10.65.0.0/30")}, DstPorts: ports(5353)}}, nil),
		policy(icmpPol, []calc.Rule{{Action: calc.RuleAllow, Protocol: 1, SrcIPSetIDs: []string{"s:netset"}, ICMP: &calc.ICMPMatch{Type: 8}}}, nil),
		kwep("b", ifB, ipB, tier("default", ids(web, udpPol, icmpPol), nil)))
	check(t, "nets and network set",
		expectation{"tcp 8080", tcp(8080), true}, expectation{"tcp 8081", tcp(8081), false},
		expectation{"udp 5353", udp, true}, expectation{"ping", ping, true})

	// A first tier passes tcp 8081 to the default tier and denies tcp 8080; anything else
	// ends the first tier with its default drop.
	sec, allow8081 := tierPolicyID("security", "sec"), gnpID("b-8081")
	k.send(
		policy(sec, []calc.Rule{
			{Action: calc.RulePass, Protocol: 6, DstPorts: ports(8081)},
			{Action: calc.RuleDeny, Protocol: 6, DstPorts: ports(8080)},
		}, nil),
		policy(allow8081, []calc.Rule{{Action: calc.RuleAllow, Protocol: 6, DstPorts: ports(8081)}}, nil),
		kwep("b", ifB, ipB, tier("security", ids(sec), nil), tier("default", ids(web, udpPol, icmpPol, allow8081), nil)))
	check(t, "tiers",
		expectation{"tcp 8080", tcp(8080), false}, expectation{"tcp 8081", tcp(8081), true},
		expectation{"udp 5353", udp, false}, expectation{"ping", ping, false})
}

// TestKernelAntiSpoofing: a workload sending from an address that is not its own (here, the
// other workload's) is dropped; from its own address it gets through. Two interface prefixes:
// the workload interfaces are matched by one lookup of both.
func TestKernelAntiSpoofing(t *testing.T) {
	tp := newTopology(t)
	a := tp.addWorkload(t, "a", ifA, ipA)
	b := tp.addWorkload(t, "b", ifB, ipB)
	a.Exec(t, "ip", "addr", "add", "10.65.0.3/32", "dev", "eth0")
	tp.addWorkload(t, "c", "cali0000000000c", "10.65.0.3")
	srv := listenUDP(t, b, ipB, 5353)
	ni := &nsInterfaces{t: t, ns: tp.host}
	for _, iface := range []string{ifA, ifB, "cali0000000000c"} {
		if err := ni.ConfigureWorkload(iface, false); err != nil {
			t.Fatal(err)
		}
	}
	// Without the dataplane the forged packet reaches B (and B's answer goes to C).
	canUDP(t, a, "10.65.0.3", ipB, 5353)
	if !srv.received("10.65.0.3") {
		t.Fatal("setup: the forged packet does not reach B even without policy")
	}
	srv.reset()
	startDataplane(t, tp, Config{InterfacePrefixes: []string{"tap", "cali"}},
		profile("open", []calc.Rule{allow()}, []calc.Rule{allow()}),
		wep("a", ifA, []string{ipA + "/32"}, withProfiles("open")),
		wep("b", ifB, []string{ipB + "/32"}, withProfiles("open")),
		wep("c", "cali0000000000c", []string{"10.65.0.3/32"}, withProfiles("open")))
	if !canUDP(t, a, ipA, ipB, 5353) {
		t.Error("a packet from A's own address was dropped")
	}
	canUDP(t, a, "10.65.0.3", ipB, 5353)
	if srv.received("10.65.0.3") {
		t.Error("a packet with a forged source address reached B")
	}
}

// TestKernelWorkloadToHost: DefaultEndpointToHostAction decides what workloads may send to the
// host after their egress policy allowed it; host-to-workload traffic is not policed.
func TestKernelWorkloadToHost(t *testing.T) {
	for _, tc := range []struct {
		name   string
		action rules.Action
		want   bool
	}{{"Drop", rules.ActionDrop, false}, {"Return", rules.ActionReturn, true}, {"Accept", rules.ActionAccept, true}} {
		t.Run(tc.name, func(t *testing.T) {
			tp := newTopology(t)
			a := tp.addWorkload(t, "a", ifA, ipA)
			listenTCP(t, tp.host, "0.0.0.0", 9000)
			listenTCP(t, a, ipA, 9001)
			startDataplane(t, tp, Config{DefaultEndpointToHostAction: tc.action}, egressAll(), kwep("a", ifA, ipA))
			check(t, tc.name,
				expectation{"workload to host", func() bool { return canTCP(t, a, "198.18.0.1", 9000) }, tc.want},
				expectation{"host to workload", func() bool { return canTCP(t, tp.host, ipA, 9001) }, true})
		})
	}
}

// TestKernelNATOutgoing: traffic from a natOutgoing pool to the fabric (which has no route
// back to the pool) is masqueraded to the host's address; without the pool flag it is not.
func TestKernelNATOutgoing(t *testing.T) {
	tp := newTopology(t)
	a := tp.addWorkload(t, "a", ifA, ipA)
	srv := listenTCP(t, tp.fabric, "198.18.0.2", 7000)
	pool := func(nat bool) calc.Update {
		return calc.IPPoolUpdate{Pool: &calc.IPPool{Name: "pool1", CIDR: pfx("10.65.0.0/16"), NATOutgoing: nat}}
	}
	k := startDataplane(t, tp, Config{}, egressAll(), kwep("a", ifA, ipA), pool(false))
	if canTCP(t, a, "198.18.0.2", 7000) {
		t.Error("reached the fabric without NAT although it has no route back")
	}
	k.send(pool(true))
	if !canTCP(t, a, "198.18.0.2", 7000) {
		t.Fatal("NAT outgoing: cannot reach the fabric")
	}
	if p := srv.lastPeer(); p != "198.18.0.1" {
		t.Errorf("the fabric saw source %s, want the host's 198.18.0.1", p)
	}
	// Traffic between pool addresses is not NATed.
	b := tp.addWorkload(t, "b", ifB, ipB)
	srvB := listenTCP(t, b, ipB, 7001)
	k.send(profile("open-in", []calc.Rule{allow()}, nil), wep("b", ifB, []string{ipB + "/32"}, withProfiles("open-in")))
	k.waitUp("b")
	if !canTCP(t, a, ipB, 7001) || srvB.lastPeer() != ipA {
		t.Errorf("workload to workload: peer %q, want %s unNATed", srvB.lastPeer(), ipA)
	}
}

// TestKernelHostEndpoint: a host endpoint on eth0 allows what its policy allows, the failsafe
// ports always, and drops the rest, in both directions.
func TestKernelHostEndpoint(t *testing.T) {
	tp := newTopology(t)
	for _, port := range []int{22, 7001, 7002} {
		listenTCP(t, tp.host, "198.18.0.1", port)
	}
	for _, port := range []int{179, 7003} {
		listenTCP(t, tp.fabric, "198.18.0.2", port)
	}
	in := gnpID("host-in")
	hep := calc.HostEndpointUpdate{Endpoint: &calc.HostEndpoint{Name: "host1-eth0", InterfaceName: "eth0",
		Tiers: []calc.TierInfo{tier("default", ids(in), nil)}}}
	toHost := func(port int) func() bool { return func() bool { return canTCP(t, tp.fabric, "198.18.0.1", port) } }
	fromHost := func(port int) func() bool { return func() bool { return canTCP(t, tp.host, "198.18.0.2", port) } }
	check(t, "no dataplane", expectation{"in 7002", toHost(7002), true}, expectation{"out 7003", fromHost(7003), true})
	startDataplane(t, tp, Config{},
		policy(in, []calc.Rule{{Action: calc.RuleAllow, Protocol: 6, DstPorts: ports(7001)}}, nil), hep)
	check(t, "host endpoint",
		expectation{"in 7001 (policy)", toHost(7001), true},
		expectation{"in 22 (failsafe)", toHost(22), true},
		expectation{"in 7002", toHost(7002), false},
		expectation{"out 179 (failsafe)", fromHost(179), true},
		expectation{"out 7003", fromHost(7003), false})
}

// TestKernelEstablishedSurvivesPolicyChange: an open connection keeps working while unrelated
// policy changes are applied.
func TestKernelEstablishedSurvivesPolicyChange(t *testing.T) {
	tp := newTopology(t)
	a := tp.addWorkload(t, "a", ifA, ipA)
	b := tp.addWorkload(t, "b", ifB, ipB)
	listenTCP(t, b, ipB, 8080)
	web := gnpID("b-web")
	k := startDataplane(t, tp, Config{},
		policy(web, []calc.Rule{{Action: calc.RuleAllow, Protocol: 6, DstPorts: ports(8080)}}, nil),
		egressAll(), kwep("a", ifA, ipA), kwep("b", ifB, ipB, tier("default", ids(web), nil)))
	c, err := dialTCP(t, a, ipB, 8080)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := echo(c); err != nil {
		t.Fatalf("new connection: %v", err)
	}
	other := gnpID("unrelated")
	for i := range 5 {
		k.send(
			policy(other, []calc.Rule{{Action: calc.RuleDeny, Protocol: 17, DstPorts: ports(uint16(1000 + i))}}, nil),
			kwep("a", ifA, ipA, tier("default", ids(other), ids(other))),
			ipset("s:x", "10.65.9.0/24", "10.65.10."+string(rune('1'+i))+"/32"))
		if err := echo(c); err != nil {
			t.Fatalf("after change %d: %v", i, err)
		}
	}
}

// TestKernelDriftRepair: deleting the table, or one rule, in the namespace is repaired by the
// next refresh.
func TestKernelDriftRepair(t *testing.T) {
	tp := newTopology(t)
	a := tp.addWorkload(t, "a", ifA, ipA)
	b := tp.addWorkload(t, "b", ifB, ipB)
	listenTCP(t, b, ipB, 8080)
	web := gnpID("b-web")
	k := startDataplane(t, tp, Config{},
		policy(web, []calc.Rule{{Action: calc.RuleDeny, Protocol: 6, DstPorts: ports(8080)}}, nil),
		egressAll(), kwep("a", ifA, ipA), kwep("b", ifB, ipB, tier("default", ids(web), nil)))
	want := listRuleset(t, tp.host)
	if canTCP(t, a, ipB, 8080) {
		t.Fatal("policy not in force")
	}
	tp.host.Exec(t, "nft", "delete", "table", "ip", "calico")
	if !canTCP(t, a, ipB, 8080) {
		t.Fatal("setup: deleting the table did not remove the policy")
	}
	k.refresh()
	if got := listRuleset(t, tp.host); got != want {
		t.Errorf("after repairing a deleted table:\n%s\nwant:\n%s", got, want)
	}
	if canTCP(t, a, ipB, 8080) {
		t.Error("policy not restored")
	}
	handle := ruleHandle(t, tp.host, "filter-cali-pi-gnp/b-web", "drop")
	tp.host.Exec(t, "nft", "delete", "rule", "ip", "calico", "filter-cali-pi-gnp/b-web", "handle", handle)
	k.refresh()
	if got := listRuleset(t, tp.host); got != want {
		t.Errorf("after repairing a deleted rule:\n%s\nwant:\n%s", got, want)
	}
}

// TestKernelRestartIsDiffOnly: a new dataplane on a table a previous one programmed changes
// nothing when the desired state is the same (every rule keeps its handle: no window without
// rules), and only what differs otherwise.
func TestKernelRestartIsDiffOnly(t *testing.T) {
	tp := newTopology(t)
	tp.addWorkload(t, "a", ifA, ipA)
	tp.addWorkload(t, "b", ifB, ipB)
	ups := append(example19(), egressAll(), kwep("a", ifA, ipA), kwep("b", ifB, ipB, tier("default", ids(gnpID("allow-web")), nil)))
	k := startDataplane(t, tp, Config{}, ups...)
	before := handles(t, tp.host)
	k.stop()
	startDataplane(t, tp, Config{}, ups...)
	if after := handles(t, tp.host); after != before {
		t.Errorf("restart rewrote rules:\nbefore %s\nafter  %s", before, after)
	}
}

// refresh forces a full resync and waits for it.
func (k *kernelDP) refresh() {
	k.t.Helper()
	k.dp.nft.RequestFullSync()
	k.send()
}

// listRuleset is `nft list ruleset` without counters.
func listRuleset(t *testing.T, ns *netnstest.NS) string {
	t.Helper()
	return ns.Exec(t, "nft", "-s", "list", "ruleset")
}

// handles lists every rule handle of the ruleset, in order.
func handles(t *testing.T, ns *netnstest.NS) string {
	t.Helper()
	var out []string
	for _, l := range strings.Split(ns.Exec(t, "nft", "-a", "-s", "list", "ruleset"), "\n") {
		if i := strings.LastIndex(l, "# handle "); i >= 0 && !strings.Contains(l, "chain ") {
			out = append(out, l[i+len("# handle "):])
		}
	}
	return strings.Join(out, ",")
}

// ruleHandle finds the handle of the first rule of chain containing text.
func ruleHandle(t *testing.T, ns *netnstest.NS, chain, text string) string {
	t.Helper()
	for _, l := range strings.Split(ns.Exec(t, "nft", "-a", "list", "chain", "ip", "calico", chain), "\n") {
		if i := strings.LastIndex(l, "# handle "); i >= 0 && strings.Contains(l, text) {
			return l[i+len("# handle "):]
		}
	}
	t.Fatalf("no rule with %q in %s", text, chain)
	return ""
}

// TestKernelPolicyGroups: policies of one group act in order within their group chain: a deny
// before an allow wins, a pass skips the rest of the tier (later groups and the tier's other
// policies), an allow of a member kept out of line (in its own chain) ends the tier as an
// inline one does, and what no member decides meets the tier's drop. (Two interface prefixes:
// the workload interfaces are matched by one lookup of both.)
func TestKernelPolicyGroups(t *testing.T) {
	tp := newTopology(t)
	a := tp.addWorkload(t, "a", ifA, ipA)
	b := tp.addWorkload(t, "b", ifB, ipB)
	for port := 8080; port <= 8085; port++ {
		listenTCP(t, b, ipB, port)
	}
	s0, s1, s2, s3 := tierPolicyID("sec", "s0"), tierPolicyID("sec", "s1"), tierPolicyID("sec", "s2"), tierPolicyID("sec", "s3")
	d1 := gnpID("d1")
	s1Rules := []calc.Rule{
		{Action: calc.RuleDeny, Protocol: 6, DstPorts: ports(8081)},
		{Action: calc.RuleAllow, Protocol: 6, DstPorts: ports(8085)},
	}
	for port := range uint16(6) { // enough rules to keep s1 out of line in its two groups
		s1Rules = append(s1Rules, calc.Rule{Action: calc.RuleDeny, Protocol: 17, DstPorts: ports(9000 + port)})
	}
	startDataplane(t, tp, Config{InterfacePrefixes: []string{"tap", "cali"}},
		policySel(s0, "all()", []calc.Rule{{Action: calc.RuleDeny, Protocol: 17}}, nil),
		policySel(s1, "all()", s1Rules, nil),
		policySel(s2, "all()", []calc.Rule{{Action: calc.RulePass, Protocol: 6, DstPorts: ports(8082, 8083)}}, nil),
		policySel(s3, "all()", []calc.Rule{
			{Action: calc.RuleDeny, Protocol: 6, DstPorts: ports(8085)}, // after s1 allowed it: never reached
			{Action: calc.RuleAllow, Protocol: 6, DstPorts: ports(8080, 8081, 8082)},
		}, nil),
		policySel(d1, "all()", []calc.Rule{
			{Action: calc.RuleDeny, Protocol: 6, DstPorts: ports(8082)},
			{Action: calc.RuleAllow, Protocol: 6, DstPorts: ports(8083)},
		}, nil),
		egressAll(),
		kwep("a", ifA, ipA, tier("sec", ids(s0, s1), nil)),
		kwep("b", ifB, ipB, tier("sec", ids(s1, s2, s3), nil), tier("default", ids(d1), nil)))
	if rs := listRuleset(t, tp.host); !strings.Contains(rs, "jump filter-cali-pi-gnp/sec.s1") {
		t.Fatalf("s1 is not out of line:\n%s", rs)
	}
	tcp := func(port int) func() bool { return func() bool { return canTCP(t, a, ipB, port) } }
	check(t, "groups",
		expectation{"8080: allowed by a later member", tcp(8080), true},
		expectation{"8081: denied by an earlier member", tcp(8081), false},
		expectation{"8082: passed, then denied by the next tier", tcp(8082), false},
		expectation{"8083: passed, then allowed by the next tier", tcp(8083), true},
		expectation{"8084: no member decides: end of tier", tcp(8084), false},
		expectation{"8085: allowed by the out-of-line member", tcp(8085), true})
}

// TestKernelGroupSplitByProtocol: a group big enough, most of whose rules need UDP, sends UDP
// packets to a chain of their own and the others past the UDP rules; the verdicts stay those
// of the rules in order: UDP denied and allowed by member rules, TCP allowed by the last
// member, and the last member's deny of any protocol catches both.
func TestKernelGroupSplitByProtocol(t *testing.T) {
	tp := newTopology(t)
	a := tp.addWorkload(t, "a", ifA, ipA)
	b := tp.addWorkload(t, "b", ifB, ipB)
	for _, port := range []int{5353, 7003, 7777} {
		listenUDP(t, b, ipB, port)
	}
	listenTCP(t, b, ipB, 8080)
	listenTCP(t, b, ipB, 8081)
	var ups []calc.Update
	var pols []calc.PolicyID
	for i := range 20 {
		id := gnpID(fmt.Sprint("p", i))
		deny, allow := ports(uint16(6000+i)), ports(uint16(7000+i))
		if i == 7 {
			deny, allow = ports(5353), ports(7007, 5353)
		}
		ups = append(ups, policySel(id, "all()", []calc.Rule{
			{Action: calc.RuleDeny, Protocol: 17, DstPorts: deny},
			{Action: calc.RuleAllow, Protocol: 17, DstPorts: allow},
		}, nil))
		pols = append(pols, id)
	}
	last := gnpID("last")
	ups = append(ups, policySel(last, "all()", []calc.Rule{
		{Action: calc.RuleAllow, Protocol: 6, DstPorts: ports(8080)},
		{Action: calc.RuleDeny},
	}, nil), egressAll(), kwep("a", ifA, ipA), kwep("b", ifB, ipB, tier("default", append(pols, last), nil)))
	startDataplane(t, tp, Config{}, ups...)
	if rs := listRuleset(t, tp.host); !strings.Contains(rs, "meta l4proto udp goto filter-cali-gi-") {
		t.Fatalf("the group did not split:\n%s", rs)
	}
	udp := func(port int) func() bool { return func() bool { return canUDP(t, a, "", ipB, port) } }
	tcp := func(port int) func() bool { return func() bool { return canTCP(t, a, ipB, port) } }
	check(t, "split group",
		expectation{"udp 5353: denied by p7 before p7's allow", udp(5353), false},
		expectation{"udp 7003: allowed by p3", udp(7003), true},
		expectation{"udp 7777: no udp rule, the last deny", udp(7777), false},
		expectation{"tcp 8080: allowed by the last member", tcp(8080), true},
		expectation{"tcp 8081: the last deny", tcp(8081), false})
}

// TestKernelAddressRun: a group whose 20 policies each deny or allow one source address holds
// them in a run chain entered by one lookup of the addresses; real connections get the
// verdict of the run's rule for their source (a: allowed on every port, c: denied) and, from
// an address the run does not hold (d), the verdict of the policy after the run.
func TestKernelAddressRun(t *testing.T) {
	const ifC, ipC, ifD, ipD = "cali0000000000c", "10.65.0.3", "cali0000000000d", "10.65.0.4"
	tp := newTopology(t)
	a := tp.addWorkload(t, "a", ifA, ipA)
	b := tp.addWorkload(t, "b", ifB, ipB)
	c := tp.addWorkload(t, "c", ifC, ipC)
	d := tp.addWorkload(t, "d", ifD, ipD)
	listenTCP(t, b, ipB, 8080)
	listenTCP(t, b, ipB, 8081)
	var ups []calc.Update
	var pols []calc.PolicyID
	for i := range 20 {
		id := gnpID(fmt.Sprint("p", i))
		r := calc.Rule{Action: calc.RuleDeny, SrcNets: []netip.Prefix{netip.MustParsePrefix(fmt.Sprintf("203.0.113.%d/32", i))}}
		switch i {
		case 5:
			r = calc.Rule{Action: calc.RuleAllow, SrcNets: []netip.Prefix{netip.MustParsePrefix(ipA + "/32")}}
		case 12:
			r.SrcNets = []netip.Prefix{netip.MustParsePrefix(ipC + "/32")}
		}
		ups = append(ups, policySel(id, "all()", []calc.Rule{r}, nil))
		pols = append(pols, id)
	}
	last := gnpID("last")
	ups = append(ups, policySel(last, "all()", []calc.Rule{{Action: calc.RuleAllow, Protocol: 6, DstPorts: ports(8080)}}, nil),
		egressAll(), kwep("a", ifA, ipA), kwep("c", ifC, ipC), kwep("d", ifD, ipD),
		kwep("b", ifB, ipB, tier("default", append(pols, last), nil)))
	startDataplane(t, tp, Config{}, ups...)
	if rs := listRuleset(t, tp.host); !strings.Contains(rs, ":r0") {
		t.Fatalf("no address run chain:\n%s", rs)
	}
	tcp := func(from *netnstest.NS, port int) func() bool {
		return func() bool { return canTCP(t, from, ipB, port) }
	}
	check(t, "address run",
		expectation{"a to 8081: allowed by p5 in the run", tcp(a, 8081), true},
		expectation{"c to 8080: denied by p12 in the run", tcp(c, 8080), false},
		expectation{"d to 8080: not in the run, allowed by the last policy", tcp(d, 8080), true},
		expectation{"d to 8081: not in the run, end of tier", tcp(d, 8081), false})
}
