package nft

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Test addresses: workloads in 10.65.0.0/16, hosts in 198.18.0.0/15.

const (
	markAccept = 0x10000
	markPass   = 0x20000
)

// felixLike builds a small ruleset shaped like felix's: dispatch verdict
// maps, per-endpoint chains, one policy chain and one selector set.
func felixLike(endpoints []string, feMembers ...string) *Ruleset {
	rs := NewRuleset()
	rs.AddSet(&Set{Name: "cali40s-fe", Type: TypeIPv4Addr, Interval: true, Elements: feMembers})
	from := rs.AddMap(&Map{Name: "cali-from-wl-dispatch", KeyType: TypeIfname, Elements: map[string]Verdict{}})
	to := rs.AddMap(&Map{Name: "cali-to-wl-dispatch", KeyType: TypeIfname, Elements: map[string]Verdict{}})
	rs.AddChain(&Chain{Name: "filter-FORWARD", Base: &BaseChain{Type: TypeFilter, Hook: HookForward, Priority: PriorityFilter},
		Rules: []Rule{
			NewRule(Jump("cali-FORWARD")),
			NewRule(MarkMatch(markAccept, markAccept), Accept()),
		}})
	rs.AddChain(&Chain{Name: "cali-FORWARD", Rules: []Rule{
		NewRule(IIFName("cali*"), Jump("cali-from-wl-dispatch")),
		NewRule(OIFName("cali*"), Jump("cali-to-wl-dispatch")),
	}})
	rs.AddChain(&Chain{Name: "cali-from-wl-dispatch", Rules: []Rule{NewRule(IIFNameVmap(from.Name)), NewRule(Counter(), Drop()).WithComment("Unknown interface")}})
	rs.AddChain(&Chain{Name: "cali-to-wl-dispatch", Rules: []Rule{NewRule(OIFNameVmap(to.Name)), NewRule(Counter(), Drop()).WithComment("Unknown interface")}})
	rs.AddChain(&Chain{Name: "cali-pi-gnp/allow-web", Rules: []Rule{
		NewRule(L4Proto(ProtoTCP), SAddrInSet(IPv4, "cali40s-fe"), DPort(ProtoTCP, Port(80)), OrMark(markAccept)),
	}})
	for _, ep := range endpoints {
		from.Elements[ep] = Goto("cali-fw-" + ep)
		to.Elements[ep] = Goto("cali-tw-" + ep)
		rs.AddChain(&Chain{Name: "cali-fw-" + ep, Rules: endpointRules(false)})
		rs.AddChain(&Chain{Name: "cali-tw-" + ep, Rules: endpointRules(true)})
	}
	return rs
}

func endpointRules(ingress bool) []Rule {
	rules := []Rule{
		NewRule(CTStateIn(CTStateEstablished|CTStateRelated), Accept()),
		NewRule(CTStateIn(CTStateInvalid), Drop()),
		NewRule(AndMark(^uint32(markAccept | markPass))),
	}
	if ingress {
		rules = append(rules,
			NewRule(MarkMatch(markPass, 0), Jump("cali-pi-gnp/allow-web")),
			NewRule(MarkMatch(markAccept, markAccept), Return()),
		)
	}
	return append(rules, NewRule(Drop()).WithComment("Drop if no policies passed packet"))
}

func newTestApplier(t *testing.T) (*Applier, *Fake) {
	f := NewFake()
	return NewApplier(f, zerologNop()), f
}

func mustApply(t *testing.T, a *Applier, rs *Ruleset) Stats {
	t.Helper()
	st, err := a.Apply(context.Background(), rs)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	return st
}

// dedent removes the common leading tabs of a golden text.
func dedent(s string) string {
	lines := strings.Split(strings.TrimPrefix(s, "\n"), "\n")
	indent := len(lines[0]) - len(strings.TrimLeft(lines[0], "\t"))
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, strings.Repeat("\t", indent))
		if strings.TrimSpace(l) == "" {
			lines[i] = ""
		}
	}
	return strings.Join(lines, "\n")
}

const goldenOneEndpoint = `
	table inet calico {
		set cali40s-fe {
			type ipv4_addr
			flags interval
			elements = { 10.65.0.9, 10.65.1.0/24 }
		}
		map cali-from-wl-dispatch {
			type ifname : verdict
			elements = { "cali1a2b" : goto cali-fw-cali1a2b }
		}
		map cali-to-wl-dispatch {
			type ifname : verdict
			elements = { "cali1a2b" : goto cali-tw-cali1a2b }
		}
		chain cali-FORWARD {
			iifname "cali*" jump cali-from-wl-dispatch
			oifname "cali*" jump cali-to-wl-dispatch
		}
		chain cali-from-wl-dispatch {
			iifname vmap @cali-from-wl-dispatch
			counter drop comment "Unknown interface"
		}
		chain cali-fw-cali1a2b {
			ct state established,related accept
			ct state invalid drop
			meta mark set meta mark & 0xfffcffff
			drop comment "Drop if no policies passed packet"
		}
		chain cali-pi-gnp/allow-web {
			meta l4proto tcp ip saddr @cali40s-fe tcp dport 80 meta mark set meta mark | 0x00010000
		}
		chain cali-to-wl-dispatch {
			oifname vmap @cali-to-wl-dispatch
			counter drop comment "Unknown interface"
		}
		chain cali-tw-cali1a2b {
			ct state established,related accept
			ct state invalid drop
			meta mark set meta mark & 0xfffcffff
			meta mark & 0x00020000 == 0x00000000 jump cali-pi-gnp/allow-web
			meta mark & 0x00010000 == 0x00010000 return
			drop comment "Drop if no policies passed packet"
		}
		chain filter-FORWARD {
			type filter hook forward priority filter; policy accept;
			jump cali-FORWARD
			meta mark & 0x00010000 == 0x00010000 accept
		}
	}
`

func TestApplyGolden(t *testing.T) {
	a, f := newTestApplier(t)
	st := mustApply(t, a, felixLike([]string{"cali1a2b"}, "10.65.0.9", "10.65.1.0/24", "10.65.1.7"))
	if diff := cmp.Diff(dedent(goldenOneEndpoint), f.Dump()); diff != "" {
		t.Errorf("dump (-want +got):\n%s", diff)
	}
	if !st.FullSync || st.ChainsAdded != 7 || st.ChainsRewritten != 0 || st.SetsAdded != 1 || st.MapsAdded != 2 {
		t.Errorf("stats %+v", st)
	}
	// 10.65.1.7 lies inside 10.65.1.0/24: the kernel gets the union.
	if st.ElementsAdded != 4 {
		t.Errorf("elements added %d, want 2 set + 2 map", st.ElementsAdded)
	}
}

// TestApplyIdempotent: applying the same ruleset again sends nothing.
func TestApplyIdempotent(t *testing.T) {
	a, f := newTestApplier(t)
	mustApply(t, a, felixLike([]string{"cali1"}, "10.65.0.9"))
	commits := f.Commits()
	st := mustApply(t, a, felixLike([]string{"cali1"}, "10.65.0.9"))
	if st.Ops != 0 || st.FullSync || f.Commits() != commits {
		t.Errorf("second apply: %+v, commits %d -> %d", st, commits, f.Commits())
	}
}

// opCounts summarises a transaction as "kind name" -> count.
func opCounts(tx *Transaction) map[string]int {
	m := map[string]int{}
	for _, op := range tx.Ops {
		m[op.Kind.String()+" "+op.Name]++
	}
	return m
}

func TestApplyMinimalTransactions(t *testing.T) {
	for _, tc := range []struct {
		name     string
		from, to *Ruleset
		want     map[string]int
	}{{
		name: "add endpoint",
		from: felixLike([]string{"cali1"}, "10.65.0.9"),
		to:   felixLike([]string{"cali1", "cali2"}, "10.65.0.9"),
		want: map[string]int{
			"add chain cali-fw-cali2": 1, "add chain cali-tw-cali2": 1,
			"add element cali-from-wl-dispatch": 1, "add element cali-to-wl-dispatch": 1,
			"add rule cali-fw-cali2": 4, "add rule cali-tw-cali2": 6,
		},
	}, {
		name: "remove endpoint",
		from: felixLike([]string{"cali1", "cali2"}, "10.65.0.9"),
		to:   felixLike([]string{"cali1"}, "10.65.0.9"),
		want: map[string]int{
			"delete element cali-from-wl-dispatch": 1, "delete element cali-to-wl-dispatch": 1,
			"flush chain cali-fw-cali2": 1, "flush chain cali-tw-cali2": 1,
			"delete chain cali-fw-cali2": 1, "delete chain cali-tw-cali2": 1,
		},
	}, {
		name: "set members change",
		from: felixLike([]string{"cali1"}, "10.65.0.9", "10.65.0.10"),
		to:   felixLike([]string{"cali1"}, "10.65.0.9", "10.65.0.11"),
		want: map[string]int{"delete element cali40s-fe": 1, "add element cali40s-fe": 1},
	}, {
		name: "covered member added",
		from: felixLike([]string{"cali1"}, "10.65.1.0/24"),
		to:   felixLike([]string{"cali1"}, "10.65.1.0/24", "10.65.1.5"),
		want: map[string]int{},
	}, {
		name: "one chain changes",
		from: felixLike([]string{"cali1"}, "10.65.0.9"),
		to: func() *Ruleset {
			rs := felixLike([]string{"cali1"}, "10.65.0.9")
			rs.Chains["cali-pi-gnp/allow-web"].Rules[0] = NewRule(L4Proto(ProtoTCP), DPort(ProtoTCP, Port(8080)), OrMark(markAccept))
			return rs
		}(),
		want: map[string]int{"flush chain cali-pi-gnp/allow-web": 1, "add rule cali-pi-gnp/allow-web": 1},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			a, f := newTestApplier(t)
			mustApply(t, a, tc.from)
			commits := f.Commits()
			st := mustApply(t, a, tc.to)
			got := map[string]int{}
			if f.Commits() > commits {
				got = opCounts(f.LastTransaction())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ops (-want +got):\n%s", diff)
			}
			if st.FullSync {
				t.Error("partial sync expected")
			}
			checkSameAsFresh(t, f, tc.to)
		})
	}
}

// checkSameAsFresh compares the fake with a fresh fake that got rs directly.
func checkSameAsFresh(t *testing.T, f *Fake, rs *Ruleset) {
	t.Helper()
	fresh := NewFake()
	if _, err := NewApplier(fresh, zerologNop()).Apply(context.Background(), rs); err != nil {
		t.Fatalf("fresh apply: %v", err)
	}
	if diff := cmp.Diff(fresh.DumpWithHashes(), f.DumpWithHashes()); diff != "" {
		t.Errorf("table differs from a fresh apply (-fresh +got):\n%s", diff)
	}
}

// TestInPlaceChanges: a renderer that keeps one Ruleset and edits it in
// place between Applies is diffed correctly; the Applier keeps its own
// copies.
func TestInPlaceChanges(t *testing.T) {
	rs := felixLike([]string{"cali1"}, "10.65.0.9")
	a, f := newTestApplier(t)
	mustApply(t, a, rs)

	rs.Chains["cali-fw-cali1"].Rules[1] = NewRule(CTStateIn(CTStateInvalid), Reject())
	rs.Chains["cali-FORWARD"].Rules[0].Exprs[1] = Goto("cali-from-wl-dispatch")
	rs.Sets["cali40s-fe"].Elements[0] = "10.65.0.10"
	rs.Maps["cali-to-wl-dispatch"].Elements["cali1"] = Jump("cali-tw-cali1")
	st := mustApply(t, a, rs)
	if st.ChainsRewritten != 2 || st.ElementsAdded != 2 || st.ElementsRemoved != 2 {
		t.Errorf("stats %+v, want 2 chains rewritten and 2 elements replaced", st)
	}
	checkSameAsFresh(t, f, rs)
}
