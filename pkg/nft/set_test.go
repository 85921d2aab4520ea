package nft_test

import (
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/calico-host/calico-host/pkg/nft"
)

func elems(t nft.DataType, es []nft.Element) string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = t.FormatElement(e)
	}
	return strings.Join(parts, ", ")
}

func rangeOf(lo, hi string) nft.Element {
	return nft.RangeElem(nft.AddrKey(a(lo)), nft.AddrKey(a(hi)))
}

// TestPutSetNormalizes: an interval set holds the union of its elements as
// sorted, disjoint, non-adjacent ranges; other sets are sorted and
// deduplicated; elements of the wrong type are refused.
func TestPutSetNormalizes(t *testing.T) {
	tb := nft.NewTable(nft.FamilyIP, "t")
	s := &nft.Set{Name: "s", Type: nft.TypeIPv4Addr, Interval: true, Elements: []nft.Element{
		nft.PrefixElem(p("10.0.1.0/24")), nft.AddrElem(a("10.0.0.255")), nft.PrefixElem(p("10.0.0.0/25")),
		nft.PrefixElem(p("10.0.0.128/25")), nft.AddrElem(a("192.168.0.1")), nft.PrefixElem(p("10.0.1.0/26")),
	}}
	if err := tb.PutSet(s); err != nil {
		t.Fatal(err)
	}
	if got, want := elems(s.Type, s.Elements), "10.0.0.0/23, 192.168.0.1"; got != want {
		t.Errorf("interval set: %s, want %s", got, want)
	}
	h := &nft.Set{Name: "h", Type: nft.TypeInetService, Elements: []nft.Element{nft.PortElem(80), nft.PortElem(22), nft.PortElem(80)}}
	if err := tb.PutSet(h); err != nil {
		t.Fatal(err)
	}
	if got, want := elems(h.Type, h.Elements), "22, 80"; got != want {
		t.Errorf("plain set: %s, want %s", got, want)
	}
	for _, bad := range []*nft.Set{
		{Name: "b1", Type: nft.TypeIPv4Addr, Elements: []nft.Element{nft.AddrElem(a("fd5c::1"))}},
		{Name: "b2", Type: nft.TypeIPv4Addr, Elements: []nft.Element{nft.PrefixElem(p("10.0.0.0/8"))}},
		{Name: "b3", Type: nft.TypeIfname, Interval: true},
		{Name: "b4", Type: nft.Concat(nft.TypeIPv4Addr, nft.TypeInetService), Elements: []nft.Element{nft.AddrElem(a("10.0.0.1"))}},
		{Name: "bad name", Type: nft.TypeIPv4Addr},
		{Name: strings.Repeat("x", 256), Type: nft.TypeIPv4Addr},
		{Name: "b5"},
	} {
		if err := tb.PutSet(bad); err == nil {
			t.Errorf("set %.20s accepted", bad.Name)
		}
	}
}

// TestUpdateSet: adding merges, removing subtracts even from a merged
// range, and the old Set is left as it was (the Applier may hold it).
func TestUpdateSet(t *testing.T) {
	tb := nft.NewTable(nft.FamilyIP, "t")
	old := &nft.Set{Name: "s", Type: nft.TypeIPv4Addr, Interval: true, Elements: []nft.Element{nft.PrefixElem(p("10.0.0.0/24"))}}
	if err := tb.PutSet(old); err != nil {
		t.Fatal(err)
	}
	err := tb.UpdateSet("s", []nft.Element{nft.AddrElem(a("10.0.1.0")), nft.AddrElem(a("10.0.3.1"))},
		[]nft.Element{rangeOf("10.0.0.10", "10.0.0.19"), nft.AddrElem(a("10.0.0.255"))})
	if err != nil {
		t.Fatal(err)
	}
	got := elems(nft.TypeIPv4Addr, tb.Set("s").Elements)
	want := "10.0.0.0-10.0.0.9, 10.0.0.20-10.0.0.254, 10.0.1.0, 10.0.3.1"
	if got != want {
		t.Errorf("after update: %s, want %s", got, want)
	}
	if got := elems(nft.TypeIPv4Addr, old.Elements); got != "10.0.0.0/24" {
		t.Errorf("the old set changed: %s", got)
	}
	if tb.Set("s") == old {
		t.Error("UpdateSet modified the set in place")
	}
}

func TestDiffElements(t *testing.T) {
	x := []nft.Element{nft.PortElem(1), nft.PortRangeElem(5, 9), nft.PortElem(20)}
	y := []nft.Element{nft.PortElem(1), nft.PortRangeElem(5, 10), nft.PortElem(30)}
	add, del := nft.DiffElements(x, y)
	if got := elems(nft.TypeInetService, add); got != "5-10, 30" {
		t.Errorf("add %s", got)
	}
	if got := elems(nft.TypeInetService, del); got != "5-9, 20" {
		t.Errorf("del %s", got)
	}
}

func TestDiffMaps(t *testing.T) {
	k1, k2, k3 := nft.IfnameKey("a"), nft.IfnameKey("b"), nft.IfnameKey("c")
	x := map[nft.Key]nft.Verdict{k1: nft.Accept(), k2: nft.Goto("x")}
	y := map[nft.Key]nft.Verdict{k2: nft.Goto("y"), k3: nft.Drop()}
	put, del := nft.DiffMaps(x, y)
	if len(put) != 2 || put[0].Key != k2 || put[1].Key != k3 || len(del) != 2 || del[0] != k1 || del[1] != k2 {
		t.Errorf("put %v del %v", put, del)
	}
}

// TestValidate: references must resolve to objects of the right kind and
// key type; jumps must not target base chains.
func TestValidate(t *testing.T) {
	tb := nft.NewTable(nft.FamilyIP, "t")
	must(tb.PutSet(&nft.Set{Name: "s6", Type: nft.TypeIPv6Addr}))
	must(tb.PutChain(&nft.Chain{Name: "in", Base: &nft.BaseChain{Type: nft.ChainFilter, Hook: nft.HookInput}}))
	must(tb.PutChain(&nft.Chain{Name: "c", Rules: []nft.Rule{
		nft.NewRule(nft.Jump("missing")),
		nft.NewRule(nft.SAddrInSet(nft.IPv4, "s6")),
		nft.NewRule(nft.Jump("in")),
		nft.NewRule(nft.IIFNameVmap("nomap")),
		nft.NewRule(nft.Accept()),
	}}))
	err := tb.Validate()
	ce, ok := err.(*nft.CommitError)
	if !ok || len(ce.Objects) != 4 {
		t.Fatalf("Validate = %v", err)
	}
	for i, want := range []string{"chain missing does not exist", "has type ipv6_addr", "base chain", "map nomap does not exist"} {
		if o := ce.Objects[i]; o.Object.Rule != i || !strings.Contains(o.Err.Error(), want) {
			t.Errorf("error %d: %v, want rule %d: %q", i, o, i, want)
		}
	}
	if !tb.Referenced(nft.RefChain, "missing") || tb.Referenced(nft.RefChain, "c") {
		t.Error("reference index")
	}
	tb.DeleteChain("c")
	if tb.Referenced(nft.RefChain, "missing") {
		t.Error("reference index after delete")
	}
}

// TestPutChainChecks: names, hooks and base chain types are checked when
// put; comments are made safe.
func TestPutChainChecks(t *testing.T) {
	tb := nft.NewTable(nft.FamilyARP, "t")
	for _, c := range []*nft.Chain{
		{Name: "a", Base: &nft.BaseChain{Type: nft.ChainFilter, Hook: nft.HookPrerouting}},
		{Name: "b", Base: &nft.BaseChain{Type: nft.ChainNAT, Hook: nft.HookInput}},
		{Name: "c d"},
	} {
		if err := tb.PutChain(c); err == nil {
			t.Errorf("chain %s accepted", c.Name)
		}
	}
	c := &nft.Chain{Name: "ok", Rules: []nft.Rule{nft.NewRule(nft.Accept()).WithComment("a \"quoted\"\ncomment")}}
	must(tb.PutChain(c))
	if got := c.Rules[0].Comment; got != "a _quoted__comment" {
		t.Errorf("comment %q", got)
	}
}

// TestUpdateSetAgainstModel: random adds and removals of addresses and ranges in a small
// address space, applied with UpdateSet, always leave the union a model of single addresses
// holds (interval sets); and random adds and removals in a concatenated set leave exactly the
// model's elements.
func TestUpdateSetAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	addr := func(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)}) }
	randRange := func() (int, int, nft.Element) {
		lo := rng.IntN(600)
		hi := min(lo+rng.IntN(4)*rng.IntN(20), 599)
		if lo == hi {
			return lo, hi, nft.AddrElem(addr(lo))
		}
		return lo, hi, nft.RangeElem(nft.AddrKey(addr(lo)), nft.AddrKey(addr(hi)))
	}
	tb := nft.NewTable(nft.FamilyIP, "t")
	if err := tb.PutSet(&nft.Set{Name: "s", Type: nft.TypeIPv4Addr, Interval: true}); err != nil {
		t.Fatal(err)
	}
	model := map[int]bool{}
	for step := range 2000 {
		var add, del []nft.Element
		for range rng.IntN(3) {
			lo, hi, e := randRange()
			del = append(del, e)
			for i := lo; i <= hi; i++ {
				delete(model, i)
			}
		}
		for range rng.IntN(3) {
			lo, hi, e := randRange()
			add = append(add, e)
			for i := lo; i <= hi; i++ {
				model[i] = true
			}
		}
		if err := tb.UpdateSet("s", add, del); err != nil {
			t.Fatal(err)
		}
		var want []nft.Element // the model's maximal runs
		for i := 0; i < 600; i++ {
			if !model[i] {
				continue
			}
			j := i
			for j+1 < 600 && model[j+1] {
				j++
			}
			want = append(want, nft.RangeElem(nft.AddrKey(addr(i)), nft.AddrKey(addr(j))))
			i = j
		}
		if got, w := elems(nft.TypeIPv4Addr, tb.Set("s").Elements), elems(nft.TypeIPv4Addr, want); got != w {
			t.Fatalf("step %d: %s\nwant %s", step, got, w)
		}
	}
	typ := nft.Concat(nft.TypeIPv4Addr, nft.TypeInetService)
	if err := tb.PutSet(&nft.Set{Name: "c", Type: typ}); err != nil {
		t.Fatal(err)
	}
	cmodel := map[nft.Element]bool{}
	key := func() nft.Element {
		return nft.ConcatElem(nft.AddrElem(addr(rng.IntN(30))), nft.PortElem(uint16(rng.IntN(3))))
	}
	for step := range 2000 {
		var add, del []nft.Element
		for range rng.IntN(3) {
			e := key()
			del = append(del, e)
			delete(cmodel, e)
		}
		for range rng.IntN(3) {
			e := key()
			add = append(add, e)
			cmodel[e] = true
		}
		if err := tb.UpdateSet("c", add, del); err != nil {
			t.Fatal(err)
		}
		got := tb.Set("c").Elements
		sorted := slices.Clone(got)
		nft.SortElements(sorted)
		if len(got) != len(cmodel) || !slices.Equal(sorted, got) {
			t.Fatalf("step %d: %d elements (sorted %t), want %d", step, len(got), slices.Equal(sorted, got), len(cmodel))
		}
		for _, e := range got {
			if !cmodel[e] {
				t.Fatalf("step %d: %s is not in the model", step, typ.FormatElement(e))
			}
		}
	}
}

// TestUpdateMap: UpdateMap puts a copy with the changes and keeps the references of the
// table's verdicts right (an element changed to another chain moves its reference); it refuses
// a key of the wrong length.
func TestUpdateMap(t *testing.T) {
	tb := nft.NewTable(nft.FamilyIP, "t")
	k1, k2 := nft.IfnameKey("a"), nft.IfnameKey("b")
	old := &nft.Map{Name: "m", Type: nft.TypeIfname, Elements: map[nft.Key]nft.Verdict{k1: nft.Goto("x"), k2: nft.Goto("x")}}
	if err := tb.PutMap(old); err != nil {
		t.Fatal(err)
	}
	if err := tb.UpdateMap("m", map[nft.Key]nft.Verdict{k1: nft.Goto("y")}, []nft.Key{k2}); err != nil {
		t.Fatal(err)
	}
	if !tb.Referenced(nft.RefChain, "y") || tb.Referenced(nft.RefChain, "x") || len(tb.Map("m").Elements) != 1 || len(old.Elements) != 2 {
		t.Errorf("references x %t y %t; elements %v (old %v)", tb.Referenced(nft.RefChain, "x"), tb.Referenced(nft.RefChain, "y"),
			tb.Map("m").Elements, old.Elements)
	}
	if err := tb.UpdateMap("m", map[nft.Key]nft.Verdict{nft.PortKey(1): nft.Accept()}, nil); err == nil {
		t.Error("a key of the wrong length was accepted")
	}
}

// TestBadElementNamed: an element that does not fit its set's type is named in the error (its
// bytes), so that a refusal before sending says which one; an empty one is named as such.
func TestBadElementNamed(t *testing.T) {
	for _, c := range []struct {
		el   nft.Element
		want string
	}{
		{nft.AddrElem(netip.MustParseAddr("10.65.0.1")), "element 0x0a410001 of 4 bytes for type ipv6_addr"},
		{nft.ConcatElem(nft.IfnameElem(""), nft.AddrElem(netip.MustParseAddr("10.65.0.1"))), "element (empty) of 0 bytes"},
	} {
		_, err := nft.NormalizeElements(nft.TypeIPv6Addr, false, []nft.Element{c.el})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want it to contain %q", err, c.want)
		}
	}
}

// TestUpdateSetRandom: UpdateSet on plain and interval sets of ports gives the old elements less
// del plus add (add wins), sorted and without duplicates, and leaves the old Set's elements as
// they were (a mirror may hold them).
func TestUpdateSetRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 6))
	for round := range 2000 {
		interval := round%2 == 1
		pick := func(n int) map[uint16]bool {
			out := map[uint16]bool{}
			for range n {
				out[uint16(r.IntN(64))] = true
			}
			return out
		}
		old, del, add := pick(r.IntN(40)), pick(r.IntN(8)), pick(r.IntN(8))
		toElems := func(m map[uint16]bool) []nft.Element {
			var out []nft.Element
			for p := range m {
				out = append(out, nft.PortKey(p).Elem())
			}
			return out
		}
		tb := nft.NewTable(nft.FamilyIP, "t")
		if err := tb.PutSet(&nft.Set{Name: "s", Type: nft.TypeInetService, Interval: interval, Elements: toElems(old)}); err != nil {
			t.Fatal(err)
		}
		before := tb.Set("s")
		kept := slices.Clone(before.Elements)
		if err := tb.UpdateSet("s", toElems(add), toElems(del)); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(before.Elements, kept) {
			t.Fatalf("round %d: UpdateSet changed the old set's elements", round)
		}
		want := map[uint16]bool{}
		for p := range 64 {
			want[uint16(p)] = add[uint16(p)] || old[uint16(p)] && !del[uint16(p)]
		}
		wantSet := &nft.Set{Name: "w", Type: nft.TypeInetService, Interval: interval}
		for p, in := range want {
			if in {
				wantSet.Elements = append(wantSet.Elements, nft.PortKey(p).Elem())
			}
		}
		w := nft.NewTable(nft.FamilyIP, "w")
		if err := w.PutSet(wantSet); err != nil {
			t.Fatal(err)
		}
		if got, exp := elems(nft.TypeInetService, tb.Set("s").Elements), elems(nft.TypeInetService, w.Set("w").Elements); got != exp {
			t.Fatalf("round %d (interval %v): got %s, want %s", round, interval, got, exp)
		}
	}
}
