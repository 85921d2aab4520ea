package kernel

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/fake"
	"github.com/calico-host/calico-host/pkg/nft/internal/nstest"
)

// world is a random desired state over a fixed universe of names: chains
// c0..c7 (a chain jumps only to higher-numbered ones, so there are no
// loops), sets s0..s3, one verdict map and a base chain using them all.
type world struct {
	rnd    *rand.Rand
	chains map[int][]nft.Rule
	sets   map[int][]nft.Element
	vmap   map[nft.Key]nft.Verdict
}

func newWorld(seed uint64) *world {
	return &world{rnd: rand.New(rand.NewPCG(seed, 1)), chains: map[int][]nft.Rule{}, sets: map[int][]nft.Element{}, vmap: map[nft.Key]nft.Verdict{}}
}

func chainName(i int) string { return fmt.Sprintf("c%d", i) }
func setName(i int) string   { return fmt.Sprintf("s%d", i) }

// mutate changes a few things at random, keeping the state valid.
func (w *world) mutate() {
	for range 1 + w.rnd.IntN(4) {
		switch w.rnd.IntN(5) {
		case 0:
			i := w.rnd.IntN(8)
			if _, ok := w.chains[i]; ok && w.rnd.IntN(3) == 0 && !w.chainUsed(i) {
				delete(w.chains, i)
			} else {
				w.chains[i] = w.rules(i)
			}
		case 1, 2:
			i := w.rnd.IntN(4)
			if _, ok := w.sets[i]; ok && w.rnd.IntN(4) == 0 && !w.setUsed(i) {
				delete(w.sets, i)
			} else {
				w.sets[i] = w.elements()
			}
		case 3, 4:
			k := nft.IfnameKey(fmt.Sprintf("cali%d", w.rnd.IntN(6)))
			if c := w.rnd.IntN(8); w.chains[c] != nil && w.rnd.IntN(4) != 0 {
				w.vmap[k] = nft.Goto(chainName(c))
			} else {
				delete(w.vmap, k)
			}
		}
	}
}

func (w *world) elements() []nft.Element {
	var out []nft.Element
	for range w.rnd.IntN(6) {
		a := netip.AddrFrom4([4]byte{10, 65, byte(w.rnd.IntN(4)), byte(w.rnd.IntN(256))})
		out = append(out, nft.PrefixElem(netip.PrefixFrom(a, 24+w.rnd.IntN(9))))
	}
	return out
}

// rules builds chain i's rules from a pool of expressions that refer only
// to existing sets and to existing higher-numbered chains.
func (w *world) rules(i int) []nft.Rule {
	var out []nft.Rule
	for range w.rnd.IntN(5) {
		var exprs []nft.Expr
		switch w.rnd.IntN(6) {
		case 0:
			exprs = append(exprs, nft.DPort(nft.ProtoTCP, nft.Port(uint16(w.rnd.IntN(3)+80)), nft.Port(443)))
		case 1:
			if s := w.rnd.IntN(4); w.sets[s] != nil {
				exprs = append(exprs, nft.SAddrInSet(nft.IPv4, setName(s)))
			}
		case 2:
			exprs = append(exprs, nft.CTStateIn(nft.CTStateEstablished), nft.Counter())
		case 3:
			exprs = append(exprs, nft.Not(nft.SAddr(netip.MustParsePrefix("10.66.0.0/16"))))
		case 4:
			exprs = append(exprs, nft.MarkMasked(0x10, 0x10))
		}
		verdict := nft.Expr(nft.Accept())
		if j := i + 1 + w.rnd.IntN(3); j < 8 && w.chains[j] != nil {
			verdict = nft.Jump(chainName(j))
		}
		out = append(out, nft.NewRule(append(exprs, verdict)...))
	}
	return out
}

func (w *world) chainUsed(c int) bool {
	for i, rules := range w.chains {
		for _, r := range rules {
			for _, rf := range r.Refs() {
				if rf.Kind == nft.RefChain && rf.Name == chainName(c) && i != c {
					return true
				}
			}
		}
	}
	for _, v := range w.vmap {
		if v.Chain == chainName(c) {
			return true
		}
	}
	return false
}

func (w *world) setUsed(s int) bool {
	for _, rules := range w.chains {
		for _, r := range rules {
			for _, rf := range r.Refs() {
				if rf.Kind == nft.RefSet && rf.Name == setName(s) {
					return true
				}
			}
		}
	}
	return false
}

// update puts into tb what changed in the world (and deletes what is gone).
func (w *world) update(t *testing.T, tb *nft.Table) {
	for i := range 8 {
		rules, ok := w.chains[i]
		switch cur := tb.Chain(chainName(i)); {
		case !ok && cur != nil:
			tb.DeleteChain(chainName(i))
		case ok && (cur == nil || !rulesEqual(cur.Rules, rules)):
			must(t, tb.PutChain(&nft.Chain{Name: chainName(i), Rules: append([]nft.Rule(nil), rules...)}))
		}
	}
	for i := range 4 {
		elems, ok := w.sets[i]
		switch cur := tb.Set(setName(i)); {
		case !ok && cur != nil:
			tb.DeleteSet(setName(i))
		case ok:
			must(t, tb.PutSet(&nft.Set{Name: setName(i), Type: nft.TypeIPv4Addr, Interval: true, Elements: append([]nft.Element(nil), elems...)}))
		}
	}
	m := &nft.Map{Name: "wl", Type: nft.TypeIfname, Elements: map[nft.Key]nft.Verdict{}}
	for k, v := range w.vmap {
		m.Elements[k] = v
	}
	must(t, tb.PutMap(m))
	if tb.Chain("fwd") == nil {
		must(t, tb.PutChain(&nft.Chain{Name: "fwd", Base: &nft.BaseChain{Type: nft.ChainFilter, Hook: nft.HookForward},
			Rules: []nft.Rule{nft.NewRule(nft.IIFNameVmap("wl"))}}))
	}
}

func rulesEqual(a, b []nft.Rule) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Equal(b[i]) {
			return false
		}
	}
	return true
}

// TestConvergence applies a random sequence of desired states to the fake
// and to the kernel (partial syncs, with full syncs now and then): after
// every step both hold exactly the desired tables.
func TestConvergence(t *testing.T) {
	ns := nstest.New(t)
	k := newBackend(t, ns)
	f := fake.New()
	seed := uint64(rand.Int64())
	t.Logf("seed %d", seed)
	w := newWorld(seed)
	kt, ft := nft.NewTable(nft.FamilyIP, "calico"), nft.NewTable(nft.FamilyIP, "calico")
	ka, fa := newApplier(t, k, kt), newApplier(t, f, ft)
	for step := range 60 {
		w.mutate()
		w.update(t, kt)
		w.update(t, ft)
		if step%10 == 9 {
			ka.RequestFullSync()
			fa.RequestFullSync()
		}
		applyOK(t, ka, kt)
		applyOK(t, fa, ft)
		want := nft.Dump(kt)
		if got := f.Dump(); got != want {
			t.Fatalf("step %d: the fake holds:\n%s", step, lineDiff(got, want))
		}
		if got := ns.List(t); got != nstest.Normalize(want) {
			t.Fatalf("step %d: the kernel holds:\n%s", step, lineDiff(got, nstest.Normalize(want)))
		}
	}
	if got, want := nft.Dump(readTable(t, k, kt.ID())), f.Dump(); got != want {
		t.Errorf("kernel read back differs from the fake:\n%s", lineDiff(got, want))
	}
}
