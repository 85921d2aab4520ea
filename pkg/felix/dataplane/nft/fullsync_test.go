package nft

import (
	"context"
	"errors"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFullSyncRepairsDrift(t *testing.T) {
	for _, tc := range []struct {
		name  string
		drift func(t *testing.T, f *Fake)
		want  map[string]int // operations of the repairing transaction
	}{{
		name:  "table deleted",
		drift: func(t *testing.T, f *Fake) { f.DeleteTable() },
		want:  nil, // everything is recreated; checked against a fresh table
	}, {
		name: "rule deleted",
		drift: func(t *testing.T, f *Fake) {
			if err := f.DeleteRule("cali-tw-cali1", 2); err != nil {
				t.Fatal(err)
			}
		},
		want: map[string]int{"flush chain cali-tw-cali1": 1, "add rule cali-tw-cali1": 6},
	}, {
		name: "rule inserted",
		drift: func(t *testing.T, f *Fake) {
			if err := f.InsertRule("cali-FORWARD", 0, NewRule(Accept())); err != nil {
				t.Fatal(err)
			}
		},
		want: map[string]int{"flush chain cali-FORWARD": 1, "add rule cali-FORWARD": 2},
	}, {
		name: "foreign objects",
		drift: func(t *testing.T, f *Fake) {
			mustFake(t, f, Op{Kind: OpAddChain, Name: "admin-chain"}, Op{Kind: OpAddRule, Name: "admin-chain", Rule: NewRule(Drop())},
				Op{Kind: OpAddSet, Name: "admin-set", Type: TypeIPv4Addr})
		},
		want: map[string]int{"flush chain admin-chain": 1, "delete chain admin-chain": 1, "delete set admin-set": 1},
	}, {
		name: "elements changed",
		drift: func(t *testing.T, f *Fake) {
			if err := errors.Join(f.DeleteElements("cali40s-fe", "10.65.0.9"), f.AddElements("cali40s-fe", "10.65.3.3")); err != nil {
				t.Fatal(err)
			}
			mustFake(t, f, Op{Kind: OpDeleteMapElements, Name: "cali-to-wl-dispatch", MapElems: []mapElement{{text: `"cali1"`, key: ifnameKey("cali1")}}})
		},
		want: map[string]int{"delete element cali40s-fe": 1, "add element cali40s-fe": 1, "add element cali-to-wl-dispatch": 1},
	}, {
		name: "set recreated with another type",
		drift: func(t *testing.T, f *Fake) {
			mustFake(t, f, Op{Kind: OpFlushChain, Name: "cali-pi-gnp/allow-web"}, Op{Kind: OpDeleteSet, Name: "cali40s-fe"},
				Op{Kind: OpAddSet, Name: "cali40s-fe", Type: TypeIPv4Addr})
		},
		want: map[string]int{
			"flush chain cali-pi-gnp/allow-web": 1, "delete set cali40s-fe": 1, "add set cali40s-fe": 1,
			"add element cali40s-fe": 1, "add rule cali-pi-gnp/allow-web": 1,
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			rs := felixLike([]string{"cali1"}, "10.65.0.9", "10.65.1.0/24")
			a, f := newTestApplier(t)
			mustApply(t, a, rs)
			tc.drift(t, f)

			// A partial sync does not look at the kernel.
			if st := mustApply(t, a, rs); st.Ops != 0 {
				t.Fatalf("partial sync after drift did %d operations", st.Ops)
			}
			a.RequestFullSync()
			st := mustApply(t, a, rs)
			if !st.FullSync {
				t.Error("expected a full sync")
			}
			if tc.want != nil {
				if diff := cmp.Diff(tc.want, opCounts(f.LastTransaction())); diff != "" {
					t.Errorf("repair ops (-want +got):\n%s", diff)
				}
			}
			checkSameAsFresh(t, f, rs)
		})
	}
}

func mustFake(t *testing.T, f *Fake, ops ...Op) {
	t.Helper()
	if err := f.Apply(ops...); err != nil {
		t.Fatal(err)
	}
}

func mustElems(t *testing.T, typ string, interval bool, texts ...string) []element {
	t.Helper()
	st, err := parseSetType(typ)
	if err != nil {
		t.Fatal(err)
	}
	var out []element
	for _, s := range texts {
		e, err := parseElement(st, interval, s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

// TestRestartIsDiffOnly: a new Applier over a table that already matches
// rewrites nothing and never deletes the table.
func TestRestartIsDiffOnly(t *testing.T) {
	rs := felixLike([]string{"cali1", "cali2"}, "10.65.0.9")
	a, f := newTestApplier(t)
	mustApply(t, a, rs)
	commits := f.Commits()

	restarted := NewApplier(f, zerologNop())
	st := mustApply(t, restarted, rs)
	if !st.FullSync || st.Ops != 0 || f.Commits() != commits {
		t.Errorf("restart: %+v (commits %d -> %d), want a full sync with no operations", st, commits, f.Commits())
	}

	// A restart with a changed ruleset touches only what changed.
	rs2 := felixLike([]string{"cali1", "cali2", "cali3"}, "10.65.0.9")
	st = mustApply(t, NewApplier(f, zerologNop()), rs2)
	if st.ChainsRewritten != 0 || st.ChainsAdded != 2 || st.ChainsDeleted != 0 {
		t.Errorf("restart with a new endpoint: %+v", st)
	}
	if n := f.LastTransaction().Count(OpDeleteTable); n != 0 {
		t.Errorf("table deleted %d times", n)
	}
	checkSameAsFresh(t, f, rs2)
}

func TestFailedCommitForcesFullSync(t *testing.T) {
	rs1 := felixLike([]string{"cali1"}, "10.65.0.9")
	rs2 := felixLike([]string{"cali1", "cali2"}, "10.65.0.9")
	a, f := newTestApplier(t)
	mustApply(t, a, rs1)

	// Partial sync fails, then the immediate full-sync retry fails too.
	boom := errors.New("boom")
	f.FailCommits(boom, boom)
	if _, err := a.Apply(t.Context(), rs2); !errors.Is(err, boom) {
		t.Fatalf("Apply error %v, want boom", err)
	}
	if f.Commits() != 3 {
		t.Errorf("commits %d, want 3 (initial, partial, full retry)", f.Commits())
	}
	st := mustApply(t, a, rs2)
	if !st.FullSync {
		t.Error("the Apply after a failed commit must be a full sync")
	}
	checkSameAsFresh(t, f, rs2)

	// One failure: the full-sync retry inside Apply repairs it at once.
	f.FailCommits(boom)
	st = mustApply(t, a, rs1)
	if !st.FullSync {
		t.Error("a failed partial commit is retried as a full sync")
	}
	checkSameAsFresh(t, f, rs1)
}

// TestPartialSyncFailureRepaired: the kernel rejects a partial transaction
// because someone deleted a chain it flushes; the retry repairs everything.
func TestPartialSyncFailureRepaired(t *testing.T) {
	rs := felixLike([]string{"cali1"}, "10.65.0.9")
	a, f := newTestApplier(t)
	mustApply(t, a, rs)
	f.DeleteTable()
	rs.Chains["cali-pi-gnp/allow-web"].Rules = append(rs.Chains["cali-pi-gnp/allow-web"].Rules, NewRule(Drop()))
	st := mustApply(t, a, rs)
	if !st.FullSync {
		t.Errorf("stats %+v, want the full-sync retry", st)
	}
	checkSameAsFresh(t, f, rs)
}

func TestValidationErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(rs *Ruleset)
	}{
		{"jump to missing chain", func(rs *Ruleset) {
			rs.Chains["cali-FORWARD"].Rules = append(rs.Chains["cali-FORWARD"].Rules, NewRule(Jump("nope")))
		}},
		{"jump to base chain", func(rs *Ruleset) {
			rs.Chains["cali-FORWARD"].Rules = append(rs.Chains["cali-FORWARD"].Rules, NewRule(Jump("filter-FORWARD")))
		}},
		{"missing set", func(rs *Ruleset) { delete(rs.Sets, "cali40s-fe") }},
		{"set of the wrong type", func(rs *Ruleset) { rs.Sets["cali40s-fe"].Type = TypeIPv6Addr }},
		{"bad element", func(rs *Ruleset) { rs.Sets["cali40s-fe"].Elements = []string{"fd5c::1"} }},
		{"vmap to missing chain", func(rs *Ruleset) { rs.Maps["cali-to-wl-dispatch"].Elements["cali9"] = Goto("nope") }},
		{"empty rule", func(rs *Ruleset) { rs.Chains["cali-FORWARD"].Rules = append(rs.Chains["cali-FORWARD"].Rules, Rule{}) }},
		{"masquerade to an empty port range", func(rs *Ruleset) {
			rs.Chains["cali-FORWARD"].Rules = append(rs.Chains["cali-FORWARD"].Rules, NewRule(MasqueradeToPorts(Ports(2, 1), false)))
		}},
		{"interval concatenation", func(rs *Ruleset) {
			rs.AddSet(&Set{Name: "c", Type: Concat(TypeIPv4Addr, TypeInetService), Interval: true})
		}},
		{"set and map share a name", func(rs *Ruleset) {
			rs.AddSet(&Set{Name: "cali-to-wl-dispatch", Type: TypeIfname})
		}},
		{"ip and ip6 in one rule", func(rs *Ruleset) {
			rs.Chains["cali-FORWARD"].Rules = append(rs.Chains["cali-FORWARD"].Rules,
				NewRule(SAddr(netip.MustParsePrefix("10.0.0.0/8")), DAddr(netip.MustParsePrefix("fd5c::/16")), Drop()))
		}},
		{"tcp and udp ports in one rule", func(rs *Ruleset) {
			rs.Chains["cali-FORWARD"].Rules = append(rs.Chains["cali-FORWARD"].Rules,
				NewRule(L4Proto(ProtoTCP), DPort(ProtoUDP, Port(53)), Drop()))
		}},
		{"nat in forward hook", func(rs *Ruleset) {
			rs.AddChain(&Chain{Name: "n", Base: &BaseChain{Type: TypeNAT, Hook: HookForward}})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, f := newTestApplier(t)
			mustApply(t, a, felixLike([]string{"cali1"}, "10.65.0.9"))
			before := f.DumpWithHashes()
			rs := felixLike([]string{"cali1"}, "10.65.0.9")
			tc.mutate(rs)
			if _, err := a.Apply(t.Context(), rs); err == nil {
				t.Fatal("Apply accepted an invalid ruleset")
			}
			if rs.Validate() == nil {
				t.Error("Validate accepted an invalid ruleset")
			}
			if f.DumpWithHashes() != before {
				t.Error("an invalid ruleset changed the table")
			}
		})
	}
}

// TestSetTypeChangeRewritesUsers: replacing a set forces the chains that
// use it to be rewritten around the replacement, in one transaction.
func TestSetTypeChangeRewritesUsers(t *testing.T) {
	a, f := newTestApplier(t)
	mustApply(t, a, felixLike([]string{"cali1"}, "10.65.0.9"))
	rs := felixLike([]string{"cali1"}, "10.65.0.9")
	rs.Sets["cali40s-fe"].Interval = false
	st := mustApply(t, a, rs)
	want := map[string]int{
		"flush chain cali-pi-gnp/allow-web": 1, "delete set cali40s-fe": 1, "add set cali40s-fe": 1,
		"add element cali40s-fe": 1, "add rule cali-pi-gnp/allow-web": 1,
	}
	if diff := cmp.Diff(want, opCounts(f.LastTransaction())); diff != "" {
		t.Errorf("ops (-want +got):\n%s", diff)
	}
	if st.ChainsRewritten != 1 {
		t.Errorf("stats %+v", st)
	}
	checkSameAsFresh(t, f, rs)
}

func TestBaseChainHookChange(t *testing.T) {
	a, f := newTestApplier(t)
	mustApply(t, a, felixLike(nil))
	rs := felixLike(nil)
	rs.Chains["filter-FORWARD"].Base.Priority = 10
	mustApply(t, a, rs)
	want := map[string]int{
		"flush chain filter-FORWARD": 1, "delete chain filter-FORWARD": 1, "add chain filter-FORWARD": 1,
		"add rule filter-FORWARD": 2,
	}
	if diff := cmp.Diff(want, opCounts(f.LastTransaction())); diff != "" {
		t.Errorf("ops (-want +got):\n%s", diff)
	}
	checkSameAsFresh(t, f, rs)
}

// TestIntervalDeltas: interval sets are diffed on their union.
func TestIntervalDeltas(t *testing.T) {
	a, f := newTestApplier(t)
	set := func(elems ...string) *Ruleset {
		rs := NewRuleset()
		rs.AddSet(&Set{Name: "s", Type: TypeIPv4Addr, Interval: true, Elements: elems})
		return rs
	}
	mustApply(t, a, set("10.65.0.0/16", "10.65.1.5"))
	mustApply(t, a, set("10.65.1.5"))
	tx := f.LastTransaction()
	if got := tx.Script("calico"); got != "delete element inet calico s { 10.65.0.0/16 }\nadd element inet calico s { 10.65.1.5 }\n" {
		t.Errorf("transaction:\n%s", got)
	}
	mustApply(t, a, set("10.65.1.4", "10.65.1.5", "10.65.1.6", "10.65.1.7", "10.65.1.7"))
	if got := f.LastTransaction().Script("calico"); got != "delete element inet calico s { 10.65.1.5 }\nadd element inet calico s { 10.65.1.4/30 }\n" {
		t.Errorf("transaction:\n%s", got)
	}
	checkSameAsFresh(t, f, set("10.65.1.4/30"))
}

func TestRuleHashesChain(t *testing.T) {
	r1, r2 := NewRule(Accept()), NewRule(Drop())
	a := ruleHashes("c", []Rule{r1, r2})
	b := ruleHashes("c", []Rule{NewRule(Return()), r2})
	c := ruleHashes("d", []Rule{r1, r2})
	if a[1] == b[1] {
		t.Error("a rule's hash must depend on the rules before it")
	}
	if a[0] == c[0] {
		t.Error("a rule's hash must depend on the chain name")
	}
	if len(a[0]) != hashLen || hashFromComment(kernelComment(a[0], r1.WithComment("x"))) != a[0] {
		t.Errorf("hash %q does not round-trip through the comment", a[0])
	}
	if hashFromUserData(ruleUserData(kernelComment(a[1], r2))) != a[1] {
		t.Error("hash does not round-trip through userdata")
	}
	if hashFromUserData([]byte{0, 200, 1}) != "" {
		t.Error("malformed userdata must yield no hash")
	}
}

func TestAddrMatchIgnoresHostBits(t *testing.T) {
	if got := SAddr(netip.MustParsePrefix("10.65.1.5/16")).String(); got != "ip saddr 10.65.0.0/16" {
		t.Errorf("got %q", got)
	}
}

// staleReader is a kernel whose reads miss one chain, like a read that
// raced with another change.
type staleReader struct {
	*Fake
	hide string
}

func (k staleReader) Read(ctx context.Context) (*KernelState, error) {
	ks, err := k.Fake.Read(ctx)
	if ks != nil {
		delete(ks.Chains, k.hide)
	}
	return ks, err
}

// TestFullSyncStaleReadDoesNotDuplicate: a chain the read missed is
// flushed before it is filled, so its rules are not doubled.
func TestFullSyncStaleReadDoesNotDuplicate(t *testing.T) {
	rs := felixLike([]string{"cali1"}, "10.65.0.9")
	_, f := newTestApplier(t)
	mustApply(t, NewApplier(f, zerologNop()), rs)
	mustApply(t, NewApplier(staleReader{Fake: f, hide: "cali-tw-cali1"}, zerologNop()), rs)
	checkSameAsFresh(t, f, rs)
}
