package nft_test

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/calico-host/calico-host/pkg/nft"
)

// Review of issue 23, point 2: the box normalization checked exhaustively, not on a window.
// Membership of a key in a union of boxes is constant on each cell of the grid cut, per field,
// at every box's first value and the value after its last (input and output boxes), so looking
// up one key per cell (its first corner) checks every key of the key space. The boxes are
// adversarial: up to 5 fields of every ordered type, full ranges (0.0.0.0/0, ::/0, ports
// 0-65535, every interface name), the smallest and largest values, values next to each other,
// interface name prefixes ("cali*") and nested, adjacent and duplicate copies.

// reviewTypes are the field types drawn from (interface names included: lists take them).
var reviewTypes = []nft.DataType{nft.TypeIPv4Addr, nft.TypeIPv6Addr, nft.TypeInetProto, nft.TypeInetService,
	nft.TypeEtherAddr, nft.TypeIfname}

// anchors are a field's values that boxes share, so that they overlap and touch.
func anchors(r *rand.Rand, size int) [][]byte {
	out := [][]byte{make([]byte, size), bytes.Repeat([]byte{0xff}, size)}
	for range 3 {
		v := make([]byte, size)
		for i := range v {
			v[i] = byte(r.IntN(256))
		}
		out = append(out, v)
	}
	return out
}

func plusOne(b []byte, d int) []byte {
	out := bytes.Clone(b)
	for ; d > 0; d-- {
		for i := len(out) - 1; i >= 0; i-- {
			if out[i]++; out[i] != 0 {
				break
			}
		}
	}
	return out
}

// ifnameSpan is a valid interface name range: one name or a prefix's names.
func ifnameSpan(r *rand.Rand) (lo, hi []byte) {
	names := []string{"cali", "cali0", "cali00000000001", "tap", "e", "eth0", "eth1", "ca"}
	n := names[r.IntN(len(names))]
	var e nft.Element
	switch r.IntN(3) {
	case 0:
		e = nft.IfnamePrefixElem(n)
	case 1:
		e = nft.IfnameElem(n)
	default: // every name (the kernel stores "*" as the whole range)
		return make([]byte, 16), bytes.Repeat([]byte{0xff}, 16)
	}
	l, h := e.Bounds()
	return l.Bytes(), h.Bytes()
}

// randomSpan is one field's range, built from the anchors.
func randomSpan(r *rand.Rand, t nft.DataType, an [][]byte) (lo, hi []byte) {
	if t == nft.TypeIfname {
		return ifnameSpan(r)
	}
	pick := func() []byte { return plusOne(an[r.IntN(len(an))], r.IntN(3)) } // (wraps past the largest)
	switch r.IntN(5) {
	case 0: // everything
		return make([]byte, len(an[0])), bytes.Repeat([]byte{0xff}, len(an[0]))
	case 1: // one value
		v := pick()
		return v, v
	case 2: // a prefix of an anchor
		v := pick()
		bits := r.IntN(len(v)*8 + 1)
		lo, hi := bytes.Clone(v), bytes.Clone(v)
		for i := range lo {
			keep := min(max(bits-i*8, 0), 8)
			lo[i] &^= byte(0xff >> keep)
			hi[i] |= byte(0xff >> keep)
		}
		return lo, hi
	}
	a, b := pick(), pick()
	if bytes.Compare(a, b) > 0 {
		a, b = b, a
	}
	return a, b
}

type reviewBox struct{ lo, hi [][]byte }

func (b reviewBox) elem() nft.Element {
	los, his := make([]nft.Key, len(b.lo)), make([]nft.Key, len(b.lo))
	for i := range b.lo {
		los[i], his[i] = nft.KeyFromBytes(b.lo[i]), nft.KeyFromBytes(b.hi[i])
	}
	if len(b.lo) == 1 {
		return nft.RangeElem(los[0], his[0])
	}
	return nft.RangeElem(nft.ConcatKey(los...), nft.ConcatKey(his...))
}

// randomReviewBoxes draws n boxes of types, half of them copies of earlier ones changed in one
// field (nested, adjacent, overlapping, the same, or widened to the whole field).
func randomReviewBoxes(r *rand.Rand, types []nft.DataType, n int) []reviewBox {
	ans := make([][][]byte, len(types))
	for f, t := range types {
		ans[f] = anchors(r, t.FieldLens()[0])
	}
	var out []reviewBox
	for range n {
		var b reviewBox
		if len(out) > 0 && r.IntN(2) == 0 {
			src := out[r.IntN(len(out))]
			b = reviewBox{slices.Clone(src.lo), slices.Clone(src.hi)}
			f := r.IntN(len(types))
			switch r.IntN(4) {
			case 0: // adjacent after, when there is room
				if next := plusOne(b.hi[f], 1); bytes.Compare(next, b.hi[f]) > 0 {
					b.lo[f], b.hi[f] = next, plusOne(next, r.IntN(3))
					if bytes.Compare(b.hi[f], b.lo[f]) < 0 {
						b.hi[f] = b.lo[f]
					}
				}
			case 1:
				b.lo[f], b.hi[f] = randomSpan(r, types[f], ans[f])
			case 2:
				size := len(b.lo[f])
				b.lo[f], b.hi[f] = make([]byte, size), bytes.Repeat([]byte{0xff}, size)
			}
		} else {
			for f, t := range types {
				lo, hi := randomSpan(r, t, ans[f])
				b.lo, b.hi = append(b.lo, lo), append(b.hi, hi)
			}
		}
		out = append(out, b)
	}
	return out
}

// boxOfElem splits an element into its fields' ranges (unpadded).
func boxOfElem(types []nft.DataType, e nft.Element) reviewBox {
	lo, hi := e.Bounds()
	var b reviewBox
	off := 0
	for _, t := range types {
		n := t.FieldLens()[0]
		b.lo, b.hi = append(b.lo, lo.Bytes()[off:off+n]), append(b.hi, hi.Bytes()[off:off+n])
		if len(types) > 1 {
			off += (n + 3) &^ 3
		} else {
			off += n
		}
	}
	return b
}

func (b reviewBox) holds(p [][]byte) bool {
	for f := range p {
		if bytes.Compare(p[f], b.lo[f]) < 0 || bytes.Compare(p[f], b.hi[f]) > 0 {
			return false
		}
	}
	return true
}

// cells lists, per field, the first value of every cell cut by the boxes.
func cells(nf int, boxes []reviewBox) [][][]byte {
	out := make([][][]byte, nf)
	for f := range nf {
		cuts := [][]byte{make([]byte, len(boxes[0].lo[f]))}
		for _, b := range boxes {
			cuts = append(cuts, b.lo[f])
			if next := plusOne(b.hi[f], 1); bytes.Compare(next, b.hi[f]) > 0 {
				cuts = append(cuts, next)
			}
		}
		slices.SortFunc(cuts, bytes.Compare)
		out[f] = slices.CompactFunc(cuts, bytes.Equal)
	}
	return out
}

// checkExact looks up the first key of every cell in the input and the output boxes.
func checkExact(t *testing.T, types []nft.DataType, in []reviewBox, got []nft.Element, want func(p [][]byte) bool) bool {
	t.Helper()
	typ := nft.Concat(types...)
	var outBoxes []reviewBox
	for _, e := range got {
		outBoxes = append(outBoxes, boxOfElem(types, e))
	}
	grid := cells(len(types), append(slices.Clone(in), outBoxes...))
	total := 1
	for _, g := range grid {
		total *= len(g)
	}
	if total > 300000 {
		return false // too many cells for one round
	}
	idx := make([]int, len(types))
	p := make([][]byte, len(types))
	for {
		for f := range p {
			p[f] = grid[f][idx[f]]
		}
		n := 0
		for _, b := range outBoxes {
			if b.holds(p) {
				n++
			}
		}
		if n > 1 || (n == 1) != want(p) {
			var ins []nft.Element
			for _, b := range in {
				ins = append(ins, b.elem())
			}
			t.Fatalf("%s: key %x in %d output boxes, in the input %v\ninput:  %s\noutput: %s", typ, p, n, want(p),
				elems(typ, ins), elems(typ, got))
		}
		f := len(idx) - 1
		for ; f >= 0; f-- {
			if idx[f]++; idx[f] < len(grid[f]) {
				break
			}
			idx[f] = 0
		}
		if f < 0 {
			return true
		}
	}
}

func anyHolds(bs []reviewBox) func([][]byte) bool {
	return func(p [][]byte) bool { return slices.ContainsFunc(bs, func(b reviewBox) bool { return b.holds(p) }) }
}

func randomTypes(r *rand.Rand) []nft.DataType {
	types := make([]nft.DataType, 1+r.IntN(5))
	for i := range types {
		types[i] = reviewTypes[r.IntN(len(reviewTypes))]
	}
	if len(types) == 1 && types[0] == nft.TypeIfname {
		types[0] = nft.TypeIPv6Addr
	}
	return types
}

// TestReviewBoxesExhaustive: normalized lists hold exactly the keys of their input, once each,
// for every key of the key space, and normalizing again changes nothing.
func TestReviewBoxesExhaustive(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 2))
	checked := 0
	for round := 0; round < 4000; round++ {
		types := randomTypes(r)
		in := randomReviewBoxes(r, types, 1+r.IntN(7))
		typ := nft.Concat(types...)
		var elemsIn []nft.Element
		for _, b := range in {
			elemsIn = append(elemsIn, b.elem())
		}
		got, err := nft.NormalizeElements(typ, true, slices.Clone(elemsIn))
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		if checkExact(t, types, in, got, anyHolds(in)) {
			checked++
		}
		if again, _ := nft.NormalizeElements(typ, true, slices.Clone(got)); !slices.Equal(again, got) {
			t.Fatalf("%s: not idempotent:\n%s\n%s", typ, elems(typ, got), elems(typ, again))
		}
	}
	t.Logf("%d rounds checked on every cell", checked)
}

// TestReviewBoxesUpdateExhaustive: UpdateSet (old less del plus add) on named concatenated
// interval sets of ordered types, checked on every cell.
func TestReviewBoxesUpdateExhaustive(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 3))
	checked := 0
	for round := 0; round < 3000; round++ {
		var types []nft.DataType
		for _, ty := range randomTypes(r) {
			if ty == nft.TypeIfname {
				ty = nft.TypeInetService
			}
			types = append(types, ty)
		}
		if len(types) == 1 {
			types = append(types, nft.TypeInetProto)
		}
		typ := nft.Concat(types...)
		all := randomReviewBoxes(r, types, 3+r.IntN(8))
		nOld := 1 + r.IntN(len(all)-2)
		nDel := r.IntN(len(all) - nOld)
		old, del, add := all[:nOld], all[nOld:nOld+nDel], all[nOld+nDel:]
		toElems := func(bs []reviewBox) []nft.Element {
			var out []nft.Element
			for _, b := range bs {
				out = append(out, b.elem())
			}
			return out
		}
		tb := nft.NewTable(nft.FamilyInet, "t")
		if err := tb.PutSet(&nft.Set{Name: "s", Type: typ, Interval: true, Elements: toElems(old)}); err != nil {
			t.Fatal(err)
		}
		if err := tb.UpdateSet("s", toElems(add), toElems(del)); err != nil {
			t.Fatal(err)
		}
		inOld, inDel, inAdd := anyHolds(old), anyHolds(del), anyHolds(add)
		if checkExact(t, types, all, tb.Set("s").Elements, func(p [][]byte) bool { return inAdd(p) || inOld(p) && !inDel(p) }) {
			checked++
		}
	}
	t.Logf("%d rounds checked on every cell", checked)
}
