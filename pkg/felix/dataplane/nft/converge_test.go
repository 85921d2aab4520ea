package nft

import (
	"math/rand/v2"
	"net/netip"
	"testing"
)

// convergenceStates is a list of quite different rulesets: endpoints come
// and go, sets change members and type, maps change verdicts, chains change
// hooks, objects switch between set and map.
func convergenceStates() []*Ruleset {
	var states []*Ruleset
	states = append(states, NewRuleset())
	states = append(states, felixLike(nil))
	states = append(states, felixLike([]string{"cali1"}, "10.65.0.9"))
	states = append(states, felixLike([]string{"cali1", "cali2", "cali3"}, "10.65.0.0/24", "10.65.0.9", "10.65.7.1-10.65.7.20"))
	states = append(states, felixLike([]string{"cali2"}, "10.65.0.10"))
	rs := felixLike([]string{"cali1", "cali4"})
	rs.Maps["cali-from-wl-dispatch"].Elements["cali4"] = Jump("cali-fw-cali1")
	rs.Chains["filter-FORWARD"].Base.Priority = -5
	states = append(states, rs)
	rs = felixLike([]string{"cali1"}, "10.65.0.9")
	rs.Sets["cali40s-fe"].Interval = false
	rs.AddSet(&Set{Name: "cali40n-x", Type: Concat(TypeIPv4Addr, TypeInetProto, TypeInetService),
		Elements: []string{"10.65.0.1 . tcp . 80", "10.65.0.2 . udp . 53"}})
	rs.Chains["cali-pi-gnp/allow-web"].Rules = append(rs.Chains["cali-pi-gnp/allow-web"].Rules,
		NewRule(InSet("cali40n-x", FieldDAddr(IPv4), FieldL4Proto, FieldDPort(0)), OrMark(markAccept)))
	states = append(states, rs)
	rs = NewRuleset()
	rs.AddMap(&Map{Name: "cali40s-fe", KeyType: TypeIPv4Addr, Elements: map[string]Verdict{"10.65.0.1": Accept()}})
	rs.AddChain(&Chain{Name: "cali-FORWARD", Base: &BaseChain{Type: TypeFilter, Hook: HookForward},
		Rules: []Rule{NewRule(Vmap(FieldSAddr(IPv4), "cali40s-fe")), NewRule(SAddr(netip.MustParsePrefix("10.65.0.0/16")), Drop())}})
	states = append(states, rs)
	return states
}

// TestRandomOrderConvergence replays the states in random order, with the
// occasional full sync, and checks every time that the table is exactly
// what applying that state to an empty table gives.
func TestRandomOrderConvergence(t *testing.T) {
	states := convergenceStates()
	fresh := make([]string, len(states))
	for i, rs := range states {
		f := NewFake()
		if _, err := NewApplier(f, zerologNop()).Apply(t.Context(), rs); err != nil {
			t.Fatalf("state %d: %v", i, err)
		}
		fresh[i] = f.DumpWithHashes()
	}
	rng := rand.New(rand.NewPCG(1, 2))
	a, f := newTestApplier(t)
	for step := range 5 * len(states) * len(states) {
		i := rng.IntN(len(states))
		if rng.IntN(5) == 0 {
			a.RequestFullSync()
		}
		if _, err := a.Apply(t.Context(), states[i]); err != nil {
			t.Fatalf("step %d, state %d: %v", step, i, err)
		}
		if got := f.DumpWithHashes(); got != fresh[i] {
			t.Fatalf("step %d: state %d did not converge:\n%s\nwant:\n%s", step, i, got, fresh[i])
		}
	}
}

func TestConvergenceStatesAreDistinct(t *testing.T) {
	seen := map[string]int{}
	for i, rs := range convergenceStates() {
		f := NewFake()
		if _, err := NewApplier(f, zerologNop()).Apply(t.Context(), rs); err != nil {
			t.Fatal(err)
		}
		d := f.Dump()
		if j, dup := seen[d]; dup {
			t.Errorf("states %d and %d are the same", j, i)
		}
		seen[d] = i
	}
}
