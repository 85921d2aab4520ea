package nft

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// churn edits one tracked ruleset in place at random, reporting every
// change, like a renderer that keeps its ruleset between Applies. The
// elements come from a small range so that intervals overlap, adjoin, merge
// and split, and some are written in two ways ("10.65.0.5", "10.65.0.5/32").
type churn struct {
	rng *rand.Rand
	rs  *Ruleset
}

const churnEndpoints, churnSets = 6, 3

func newChurn(seed uint64) *churn {
	c := &churn{rng: rand.New(rand.NewPCG(seed, 7)), rs: NewRuleset()}
	c.rs.Track()
	for i := range churnSets {
		c.rs.AddSet(&Set{Name: fmt.Sprintf("s%d", i), Type: TypeIPv4Addr, Interval: true, Elements: c.addrs(4)})
		c.rs.AddChain(c.policy(i, 80))
	}
	c.rs.AddSet(&Set{Name: "n0", Type: Concat(TypeIPv4Addr, TypeInetProto, TypeInetService), Elements: []string{"10.65.0.1 . tcp . 80"}})
	c.rs.AddChain(&Chain{Name: "poln", Rules: []Rule{NewRule(InSet("n0", FieldDAddr(IPv4), FieldL4Proto, FieldDPort(0)), OrMark(markAccept))}})
	c.rs.AddMap(&Map{Name: "from", KeyType: TypeIfname, Elements: map[string]Verdict{}})
	c.rs.AddMap(&Map{Name: "to", KeyType: TypeIfname, Elements: map[string]Verdict{}})
	c.rs.AddChain(&Chain{Name: "fwd", Base: &BaseChain{Type: TypeFilter, Hook: HookForward},
		Rules: []Rule{NewRule(IIFName("e*"), IIFNameVmap("from")), NewRule(OIFName("e*"), OIFNameVmap("to"))}})
	return c
}

// addr is one element of the small range, in one of its spellings.
func (c *churn) addr() string { return c.elem(true) }

// elem is an element for an interval set, or a single address for a plain one.
func (c *churn) elem(interval bool) string {
	n := c.rng.IntN(24)
	r := c.rng.IntN(6)
	if !interval {
		r = 2 + r%2
	}
	switch r {
	case 0:
		return fmt.Sprintf("10.65.0.%d/30", n&^3)
	case 1:
		return fmt.Sprintf("10.65.0.%d-10.65.0.%d", n, n+c.rng.IntN(5))
	case 2:
		return fmt.Sprintf("10.65.0.%d/32", n)
	}
	return fmt.Sprintf("10.65.0.%d", n)
}

func (c *churn) addrs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = c.addr()
	}
	return out
}

func (c *churn) policy(i, port int) *Chain {
	return &Chain{Name: fmt.Sprintf("pol%d", i), Rules: []Rule{
		NewRule(SAddrInSet(IPv4, fmt.Sprintf("s%d", i)), DPort(ProtoTCP, Port(uint16(port))), OrMark(markAccept)),
		NewRule(MarkMatch(markAccept, markAccept), Return()),
	}}
}

// step makes one random change.
func (c *churn) step() {
	steps := []func(){c.toggleEndpoint, c.toggleEndpoint, c.editEndpoint, c.editSet, c.editSet, c.editSet,
		c.editPlainSet, c.editPolicy, c.editFree, c.editVerdict, c.editBase, c.flipInterval}
	steps[c.rng.IntN(len(steps))]()
}

func (c *churn) toggleEndpoint() {
	k := c.rng.IntN(churnEndpoints)
	iface := fmt.Sprintf("e%d", k)
	if _, ok := c.rs.Chains["fw-"+iface]; ok {
		c.rs.DeleteChain("fw-" + iface)
		c.rs.DeleteChain("tw-" + iface)
		delete(c.rs.Maps["from"].Elements, iface)
		delete(c.rs.Maps["to"].Elements, iface)
	} else {
		c.rs.AddChain(c.endpointChain("fw-" + iface))
		c.rs.AddChain(c.endpointChain("tw-" + iface))
		c.rs.Maps["from"].Elements[iface] = Goto("fw-" + iface)
		c.rs.Maps["to"].Elements[iface] = Goto("tw-" + iface)
	}
	c.rs.TouchMap("from")
	c.rs.TouchMap("to")
}

func (c *churn) endpointChain(name string) *Chain {
	rules := []Rule{NewRule(CTStateIn(CTStateEstablished|CTStateRelated), Accept())}
	for range 1 + c.rng.IntN(3) {
		pol := "poln"
		if i := c.rng.IntN(churnSets + 1); i < churnSets {
			pol = fmt.Sprintf("pol%d", i)
		}
		rules = append(rules, NewRule(Jump(pol)), NewRule(MarkMatch(markAccept, markAccept), Return()))
	}
	return &Chain{Name: name, Rules: append(rules, NewRule(Counter(), Drop()))}
}

// editEndpoint changes an existing endpoint chain's rules in place.
func (c *churn) editEndpoint() {
	name := fmt.Sprintf("fw-e%d", c.rng.IntN(churnEndpoints))
	if ch := c.rs.Chains[name]; ch != nil {
		ch.Rules = c.endpointChain(name).Rules
		c.rs.TouchChain(name)
	}
}

// editSet adds, removes or replaces elements of an interval set in place.
func (c *churn) editSet() {
	s := c.rs.Sets[fmt.Sprintf("s%d", c.rng.IntN(churnSets))]
	switch r := c.rng.IntN(10); {
	case r < 5:
		for range 1 + c.rng.IntN(3) {
			s.Elements = append(s.Elements, c.elem(s.Interval))
		}
	case r < 9 && len(s.Elements) > 0:
		i := c.rng.IntN(len(s.Elements))
		s.Elements = slices.Delete(s.Elements, i, min(len(s.Elements), i+1+c.rng.IntN(2)))
	case s.Interval:
		s.Elements = c.addrs(c.rng.IntN(6))
	}
	c.rs.TouchSet(s.Name)
}

func (c *churn) editPlainSet() {
	s := c.rs.Sets["n0"]
	if len(s.Elements) > 0 && c.rng.IntN(2) == 0 {
		s.Elements = slices.Delete(s.Elements, 0, 1)
	} else {
		proto := []string{"tcp", "6", "udp"}[c.rng.IntN(3)]
		s.Elements = append(s.Elements, fmt.Sprintf("10.65.0.%d . %s . %d", c.rng.IntN(4), proto, 80+c.rng.IntN(2)))
	}
	c.rs.TouchSet("n0")
}

func (c *churn) editPolicy() {
	i := c.rng.IntN(churnSets)
	c.rs.AddChain(c.policy(i, 80+c.rng.IntN(3)))
}

// editFree deletes, or recreates as another kind, an object nothing uses.
func (c *churn) editFree() {
	switch c.rng.IntN(4) {
	case 0:
		c.rs.DeleteSet("free")
		c.rs.DeleteMap("free")
	case 1:
		c.rs.DeleteMap("free")
		c.rs.AddSet(&Set{Name: "free", Type: TypeIPv4Addr, Interval: c.rng.IntN(2) == 0, Elements: []string{"10.65.0.1"}})
	case 2:
		c.rs.DeleteSet("free")
		c.rs.AddMap(&Map{Name: "free", KeyType: TypeIPv4Addr, Elements: map[string]Verdict{"10.65.0.1": Accept()}})
	default:
		c.rs.DeleteSet("free")
		c.rs.AddMap(&Map{Name: "free", KeyType: TypeIfname, Elements: map[string]Verdict{"x": Drop()}})
	}
}

func (c *churn) editVerdict() {
	iface := fmt.Sprintf("e%d", c.rng.IntN(churnEndpoints))
	if v, ok := c.rs.Maps["from"].Elements[iface]; ok {
		if v.Kind == VerdictGoto {
			c.rs.Maps["from"].Elements[iface] = Jump(v.Chain)
		} else {
			c.rs.Maps["from"].Elements[iface] = Goto(v.Chain)
		}
		c.rs.TouchMap("from")
	}
}

func (c *churn) editBase() {
	c.rs.Chains["fwd"].Base.Priority = c.rng.IntN(3)
	c.rs.TouchChain("fwd")
}

// flipInterval replaces a set by one of another kind: its users are rewritten.
func (c *churn) flipInterval() {
	s := c.rs.Sets[fmt.Sprintf("s%d", c.rng.IntN(churnSets))]
	if s.Interval {
		s.Interval, s.Elements = false, []string{"10.65.0.1", "10.65.0.2/32"}
	} else {
		s.Interval, s.Elements = true, c.addrs(3)
	}
	c.rs.TouchSet(s.Name)
}

// cloneRuleset deep-copies rs, untracked.
func cloneRuleset(rs *Ruleset) *Ruleset {
	out := NewRuleset()
	for _, ch := range rs.Chains {
		c := &Chain{Name: ch.Name, Rules: copyRules(ch.Rules)}
		if ch.Base != nil {
			b := *ch.Base
			c.Base = &b
		}
		out.AddChain(c)
	}
	for _, s := range rs.Sets {
		out.AddSet(&Set{Name: s.Name, Type: s.Type, Interval: s.Interval, Elements: slices.Clone(s.Elements)})
	}
	for _, m := range rs.Maps {
		out.AddMap(&Map{Name: m.Name, KeyType: m.KeyType, Elements: maps.Clone(m.Elements)})
	}
	return out
}

// TestTrackedChurnMatchesFreshApply: a long random sequence of partial
// applies of one tracked ruleset always leaves exactly the table that a
// fresh full apply of the same ruleset makes, and a mirror whose indexes
// equal freshly built ones.
func TestTrackedChurnMatchesFreshApply(t *testing.T) {
	for seed := range uint64(4) {
		c := newChurn(seed)
		a, f := newTestApplier(t)
		partial := 0
		for step := range 400 {
			if c.rng.IntN(25) == 0 {
				a.RequestFullSync()
			}
			st := mustApply(t, a, c.rs)
			if !st.FullSync {
				partial++
			}
			checkSameAsFresh(t, f, cloneRuleset(c.rs))
			checkMirror(t, a.mirror)
			if t.Failed() {
				t.Fatalf("seed %d step %d", seed, step)
			}
			c.step()
		}
		if partial < 300 {
			t.Errorf("seed %d: only %d partial syncs", seed, partial)
		}
	}
}

// checkMirror compares the mirror's incremental bookkeeping with what it
// would be if built from scratch: set indexes, map elements and targets,
// the users index.
func checkMirror(t *testing.T, m *mirror) {
	t.Helper()
	for name, st := range m.sets {
		fresh, _, err := newSetState(st.typ, st.interval, st.raw)
		if err != nil {
			t.Fatalf("set %s: %v", name, err)
		}
		opts := cmp.AllowUnexported(setState{}, intervalIndex{}, span{}, parsedElem{}, element{}, setType{}, baseType{})
		if diff := cmp.Diff(fresh, st, opts, cmpopts.EquateEmpty(), cmp.Comparer(func(a, b *baseType) bool { return a == b })); diff != "" {
			t.Errorf("set %s differs from a fresh index (-fresh +got):\n%s", name, diff)
		}
	}
	for name, st := range m.maps {
		fresh, _, err := buildMapState(st.typ, &Map{Name: name, KeyType: st.typ.name, Elements: st.raw})
		if err != nil {
			t.Fatalf("map %s: %v", name, err)
		}
		opts := cmp.AllowUnexported(mapState{}, mapElement{}, element{}, setType{}, baseType{}, Verdict{})
		if diff := cmp.Diff(fresh, st, opts, cmp.Comparer(func(a, b *baseType) bool { return a == b })); diff != "" {
			t.Errorf("map %s differs from a fresh index (-fresh +got):\n%s", name, diff)
		}
	}
	fresh := newMirror()
	for name, st := range m.chains {
		fresh.putChain(name, st)
	}
	if diff := cmp.Diff(fresh.users, m.users, cmp.AllowUnexported(ref{})); diff != "" {
		t.Errorf("users index (-fresh +got):\n%s", diff)
	}
}

// TestTrackedApplyScope: a tracked ruleset applied again by the same
// Applier plans only what it reports; an unreported edit waits for the
// next full sync; another Applier or a full sync compares everything.
func TestTrackedApplyScope(t *testing.T) {
	rs := felixLike([]string{"cali1"}, "10.65.0.9")
	rs.Track()
	a, f := newTestApplier(t)
	mustApply(t, a, rs)

	rs.Chains["cali-fw-cali1"].Rules = rs.Chains["cali-fw-cali1"].Rules[:1] // not reported
	if st := mustApply(t, a, rs); st.Ops != 0 {
		t.Errorf("an unreported edit was planned: %+v", st)
	}
	rs.TouchChain("cali-fw-cali1")
	if st := mustApply(t, a, rs); st.ChainsRewritten != 1 || st.FullSync {
		t.Errorf("stats %+v, want one chain rewritten in a partial sync", st)
	}
	checkSameAsFresh(t, f, cloneRuleset(rs))

	rs.Sets["cali40s-fe"].Elements = []string{"10.65.0.10"} // not reported
	other, f2 := newTestApplier(t)
	mustApply(t, other, rs) // takes the journal
	checkSameAsFresh(t, f2, cloneRuleset(rs))
	rs.Sets["cali40s-fe"].Elements = []string{"10.65.0.11"}
	rs.TouchSet("cali40s-fe")
	if st := mustApply(t, a, rs); st.FullSync || st.ElementsAdded != 1 || st.ElementsRemoved != 1 {
		t.Errorf("after another Applier took the journal: %+v, want a partial sync comparing everything", st)
	}
	checkSameAsFresh(t, f, cloneRuleset(rs))
	a.RequestFullSync()
	rs.Sets["cali40s-fe"].Elements = []string{"10.65.0.12"} // not reported
	if st := mustApply(t, a, rs); !st.FullSync || st.ElementsAdded != 1 {
		t.Errorf("full sync: %+v, want the unreported edit found", st)
	}
	checkSameAsFresh(t, f, cloneRuleset(rs))
}

// TestTrackedInvalidChangeKeepsJournal: a reported change that fails
// validation is planned again, with whatever fixed it, on the next Apply.
func TestTrackedInvalidChangeKeepsJournal(t *testing.T) {
	rs := felixLike([]string{"cali1"}, "10.65.0.9")
	rs.Track()
	a, f := newTestApplier(t)
	mustApply(t, a, rs)
	rs.DeleteChain("cali-pi-gnp/allow-web") // still jumped to by the endpoint chains
	if _, err := a.Apply(context.Background(), rs); err == nil {
		t.Fatal("a dangling jump was accepted")
	}
	rs.Chains["cali-tw-cali1"].Rules = rs.Chains["cali-tw-cali1"].Rules[:1]
	rs.Chains["cali-fw-cali1"].Rules = rs.Chains["cali-fw-cali1"].Rules[:1]
	rs.TouchChain("cali-tw-cali1")
	rs.TouchChain("cali-fw-cali1")
	if st := mustApply(t, a, rs); st.ChainsDeleted != 1 || st.ChainsRewritten != 2 {
		t.Errorf("stats %+v, want the policy chain deleted and both endpoint chains rewritten", st)
	}
	checkSameAsFresh(t, f, cloneRuleset(rs))
}

// TestKernelTrackedChurn: the same random churn against the real kernel, in a namespace of
// its own: every partial sync leaves the table a fresh apply would make, and a full sync at
// the end finds nothing to repair.
func TestKernelTrackedChurn(t *testing.T) {
	ns := newNetNS(t)
	a, _ := ns.applier(t)
	c := newChurn(11)
	for step := range 120 {
		if st := ns.apply(t, a, c.rs); st.FullSync && step > 0 {
			t.Fatalf("step %d: a partial sync failed and was repaired by a full sync", step)
		}
		kernelMatchesFake(t, ns, cloneRuleset(c.rs))
		if t.Failed() {
			t.Fatalf("step %d", step)
		}
		c.step()
	}
	a.RequestFullSync()
	if st := ns.apply(t, a, c.rs); st.Ops != 0 {
		t.Errorf("full sync after churn: %+v, want nothing to repair", st)
	}
}
