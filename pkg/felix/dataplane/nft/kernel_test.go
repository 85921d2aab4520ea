package nft

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// allPrimitivesRuleset uses every primitive, each in a chain reachable from
// a base chain whose hook the primitive is valid in, so that the kernel
// validates all of them.
func allPrimitivesRuleset() *Ruleset {
	mac, _ := net.ParseMAC("aa:bb:cc:dd:ee:ff")
	pfx := netip.MustParsePrefix
	rs := NewRuleset()
	rs.AddSet(&Set{Name: "s4", Type: TypeIPv4Addr, Interval: true, Elements: []string{"10.65.0.0/16", "10.66.1.5", "10.67.0.1-10.67.0.9"}})
	rs.AddSet(&Set{Name: "s6", Type: TypeIPv6Addr, Interval: true, Elements: []string{"fd5c::/16", "fd5d::1"}})
	rs.AddSet(&Set{Name: "all4", Type: TypeIPv4Addr, Interval: true, Elements: []string{"0.0.0.0/0"}})
	rs.AddSet(&Set{Name: "top6", Type: TypeIPv6Addr, Interval: true, Elements: []string{"ffff::/16", "::1"}})
	rs.AddSet(&Set{Name: "ports", Type: TypeInetService, Interval: true, Elements: []string{"80", "81", "8000-8080"}})
	rs.AddSet(&Set{Name: "ifs", Type: TypeIfname, Elements: []string{"cali1", `"eth0"`}})
	rs.AddSet(&Set{Name: "np", Type: Concat(TypeIPv4Addr, TypeInetProto, TypeInetService), Elements: []string{"10.65.1.5 . tcp . 80"}})
	rs.AddSet(&Set{Name: "marks", Type: TypeMark, Elements: []string{"0x1"}})
	rs.AddSet(&Set{Name: "macs", Type: TypeEtherAddr, Elements: []string{"aa:bb:cc:dd:ee:ff"}})
	rs.AddSet(&Set{Name: "protos", Type: TypeInetProto, Elements: []string{"tcp", "4"}})
	rs.AddMap(&Map{Name: "vm", KeyType: TypeIfname, Elements: map[string]Verdict{"cali1": Goto("wl-1"), "cali2": Jump("wl-1")}})
	rs.AddChain(&Chain{Name: "wl-1", Rules: []Rule{NewRule(Counter(), Drop())}})
	rs.AddChain(&Chain{Name: "filter-FORWARD", Base: &BaseChain{Type: TypeFilter, Hook: HookForward, Priority: PriorityFilter},
		Rules: []Rule{NewRule(Jump("all-filter"))}})
	rs.AddChain(&Chain{Name: "all-filter", Rules: []Rule{
		NewRule(IIFName("cali1"), Counter(), Accept()),
		NewRule(IIFName("cali*"), Drop()),
		NewRule(IIFNameInSet("ifs"), Return()),
		NewRule(Not(OIFNameInSet("ifs")), Jump("wl-1")),
		NewRule(L4Proto(ProtoTCP), Accept()),
		NewRule(Not(L4Proto(ProtoUDP)), Accept()),
		NewRule(SAddr(pfx("10.65.0.5/32")), DAddr(pfx("10.65.0.0/16")), Accept()),
		NewRule(SAddr(pfx("fd5c::1/128")), Not(DAddr(pfx("fd5c::/16"))), Accept()),
		NewRule(DAddr(pfx("10.64.0.0/10")), Accept()),
		NewRule(SAddrInSet(IPv4, "s4"), Drop()),
		NewRule(Not(DAddrInSet(IPv4, "s4")), Drop()),
		NewRule(SAddrInSet(IPv6, "s6"), Drop()),
		NewRule(DAddrInSet(IPv4, "all4"), Drop()),
		NewRule(DAddrInSet(IPv6, "top6"), Drop()),
		NewRule(InSet("ports", FieldDPort(ProtoTCP)), Accept()),
		NewRule(DPort(ProtoTCP, Port(80)), Accept()),
		NewRule(SPort(ProtoUDP, Ports(1000, 2000)), Accept()),
		NewRule(DPort(ProtoSCTP, Port(80), Port(443), Ports(1000, 2000)), Accept()),
		NewRule(Not(DPort(ProtoUDPLite, Port(80), Port(443))), Accept()),
		NewRule(Not(SPort(ProtoTCP, Ports(1000, 2000))), Accept()),
		NewRule(Not(DPort(ProtoTCP, Port(22))), Accept()),
		NewRule(InSet("np", FieldDAddr(IPv4), FieldL4Proto, FieldDPort(0)), Accept()),
		NewRule(InSet("protos", FieldL4Proto), Accept()),
		NewRule(InSet("marks", FieldMark), Accept()),
		NewRule(ICMPType(IPv4, 8), ICMPCode(IPv4, 0), Accept()),
		NewRule(ICMPType(IPv6, 135), Accept()),
		NewRule(Not(ICMPType(IPv4, 0)), Accept()),
		NewRule(CTStateIn(CTStateEstablished|CTStateRelated), Accept()),
		NewRule(CTStateIn(CTStateInvalid), Drop()),
		NewRule(Not(CTStateIn(CTStateNew)), Drop()),
		NewRule(CTStatusDNAT(), Accept()),
		NewRule(Not(CTStatusDNAT()), Accept()),
		NewRule(MarkMatch(0x10000, 0x10000), Return()),
		NewRule(Not(MarkMatch(0x20000, 0x20000)), Return()),
		NewRule(MarkMatch(0x30000, 0), Return()),
		NewRule(MarkMatch(0xffffffff, 7), Return()),
		NewRule(FibAddrType(FibDAddr, AddrTypeLocal), Accept()),
		NewRule(NFProto(IPv4), Accept()),
		NewRule(NFProto(IPv6), Drop()),
		NewRule(EtherSAddr(mac), Drop()),
		NewRule(InSet("macs", FieldEtherSAddr), Drop()),
		NewRule(AndMark(0xfffcffff)),
		NewRule(OrMark(0x10000)),
		NewRule(SetMark(0xfffcffff, 0x10000)),
		NewRule(SetMark(0, 0x1)),
		NewRule(Log("calico-packet: ")),
		NewRule(L4Proto(ProtoTCP), Reject()),
		NewRule(Goto("wl-1")),
		NewRule(IIFNameVmap("vm")),
		NewRule(OIFNameVmap("vm")),
		NewRule(L4Proto(ProtoTCP), DPort(ProtoTCP, Port(80)), Accept()).WithComment("hello world"),
	}})
	rs.AddChain(&Chain{Name: "raw-PREROUTING", Base: &BaseChain{Type: TypeFilter, Hook: HookPrerouting, Priority: PriorityRaw},
		Rules: []Rule{
			NewRule(MarkMatch(0x80000, 0x80000), FibNoRoute(FibSAddr|FibMark|FibIIF), Drop()),
			NewRule(FibNoRoute(FibSAddr|FibIIF), Drop()),
			NewRule(L4Proto(ProtoUDP), DPort(ProtoUDP, Port(4789)), Notrack()),
		}})
	rs.AddChain(&Chain{Name: "nat-POSTROUTING", Base: &BaseChain{Type: TypeNAT, Hook: HookPostrouting, Priority: PrioritySrcNAT + 10},
		Rules: []Rule{
			NewRule(Jump("nat-outgoing")),
			NewRule(OIFName("vxlan.calico"), Not(FibAddrType(FibSAddr|FibOIF, AddrTypeLocal)), FibAddrType(FibSAddr, AddrTypeLocal), Masquerade()),
		}})
	rs.AddChain(&Chain{Name: "nat-outgoing", Rules: []Rule{
		NewRule(SAddrInSet(IPv4, "s4"), Not(DAddrInSet(IPv4, "s4")), Counter(), Masquerade()),
		NewRule(L4Proto(ProtoTCP), MasqueradeFullyRandom()),
		NewRule(SNAT(netip.MustParseAddr("198.18.0.1"))),
		NewRule(L4Proto(ProtoUDP), SNATToPorts(netip.MustParseAddr("198.18.0.1"), Ports(1024, 65535))),
		NewRule(L4Proto(ProtoTCP), SNATToPorts(netip.MustParseAddr("fd5c::1"), Port(2000))),
	}})
	rs.AddChain(&Chain{Name: "nat-PREROUTING", Base: &BaseChain{Type: TypeNAT, Hook: HookPrerouting, Priority: PriorityDstNAT},
		Rules: []Rule{
			NewRule(L4Proto(ProtoTCP), DAddr(pfx("169.254.169.254/32")), DPort(ProtoTCP, Port(80)), DNAT(netip.MustParseAddr("198.18.0.1"), 8775)),
			NewRule(DNAT(netip.MustParseAddr("198.18.0.2"), 0)),
			NewRule(L4Proto(ProtoTCP), DNAT(netip.MustParseAddr("fd5c::1"), 80)),
		}})
	return rs
}

func TestKernelAcceptsAllPrimitives(t *testing.T) {
	for _, mode := range sendModes {
		t.Run(mode.name, func(t *testing.T) { testAllPrimitives(t, mode.cfg) })
	}
}

func testAllPrimitives(t *testing.T, cfg NetlinkConfig) {
	ns := newNetNS(t)
	a, _ := ns.applierWith(t, cfg)
	rs := allPrimitivesRuleset()
	if err := rs.Validate(); err != nil {
		t.Fatal(err)
	}
	ns.apply(t, a, rs)
	got := ns.listTable(t)
	if got == nil {
		t.Fatal("table missing")
	}
	fake := NewFake()
	if _, err := NewApplier(fake, zerologNop()).Apply(t.Context(), rs); err != nil {
		t.Fatal(err)
	}
	want := parseNFTList(fake.DumpWithHashes())
	compareTables(t, want, got)

	// Our own netlink reader must see exactly what we wrote: a restarted
	// Applier's full sync has nothing to do.
	a2, _ := ns.applier(t)
	if st := ns.apply(t, a2, allPrimitivesRuleset()); st.Ops != 0 || !st.FullSync {
		t.Errorf("full sync after restart: %+v, want no operations", st)
	}
}

var ipencapRE = regexp.MustCompile(`\bipencap\b`)

// nftDisplay rewrites a line of our text to what nft prints for it: nft
// hides a protocol match that a port match implies anyway, and names
// protocol 4 after /etc/protocols.
func nftDisplay(line string) string {
	for _, p := range []string{"tcp", "udp", "sctp", "udplite"} {
		if strings.Contains(line, " "+p+" dport ") || strings.Contains(line, " "+p+" sport ") {
			line = strings.Replace(line, "meta l4proto "+p+" ", "", 1)
		}
	}
	return ipencapRE.ReplaceAllString(line, "4")
}

// compareTables checks that the kernel holds exactly what the fake holds.
func compareTables(t *testing.T, want, got *nftTable) {
	t.Helper()
	if w, g := sortedKeys(want.chains), sortedKeys(got.chains); !slices.Equal(w, g) {
		t.Errorf("chains: got %v, want %v", g, w)
	}
	for name, wc := range want.chains {
		wc.rules = mapStrings(wc.rules, nftDisplay)
		gc := got.chains[name]
		if gc == nil {
			continue
		}
		if wc.header != gc.header {
			t.Errorf("chain %s header: got %q, want %q", name, gc.header, wc.header)
		}
		for i := range max(len(wc.rules), len(gc.rules)) {
			var w, g string
			if i < len(wc.rules) {
				w = wc.rules[i]
			}
			if i < len(gc.rules) {
				g = gc.rules[i]
			}
			if w != g {
				t.Errorf("chain %s rule %d:\n got: %s\nwant: %s", name, i, g, w)
			}
		}
	}
	if w, g := sortedKeys(want.sets), sortedKeys(got.sets); !slices.Equal(w, g) {
		t.Errorf("sets: got %v, want %v", g, w)
	}
	for name, ws := range want.sets {
		gs := got.sets[name]
		if gs == nil {
			continue
		}
		if !slices.Equal(ws.header, gs.header) {
			t.Errorf("set %s header: got %q, want %q", name, gs.header, ws.header)
		}
		if w, g := sortedCopy(ws.elements), sortedCopy(mapStrings(gs.elements, nftDisplay)); !slices.Equal(w, g) {
			t.Errorf("set %s elements:\n got: %v\nwant: %v", name, g, w)
		}
	}
}

func mapStrings(in []string, f func(string) string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = f(s)
	}
	return out
}

// kernelMatchesFake checks the namespace's table against what a fake holds
// after applying rs.
func kernelMatchesFake(t *testing.T, ns *testNetNS, rs *Ruleset) {
	t.Helper()
	fake := NewFake()
	if _, err := NewApplier(fake, zerologNop()).Apply(t.Context(), rs); err != nil {
		t.Fatal(err)
	}
	got := ns.listTable(t)
	if got == nil {
		t.Fatal("table missing in the kernel")
	}
	compareTables(t, parseNFTList(fake.DumpWithHashes()), got)
}

func TestKernelUpdates(t *testing.T) {
	for _, mode := range sendModes {
		t.Run(mode.name, func(t *testing.T) {
			ns := newNetNS(t)
			a, _ := ns.applierWith(t, mode.cfg)
			states := convergenceStates()[1:]
			for i, rs := range append(states, states[0], states[3], states[1]) {
				st := ns.apply(t, a, rs)
				t.Logf("state %d: %+v", i+1, st)
				kernelMatchesFake(t, ns, rs)
			}
		})
	}
}

// TestKernelCommitErrors: a batch the kernel refuses changes nothing and
// the error says which operation failed.
func TestKernelCommitErrors(t *testing.T) {
	for _, mode := range sendModes {
		t.Run(mode.name, func(t *testing.T) {
			ns := newNetNS(t)
			cfg := mode.cfg
			cfg.NetNS = ns.fd
			k := NewNetlink(cfg)
			tx := &Transaction{Ops: []Op{
				{Kind: OpAddTable},
				{Kind: OpAddChain, Name: "a"},
				{Kind: OpAddRule, Name: "a", Rule: NewRule(Accept()), Hash: "0123456789abcdef"},
				{Kind: OpFlushChain, Name: "missing"},
				{Kind: OpAddChain, Name: "b"},
			}}
			_, err := k.Commit(t.Context(), tx)
			if !errors.Is(err, unix.ENOENT) {
				t.Fatalf("Commit error %v, want ENOENT", err)
			}
			if mode.cfg.PerMessageAcks == false && !strings.Contains(err.Error(), "operation 3 (flush chain missing)") {
				t.Errorf("error %q does not name the failing operation", err)
			}
			if ns.listTable(t) != nil {
				t.Error("a refused batch left a table behind")
			}
		})
	}
}

func TestKernelDriftRepair(t *testing.T) {
	ns := newNetNS(t)
	a, _ := ns.applier(t)
	rs := felixLike([]string{"cali1", "cali2"}, "10.65.0.9", "10.65.1.0/24")
	ns.apply(t, a, rs)
	kernelMatchesFake(t, ns, rs)

	// An admin deletes one rule by handle.
	handles := ns.ruleHandles(t)["cali-tw-cali2"]
	ns.exec(t, "nft", "delete", "rule", "inet", "calico", "cali-tw-cali2", "handle", strconv.Itoa(handles[3]))
	a.RequestFullSync()
	st := ns.apply(t, a, rs)
	if st.ChainsRewritten != 1 || st.RulesWritten != 6 || st.ElementsAdded != 0 {
		t.Errorf("repair after rule deletion: %+v", st)
	}
	kernelMatchesFake(t, ns, rs)

	// An admin adds a rule, a chain, a set element and deletes a map element.
	ns.exec(t, "nft", "insert", "rule", "inet", "calico", "cali-FORWARD", "accept")
	ns.exec(t, "nft", "add", "chain", "inet", "calico", "admin")
	ns.exec(t, "nft", "add", "element", "inet", "calico", "cali40s-fe", "{ 10.65.9.9 }")
	ns.exec(t, "nft", "delete", "element", "inet", "calico", "cali-to-wl-dispatch", `{ "cali1" }`)
	a.RequestFullSync()
	st = ns.apply(t, a, rs)
	if st.ChainsRewritten != 1 || st.ChainsDeleted != 1 || st.ElementsAdded != 1 || st.ElementsRemoved != 1 {
		t.Errorf("repair after admin changes: %+v", st)
	}
	kernelMatchesFake(t, ns, rs)

	// An admin deletes the whole table.
	ns.exec(t, "nft", "delete", "table", "inet", "calico")
	a.RequestFullSync()
	ns.apply(t, a, rs)
	kernelMatchesFake(t, ns, rs)
}

// TestKernelPartialSyncAfterTableDeleted: without a full sync the Applier
// does not know the table is gone; its partial commit fails and the retry
// inside Apply rebuilds the table.
func TestKernelPartialSyncAfterTableDeleted(t *testing.T) {
	ns := newNetNS(t)
	a, _ := ns.applier(t)
	ns.apply(t, a, felixLike([]string{"cali1"}, "10.65.0.9"))
	ns.exec(t, "nft", "delete", "table", "inet", "calico")
	rs := felixLike([]string{"cali1", "cali2"}, "10.65.0.9")
	if st := ns.apply(t, a, rs); !st.FullSync {
		t.Errorf("stats %+v, want a full sync", st)
	}
	kernelMatchesFake(t, ns, rs)
}

// TestKernelRestart: a new Applier over an existing, matching table sends
// nothing; with one new endpoint it sends only that endpoint.
func TestKernelRestart(t *testing.T) {
	ns := newNetNS(t)
	a, _ := ns.applier(t)
	rs := felixLike([]string{"cali1", "cali2"}, "10.65.0.9")
	ns.apply(t, a, rs)
	handles := ns.ruleHandles(t)

	b, _ := ns.applier(t)
	if st := ns.apply(t, b, rs); st.Ops != 0 || !st.FullSync {
		t.Errorf("restart: %+v, want a full sync without operations", st)
	}
	rs2 := felixLike([]string{"cali1", "cali2", "cali3"}, "10.65.0.9")
	c, _ := ns.applier(t)
	st := ns.apply(t, c, rs2)
	if st.ChainsAdded != 2 || st.ChainsRewritten != 0 || st.ChainsDeleted != 0 {
		t.Errorf("restart with a new endpoint: %+v", st)
	}
	after := ns.ruleHandles(t)
	for chain, hs := range handles {
		if !slices.Equal(hs, after[chain]) {
			t.Errorf("chain %s was rewritten across the restart: handles %v -> %v", chain, hs, after[chain])
		}
	}
	kernelMatchesFake(t, ns, rs2)
}

// TestKernelTextMatchesNetlink loads the same ruleset twice, once as the
// fake's nft text through `nft -f` and once through our netlink encoding,
// and checks that nft lists both identically: the text and the netlink
// renderings of every primitive mean the same thing.
func TestKernelTextMatchesNetlink(t *testing.T) {
	viaText, viaNetlink := newNetNS(t), newNetNS(t)
	rs := allPrimitivesRuleset()
	fake := NewFake()
	if _, err := NewApplier(fake, zerologNop()).Apply(t.Context(), rs); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "rules.nft")
	if err := os.WriteFile(file, []byte(fake.DumpWithHashes()), 0o600); err != nil {
		t.Fatal(err)
	}
	viaText.exec(t, "nft", "-f", file)
	a, _ := viaNetlink.applier(t)
	viaNetlink.apply(t, a, rs)
	want := viaText.exec(t, "nft", "-s", "list", "table", "inet", "calico")
	got := viaNetlink.exec(t, "nft", "-s", "list", "table", "inet", "calico")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("nft -f and netlink differ (-nft +netlink):\n%s", diff)
	}

	// And our reader understands the table nft made: a full sync over it
	// rewrites nothing but the chains, whose comments nft stored differently
	// only if the text lost something.
	b, _ := viaText.applier(t)
	if st := viaText.apply(t, b, rs); st.Ops != 0 {
		t.Errorf("full sync over the nft-loaded table: %+v\n%s", st, viaText.exec(t, "nft", "list", "table", "inet", "calico"))
	}
}
