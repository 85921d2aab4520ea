package sim_test

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/sim"
)

// The unit tests' host: eth0 198.18.0.1/24 (default route), workloads
// 10.65.0.2 on cali1 and 10.65.0.3 on cali2.
var (
	lo    = sim.Iface{Name: "lo", Index: 1, Type: unix.ARPHRD_LOOPBACK}
	eth0  = sim.Iface{Name: "eth0", Index: 2, Type: unix.ARPHRD_ETHER}
	cali1 = sim.Iface{Name: "cali1", Index: 3, Type: unix.ARPHRD_ETHER}
	cali2 = sim.Iface{Name: "cali2", Index: 4, Type: unix.ARPHRD_ETHER}
)

func a(s string) netip.Addr   { return netip.MustParseAddr(s) }
func p(s string) netip.Prefix { return netip.MustParsePrefix(s) }

func testFIB() *sim.StaticFIB {
	return &sim.StaticFIB{
		Loopback: lo, Forward: true,
		Addrs: []sim.IfaceAddr{{Iface: eth0, Prefix: p("198.18.0.1/24")}, {Iface: lo, Prefix: p("127.0.0.1/8")}},
		Routes: []sim.StaticRoute{
			{Dst: p("0.0.0.0/0"), Iface: eth0, Gateway: a("198.18.0.2")},
			{Dst: p("10.65.0.2/32"), Iface: cali1},
			{Dst: p("10.65.0.3/32"), Iface: cali2},
		},
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func base(typ nft.ChainType, h nft.Hook, prio int32, pol nft.Policy) *nft.BaseChain {
	return &nft.BaseChain{Type: typ, Hook: h, Priority: prio, Policy: pol}
}

func rule(x ...nft.Expr) nft.Rule { return nft.NewRule(x...) }

// newTable builds a table of chains and sets.
func newTable(t testing.TB, f nft.Family, chains []*nft.Chain, sets ...*nft.Set) *nft.Table {
	t.Helper()
	tb := nft.NewTable(f, "t")
	for _, s := range sets {
		must(t, tb.PutSet(s))
	}
	for _, c := range chains {
		must(t, tb.PutChain(c))
	}
	must(t, tb.Validate())
	return tb
}

func tcp(t testing.TB, src, dst string, sport, dport uint16) sim.Packet {
	t.Helper()
	pk, err := sim.IPPacket(sim.IPSpec{Src: a(src), Dst: a(dst), Proto: nft.ProtoTCP, SPort: sport, DPort: dport})
	must(t, err)
	return pk
}

func run(t testing.TB, rs *sim.Ruleset, pk sim.Packet, iif *sim.Iface) *sim.Result {
	t.Helper()
	res, err := rs.Run(sim.Input{Packet: pk, IIF: iif, CT: sim.Conntrack{State: nft.CTStateNew}, FIB: testFIB()})
	must(t, err)
	return res
}

// path renders the steps compactly: "kind chain#rule verdict".
func path(res *sim.Result) string {
	var out []string
	for _, s := range res.Steps() {
		out = append(out, fmt.Sprintf("%s %s#%d %s", s.Kind, s.Chain, s.Rule, s.Verdict))
	}
	return strings.Join(out, ", ")
}

func compile(t testing.TB, tables ...*nft.Table) *sim.Ruleset {
	t.Helper()
	rs, err := sim.Compile(tables...)
	must(t, err)
	return rs
}

func TestIntervalSetNegatedLookupAndPolicy(t *testing.T) {
	nets := &nft.Set{Name: "nets", Type: nft.TypeIPv4Addr, Interval: true,
		Elements: []nft.Element{nft.PrefixElem(p("10.65.0.0/24")), nft.PrefixElem(p("198.18.0.128/25"))}}
	in := &nft.Chain{Name: "in", Base: base(nft.ChainFilter, nft.HookInput, 0, nft.PolicyDrop), Rules: []nft.Rule{
		rule(nft.SAddrInSet(nft.IPv4, "nets"), nft.DPort(nft.ProtoTCP, nft.Port(80)), nft.Counter(), nft.Accept()).WithComment("web"),
		rule(nft.Not(nft.SAddrInSet(nft.IPv4, "nets")), nft.Log("other: "), nft.Drop()),
	}}
	rs := compile(t, newTable(t, nft.FamilyIP, []*nft.Chain{in}, nets))
	for _, c := range []struct {
		src   string
		dport uint16
		path  string
		fate  sim.Fate
	}{
		{"10.65.0.7", 80, "rule in#0 accept", sim.FateDelivered},
		{"10.65.1.7", 80, "rule in#1 drop", sim.FateDropped},
		{"198.18.0.200", 81, "return in#-1 continue, policy in#-1 drop", sim.FateDropped},
		{"198.18.0.127", 80, "rule in#1 drop", sim.FateDropped},
	} {
		res := run(t, rs, tcp(t, c.src, "198.18.0.1", 1000, c.dport), &eth0)
		if got := path(res); got != c.path || res.Fate != c.fate {
			t.Errorf("%s:%d: path %q fate %s, want %q %s", c.src, c.dport, got, res.Fate, c.path, c.fate)
		}
	}
	res := run(t, rs, tcp(t, "10.65.0.7", "198.18.0.1", 1000, 80), &eth0)
	if s := res.Steps()[0]; s.Comment != "web" || s.Counters != 1 {
		t.Errorf("step %+v: want comment web and one counter", s)
	}
	res = run(t, rs, tcp(t, "10.65.1.7", "198.18.0.1", 1000, 80), &eth0)
	if s := res.Steps()[0]; len(s.Logs) != 1 || s.Logs[0].Prefix != "other: " {
		t.Errorf("step %+v: want the log prefix", s)
	}
}

func TestJumpGotoReturnAndImplicitReturn(t *testing.T) {
	chains := []*nft.Chain{
		{Name: "in", Base: base(nft.ChainFilter, nft.HookInput, 0, nft.PolicyDrop), Rules: []nft.Rule{
			rule(nft.Jump("a")),
			rule(nft.Counter(), nft.Accept()),
		}},
		{Name: "a", Rules: []nft.Rule{
			rule(nft.SAddr(nft.Host(a("10.65.0.2"))), nft.Goto("b")),
			rule(nft.DPort(nft.ProtoTCP, nft.Port(22)), nft.Return()),
			rule(nft.Counter()),
		}},
		{Name: "b", Rules: []nft.Rule{rule(nft.DPort(nft.ProtoTCP, nft.Port(23)), nft.Drop())}},
	}
	rs := compile(t, newTable(t, nft.FamilyIP, chains))
	for _, c := range []struct {
		src   string
		dport uint16
		path  string
	}{
		{"10.65.0.2", 23, "rule in#0 jump a, rule a#0 goto b, rule b#0 drop"},
		{"10.65.0.2", 80, "rule in#0 jump a, rule a#0 goto b, return b#-1 continue, rule in#1 accept"},
		{"10.65.0.9", 22, "rule in#0 jump a, return a#1 return, rule in#1 accept"},
		{"10.65.0.9", 80, "rule in#0 jump a, rule a#2 continue, return a#-1 continue, rule in#1 accept"},
	} {
		res := run(t, rs, tcp(t, c.src, "198.18.0.1", 1000, c.dport), &eth0)
		if got := path(res); got != c.path {
			t.Errorf("%s:%d: path %q, want %q", c.src, c.dport, got, c.path)
		}
	}
}

func TestVerdictMapAndInterfaces(t *testing.T) {
	m := &nft.Map{Name: "dispatch", Type: nft.TypeIfname, Elements: map[nft.Key]nft.Verdict{
		nft.IfnameKey("cali1"): nft.Goto("from-cali1"),
	}}
	tb := nft.NewTable(nft.FamilyIP, "t")
	for _, c := range []*nft.Chain{
		{Name: "fwd", Base: base(nft.ChainFilter, nft.HookForward, 0, ""), Rules: []nft.Rule{
			rule(nft.IIFNameVmap("dispatch")),
			rule(nft.OIFName("cali*"), nft.Counter()),
		}},
		{Name: "from-cali1", Rules: []nft.Rule{rule(nft.Drop())}},
		{Name: "post", Base: base(nft.ChainFilter, nft.HookPostrouting, 0, ""), Rules: []nft.Rule{
			rule(nft.IIFName("eth0"), nft.Counter()), // a forwarded packet's input interface
		}},
	} {
		must(t, tb.PutChain(c))
	}
	must(t, tb.PutMap(m))
	rs := compile(t, tb)
	res := run(t, rs, tcp(t, "10.65.0.2", "10.65.0.3", 1000, 80), &cali1)
	if got, want := path(res), "rule fwd#0 goto from-cali1, rule from-cali1#0 drop"; got != want || res.Fate != sim.FateDropped {
		t.Errorf("from cali1: %q %s, want %q dropped", got, res.Fate, want)
	}
	res = run(t, rs, tcp(t, "198.18.0.9", "10.65.0.3", 1000, 80), &eth0)
	want := "rule fwd#1 continue, return fwd#-1 continue, policy fwd#-1 accept, rule post#0 continue, return post#-1 continue, policy post#-1 accept"
	if got := path(res); got != want || res.Fate != sim.FateSent || res.OIF != "cali2" {
		t.Errorf("from eth0: %q %s via %s, want %q sent via cali2", got, res.Fate, res.OIF, want)
	}
	if hs := res.Hooks; len(hs) != 3 || hs[1].IIF != "eth0" || hs[1].OIF != "cali2" || hs[2].IIF != "eth0" {
		t.Errorf("hooks %+v: want prerouting, forward and postrouting from eth0 to cali2", hs)
	}
	res = run(t, rs, tcp(t, "198.18.0.1", "10.65.0.3", 1000, 80), nil)
	if hs := res.Hooks; len(hs) != 2 || hs[1].IIF != "" || strings.Contains(path(res), "post#0") {
		t.Errorf("sent by the host: hooks %+v, want output and postrouting without an input interface", hs)
	}
}

func TestMarkSetSeenByLaterChains(t *testing.T) {
	chains := []*nft.Chain{
		{Name: "mangle", Base: base(nft.ChainFilter, nft.HookPrerouting, nft.PriorityMangle, ""), Rules: []nft.Rule{
			rule(nft.IIFName("eth0"), nft.OrMark(0x10)),
			rule(nft.MarkMasked(0x10, 0x10), nft.AndMark(0xffff00ff)),
		}},
		{Name: "in", Base: base(nft.ChainFilter, nft.HookInput, 0, nft.PolicyDrop), Rules: []nft.Rule{
			rule(nft.MarkMasked(0xff10, 0x10), nft.Accept()),
		}},
	}
	rs := compile(t, newTable(t, nft.FamilyIP, chains))
	res, err := rs.Run(sim.Input{Packet: tcp(t, "198.18.0.9", "198.18.0.1", 1, 2), IIF: &eth0, Mark: 0x1200,
		CT: sim.Conntrack{State: nft.CTStateNew}, FIB: testFIB()})
	must(t, err)
	if res.Fate != sim.FateDelivered || res.Mark != 0x10 {
		t.Errorf("fate %s mark %#x, want delivered with mark 0x10\n%s", res.Fate, res.Mark, res)
	}
	if eff := res.Steps()[0].Effects; !slices.Equal(eff, []string{"mark 0x00001200 -> 0x00001210"}) {
		t.Errorf("effects %q", eff)
	}
}

func TestConcatenatedSets(t *testing.T) {
	np := &nft.Set{Name: "np", Type: nft.Concat(nft.TypeIPv4Addr, nft.TypeInetProto, nft.TypeInetService),
		Elements: []nft.Element{nft.ConcatElem(nft.AddrElem(a("198.18.0.1")), nft.ProtoKey(nft.ProtoTCP).Elem(), nft.PortElem(8080))}}
	spoof := nft.InList([]nft.Field{nft.FieldIIFName, nft.FieldSAddr(nft.IPv4)},
		nft.ConcatElem(nft.IfnameElem("cali1"), nft.PrefixElem(p("10.65.7.0/24"))),
		nft.ConcatElem(nft.IfnamePrefixElem("tap"), nft.PrefixElem(p("10.66.0.0/16"))))
	in := &nft.Chain{Name: "in", Base: base(nft.ChainFilter, nft.HookInput, 0, nft.PolicyDrop), Rules: []nft.Rule{
		rule(nft.InSet("np", nft.FieldDAddr(nft.IPv4), nft.FieldL4Proto, nft.FieldDPort(0)), nft.Accept()),
		rule(spoof, nft.Accept()),
	}}
	rs := compile(t, newTable(t, nft.FamilyIP, []*nft.Chain{in}, np))
	tap := sim.Iface{Name: "tap9", Index: 9}
	for _, c := range []struct {
		src   string
		iif   *sim.Iface
		dport uint16
		fate  sim.Fate
	}{
		{"198.18.0.9", &eth0, 8080, sim.FateDelivered},
		{"198.18.0.9", &eth0, 8081, sim.FateDropped},
		{"10.65.7.3", &cali1, 1, sim.FateDelivered},
		{"10.65.8.3", &cali1, 1, sim.FateDropped},
		{"10.66.200.3", &tap, 1, sim.FateDelivered},
		{"10.65.7.3", &tap, 1, sim.FateDropped}, // each field in its own range
	} {
		if res := run(t, rs, tcp(t, c.src, "198.18.0.1", 1, c.dport), c.iif); res.Fate != c.fate {
			t.Errorf("%s on %s to port %d: %s, want %s\n%s", c.src, c.iif.Name, c.dport, res.Fate, c.fate, res)
		}
	}
}

func TestConntrackBeforeAndAfterItsHook(t *testing.T) {
	chains := []*nft.Chain{
		{Name: "raw", Base: base(nft.ChainFilter, nft.HookPrerouting, nft.PriorityRaw, ""), Rules: []nft.Rule{
			rule(nft.CTStateIn(nft.CTStateInvalid), nft.Counter()),
			rule(nft.Not(nft.CTStatusIn(nft.CTStatusDNAT)), nft.Counter()), // no connection yet: no match
		}},
		{Name: "mangle", Base: base(nft.ChainFilter, nft.HookPrerouting, nft.PriorityMangle, ""), Rules: []nft.Rule{
			rule(nft.CTStateIn(nft.CTStateNew), nft.Counter()),
			rule(nft.Not(nft.CTStatusIn(nft.CTStatusDNAT)), nft.Counter()),
		}},
	}
	rs := compile(t, newTable(t, nft.FamilyIP, chains))
	res := run(t, rs, tcp(t, "198.18.0.9", "198.18.0.1", 1, 2), &eth0)
	want := "rule raw#0 continue, return raw#-1 continue, policy raw#-1 accept, " +
		"rule mangle#0 continue, rule mangle#1 continue, return mangle#-1 continue, policy mangle#-1 accept"
	if got := path(res); got != want {
		t.Errorf("path %q, want %q", got, want)
	}
}

func TestNotrackSkipsConntrackAndNAT(t *testing.T) {
	chains := []*nft.Chain{
		{Name: "raw", Base: base(nft.ChainFilter, nft.HookPrerouting, nft.PriorityRaw, ""), Rules: []nft.Rule{
			rule(nft.DPort(nft.ProtoTCP, nft.Port(53)), nft.Notrack()),
		}},
		{Name: "nat", Base: base(nft.ChainNAT, nft.HookPrerouting, nft.PriorityDstNAT, ""), Rules: []nft.Rule{
			rule(nft.DNAT(a("10.65.0.2"))),
		}},
		{Name: "in", Base: base(nft.ChainFilter, nft.HookInput, 0, nft.PolicyDrop), Rules: []nft.Rule{
			rule(nft.CTStateIn(nft.CTStateUntracked), nft.Accept()),
		}},
	}
	rs := compile(t, newTable(t, nft.FamilyIP, chains))
	res := run(t, rs, tcp(t, "198.18.0.9", "198.18.0.1", 1, 53), &eth0)
	if res.Fate != sim.FateDelivered || strings.Contains(path(res), "nat") {
		t.Errorf("untracked: want delivered without the nat chain\n%s", res)
	}
	res = run(t, rs, tcp(t, "198.18.0.9", "198.18.0.1", 1, 54), &eth0)
	if res.Fate != sim.FateSent || res.OIF != "cali1" {
		t.Errorf("tracked: want DNATed to cali1\n%s", res)
	}
}

func TestDNATRoutesAndSetsStatus(t *testing.T) {
	chains := []*nft.Chain{
		{Name: "nat", Base: base(nft.ChainNAT, nft.HookPrerouting, nft.PriorityDstNAT, ""), Rules: []nft.Rule{
			rule(nft.DAddr(nft.Host(a("198.18.0.1"))), nft.DPort(nft.ProtoTCP, nft.Port(8080)), nft.DNATToPort(a("10.65.0.2"), 80)),
		}},
		{Name: "nat2", Base: base(nft.ChainNAT, nft.HookPrerouting, 10, ""), Rules: []nft.Rule{rule(nft.Counter())}},
		{Name: "fwd", Base: base(nft.ChainFilter, nft.HookForward, 0, nft.PolicyDrop), Rules: []nft.Rule{
			rule(nft.CTStatusIn(nft.CTStatusDNAT), nft.DAddr(nft.Host(a("10.65.0.2"))), nft.DPort(nft.ProtoTCP, nft.Port(80)), nft.Accept()),
		}},
	}
	rs := compile(t, newTable(t, nft.FamilyIP, chains))
	res := run(t, rs, tcp(t, "198.18.0.9", "198.18.0.1", 1000, 8080), &eth0)
	if res.Fate != sim.FateSent || res.OIF != "cali1" {
		t.Fatalf("want forwarded to cali1\n%s", res)
	}
	if strings.Contains(path(res), "nat2") {
		t.Errorf("the nat chain after the one that set the NAT up ran\n%s", res)
	}
	want := tcp(t, "198.18.0.9", "10.65.0.2", 1000, 80)
	if got := res.Packet.Network; string(got[12:20]) != string(want.Network[12:20]) || string(got[20:24]) != string(want.Network[20:24]) {
		t.Errorf("packet after NAT % x, want addresses and ports of % x", got[:24], want.Network[:24])
	}
	// Not the port: the NAT chains see nothing, the second one counts.
	res = run(t, rs, tcp(t, "198.18.0.9", "198.18.0.1", 1000, 22), &eth0)
	if !strings.Contains(path(res), "rule nat2#0 continue") || res.Fate != sim.FateDelivered {
		t.Errorf("want both nat chains and delivery\n%s", res)
	}
}

func TestNATChosenPortIsUnknown(t *testing.T) {
	chains := []*nft.Chain{
		{Name: "nat", Base: base(nft.ChainNAT, nft.HookPostrouting, nft.PrioritySrcNAT, ""), Rules: []nft.Rule{
			rule(nft.MasqueradeFullyRandom()),
		}},
		{Name: "late", Base: base(nft.ChainFilter, nft.HookPostrouting, 200, ""), Rules: []nft.Rule{
			rule(nft.SAddr(nft.Host(a("198.18.0.1"))), nft.Counter()),
			rule(nft.SPort(nft.ProtoTCP, nft.Port(1000)), nft.Counter()),
		}},
	}
	rs := compile(t, newTable(t, nft.FamilyIP, chains))
	_, err := rs.Run(sim.Input{Packet: tcp(t, "10.65.0.2", "8.8.8.8", 1000, 53), IIF: &cali1,
		CT: sim.Conntrack{State: nft.CTStateNew}, FIB: testFIB()})
	if err == nil || !strings.Contains(err.Error(), "chain late rule 1") || !strings.Contains(err.Error(), "not known") {
		t.Errorf("reading the port a fully-random masquerade chose: err %v, want an error naming chain late rule 1", err)
	}
}

func TestReversePathFilter(t *testing.T) {
	chains := []*nft.Chain{{Name: "raw", Base: base(nft.ChainFilter, nft.HookPrerouting, nft.PriorityRaw, ""), Rules: []nft.Rule{
		rule(nft.IIFName("cali*"), nft.FibNoRoute(nft.FibSAddr|nft.FibMark|nft.FibIIF), nft.Drop()),
	}}}
	rs := compile(t, newTable(t, nft.FamilyIP, chains))
	if res := run(t, rs, tcp(t, "10.65.0.2", "198.18.0.1", 1, 2), &cali1); res.Fate != sim.FateDelivered {
		t.Errorf("own address: %s", res)
	}
	if res := run(t, rs, tcp(t, "10.65.0.3", "198.18.0.1", 1, 2), &cali1); res.Fate != sim.FateDropped {
		t.Errorf("spoofed address: %s", res)
	}
}

func TestLocalPacketsAndLoopback(t *testing.T) {
	chains := []*nft.Chain{
		{Name: "out", Base: base(nft.ChainFilter, nft.HookOutput, 0, ""), Rules: []nft.Rule{rule(nft.OIFName("eth0"), nft.Counter())}},
		{Name: "in", Base: base(nft.ChainFilter, nft.HookInput, 0, nft.PolicyDrop), Rules: []nft.Rule{
			rule(nft.IIFName("lo"), nft.FibAddrType(nft.FibDAddr, nft.AddrTypeLocal), nft.Accept()),
		}},
	}
	rs := compile(t, newTable(t, nft.FamilyIP, chains))
	res := run(t, rs, tcp(t, "198.18.0.1", "198.18.0.9", 1, 2), nil)
	if res.Fate != sim.FateSent || res.OIF != "eth0" || !strings.Contains(path(res), "rule out#0 continue") {
		t.Errorf("to the fabric: %s", res)
	}
	res = run(t, rs, tcp(t, "198.18.0.1", "198.18.0.1", 1, 2), nil)
	var hooks []nft.Hook
	for _, h := range res.Hooks {
		hooks = append(hooks, h.Hook)
	}
	wantHooks := []nft.Hook{nft.HookOutput, nft.HookPostrouting, nft.HookPrerouting, nft.HookInput}
	if res.Fate != sim.FateDelivered || !slices.Equal(hooks, wantHooks) {
		t.Errorf("to itself: hooks %v, want %v delivered\n%s", hooks, wantHooks, res)
	}
}

func TestInetTablesAndIPv6(t *testing.T) {
	in := &nft.Chain{Name: "in", Base: base(nft.ChainFilter, nft.HookInput, 0, nft.PolicyDrop), Rules: []nft.Rule{
		rule(nft.SAddr(p("fd5c::/64")), nft.ICMPType(nft.IPv6, 128), nft.Accept()),
		rule(nft.SAddr(p("10.65.0.0/16")), nft.Accept()),
	}}
	rs := compile(t, newTable(t, nft.FamilyInet, []*nft.Chain{in}))
	fib := testFIB()
	fib.Addrs = append(fib.Addrs, sim.IfaceAddr{Iface: eth0, Prefix: p("fd5c::1/64")})
	for _, c := range []struct {
		src, dst string
		proto    uint8
		fate     sim.Fate
	}{
		{"fd5c::9", "fd5c::1", nft.ProtoICMPv6, sim.FateDelivered},
		{"fd5d::9", "fd5c::1", nft.ProtoICMPv6, sim.FateDropped},
		{"10.65.3.4", "198.18.0.1", nft.ProtoUDP, sim.FateDelivered},
	} {
		pk, err := sim.IPPacket(sim.IPSpec{Src: a(c.src), Dst: a(c.dst), Proto: c.proto, SPort: 1, DPort: 2})
		must(t, err)
		res, err := rs.Run(sim.Input{Packet: pk, IIF: &eth0, CT: sim.Conntrack{State: nft.CTStateNew}, FIB: fib})
		must(t, err)
		if res.Fate != c.fate {
			t.Errorf("%s -> %s: %s, want %s\n%s", c.src, c.dst, res.Fate, c.fate, res)
		}
	}
}

func TestRefusals(t *testing.T) {
	same := newTable(t, nft.FamilyIP, []*nft.Chain{
		{Name: "a", Base: base(nft.ChainFilter, nft.HookInput, 0, "")},
		{Name: "b", Base: base(nft.ChainFilter, nft.HookInput, 0, "")},
	})
	if _, err := sim.Compile(same); err == nil || !strings.Contains(err.Error(), "same priority") {
		t.Errorf("two base chains of one table at one priority: err %v", err)
	}
	ct := newTable(t, nft.FamilyIP, []*nft.Chain{{Name: "a", Base: base(nft.ChainFilter, nft.HookPrerouting, -200, "")}})
	if _, err := sim.Compile(ct); err == nil || !strings.Contains(err.Error(), "conntrack") {
		t.Errorf("a chain at conntrack's priority: err %v", err)
	}
	other := newTable(t, nft.FamilyIP, []*nft.Chain{{Name: "b", Base: base(nft.ChainFilter, nft.HookInput, 0, nft.PolicyDrop)}})
	if _, err := sim.Compile(newTable(t, nft.FamilyIP, []*nft.Chain{{Name: "a", Base: base(nft.ChainFilter, nft.HookInput, 0, "")}}), other); err != nil {
		t.Errorf("chains of two tables at one priority run in argument order: %v", err)
	}
	br := nft.NewTable(nft.FamilyBridge, "br")
	if _, err := sim.Compile(br); err == nil || !strings.Contains(err.Error(), "bridge") {
		t.Errorf("bridge table: err %v", err)
	}
	fibOIF := newTable(t, nft.FamilyIP, []*nft.Chain{{Name: "pre", Base: base(nft.ChainFilter, nft.HookPrerouting, 0, ""), Rules: []nft.Rule{
		rule(nft.Counter()),
		rule(nft.FibAddrType(nft.FibSAddr|nft.FibOIF, nft.AddrTypeLocal), nft.Drop()),
	}}})
	_, err := compile(t, fibOIF).Run(sim.Input{Packet: tcp(t, "198.18.0.9", "198.18.0.1", 1, 2), IIF: &eth0,
		CT: sim.Conntrack{State: nft.CTStateNew}, FIB: testFIB()})
	if err == nil || !strings.Contains(err.Error(), `table ip t chain pre rule 1`) {
		t.Errorf("fib oif in prerouting: err %v, want one naming the table, chain and rule", err)
	}
	withExt := sim.Packet{Proto: unix.ETH_P_IPV6, Network: make([]byte, 48)}
	withExt.Network[0], withExt.Network[5], withExt.Network[6] = 0x60, 8, unix.IPPROTO_HOPOPTS
	if _, err := compile(t, other).Run(sim.Input{Packet: withExt, IIF: &eth0, CT: sim.Conntrack{State: nft.CTStateNew}, FIB: testFIB()}); err == nil {
		t.Error("an IPv6 packet with an extension header was simulated")
	}
}

// A forwarded packet loses one TTL before forward (its header checksum
// stays right); one with TTL 1 is not forwarded.
func TestForwardDecreasesTTL(t *testing.T) {
	fwd := &nft.Chain{Name: "fwd", Base: base(nft.ChainFilter, nft.HookForward, 0, ""), Rules: []nft.Rule{rule(nft.Counter())}}
	rs := compile(t, newTable(t, nft.FamilyInet, []*nft.Chain{fwd}))
	for _, c := range []struct {
		src, dst string
		ttl      uint8
		fate     sim.Fate
	}{
		{"198.18.0.9", "10.65.0.2", 64, sim.FateSent}, {"198.18.0.9", "10.65.0.2", 1, sim.FateTTLExceeded},
	} {
		pk, err := sim.IPPacket(sim.IPSpec{Src: a(c.src), Dst: a(c.dst), Proto: nft.ProtoUDP, TTL: c.ttl})
		must(t, err)
		res, err := rs.Run(sim.Input{Packet: pk, IIF: &eth0, CT: sim.Conntrack{State: nft.CTStateNew}, FIB: testFIB()})
		must(t, err)
		if res.Fate != c.fate {
			t.Errorf("TTL %d: %s, want %s", c.ttl, res.Fate, c.fate)
		}
		if c.fate != sim.FateSent {
			continue
		}
		want, err := sim.IPPacket(sim.IPSpec{Src: a(c.src), Dst: a(c.dst), Proto: nft.ProtoUDP, TTL: c.ttl - 1})
		must(t, err)
		if got := res.Packet.Network; string(got) != string(want.Network) {
			t.Errorf("forwarded packet % x, want % x", got[:20], want.Network[:20])
		}
	}
}

func TestStaticFIB(t *testing.T) {
	f := testFIB()
	f.Addrs = append(f.Addrs, sim.IfaceAddr{Iface: eth0, Prefix: p("fd5c::1/64")})
	for _, c := range []struct {
		addr string
		dev  *sim.Iface
		want nft.AddrType
	}{
		{"198.18.0.1", nil, nft.AddrTypeLocal}, {"198.18.0.1", &cali1, nft.AddrTypeUnicast}, {"198.18.0.255", nil, nft.AddrTypeBroadcast},
		{"10.65.0.2", nil, nft.AddrTypeUnicast}, {"fd5c::1", nil, nft.AddrTypeLocal}, {"fd5d::1", nil, nft.AddrTypeUnreach},
	} {
		if got := f.AddrType(a(c.addr), c.dev); got != c.want {
			t.Errorf("AddrType(%s) = %s, want %s", c.addr, got, c.want)
		}
	}
	if r, ok := f.Route(sim.RouteQuery{Dst: a("198.18.0.1")}); !ok || r.Type != nft.AddrTypeLocal || r.OIFs[0] != lo || r.Src != a("198.18.0.1") {
		t.Errorf("local route %+v", r)
	}
	if r, ok := f.Route(sim.RouteQuery{Dst: a("8.8.8.8")}); !ok || r.OIFs[0] != eth0 || r.Src != a("198.18.0.1") {
		t.Errorf("default route %+v", r)
	}
	f.Forward = false
	if _, ok := f.Route(sim.RouteQuery{Dst: a("10.65.0.2"), Input: true, IIF: &eth0}); ok {
		t.Error("a host that does not forward routed a received packet")
	}
}
