package nft_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"

	"github.com/calico-host/calico-host/pkg/nft"
)

// The normalization of concatenated interval sets is checked against a
// brute-force model: every field takes its values in a small window (at the
// bottom, in the middle or at the top of its range, so that ranges ending at
// the largest value are covered), and every key of the windows' product is
// looked up in the input elements and in the normalized ones.

// boxSpace is a concatenated type with a window of values per field.
type boxSpace struct {
	t     nft.DataType
	bases [][]byte // per field: the window's first value (unpadded)
	width int      // values per window
}

func (s boxSpace) String() string { return fmt.Sprintf("%s/%d", s.t, s.width) }

// value is the i-th value of field f's window.
func (s boxSpace) value(f, i int) []byte {
	v := bytes.Clone(s.bases[f])
	carry := i
	for j := len(v) - 1; j >= 0 && carry > 0; j-- {
		sum := int(v[j]) + carry
		v[j], carry = byte(sum), sum>>8
	}
	return v
}

// key joins one value per field (indices into the windows), padded.
func (s boxSpace) key(idx []int) nft.Key {
	parts := make([]nft.Key, len(idx))
	for f, i := range idx {
		parts[f] = nft.KeyFromBytes(s.value(f, i))
	}
	return nft.ConcatKey(parts...)
}

// elem is the box of window ranges lo[f]..hi[f].
func (s boxSpace) elem(lo, hi []int) nft.Element {
	return nft.RangeElem(s.key(lo), s.key(hi))
}

// contains is the model: e holds k when each field of k is within e's
// range for that field (fields padded to 4 bytes, compared as bytes).
func contains(t nft.DataType, e nft.Element, k nft.Key) bool {
	lo, hi := e.Bounds()
	off := 0
	for _, n := range t.FieldLens() {
		f := k.Raw()[off : off+n]
		if f < lo.Raw()[off:off+n] || f > hi.Raw()[off:off+n] {
			return false
		}
		off += (n + 3) &^ 3
	}
	return true
}

// points calls fn with every key of the windows' product.
func (s boxSpace) points(fn func(nft.Key)) {
	idx := make([]int, len(s.bases))
	for {
		fn(s.key(idx))
		f := len(idx) - 1
		for ; f >= 0; f-- {
			if idx[f]++; idx[f] < s.width {
				break
			}
			idx[f] = 0
		}
		if f < 0 {
			return
		}
	}
}

func spaces() []boxSpace {
	v4 := func(s string) []byte { return netip.MustParseAddr(s).AsSlice() }
	ifn := func(s string) []byte { return nft.IfnameKey(s).Bytes() }
	port := func(p uint16) []byte { return nft.PortKey(p).Bytes() }
	return []boxSpace{
		{nft.Concat(nft.TypeIPv4Addr, nft.TypeInetProto, nft.TypeInetService), [][]byte{v4("10.65.0.0"), {6}, port(20)}, 6},
		{nft.Concat(nft.TypeIPv4Addr, nft.TypeInetProto, nft.TypeInetService), [][]byte{v4("255.255.255.250"), {250}, port(65530)}, 6},
		{nft.Concat(nft.TypeIPv6Addr, nft.TypeInetProto, nft.TypeInetService), [][]byte{v4in6("fd5c::"), {0}, port(0)}, 6},
		{nft.Concat(nft.TypeIfname, nft.TypeIPv4Addr), [][]byte{ifn("cali0000000000a"), v4("10.65.0.0")}, 16},
		{nft.Concat(nft.TypeIfname, nft.TypeIPv6Addr), [][]byte{ifn("tap0"), v4in6("ffff:ffff:ffff:ffff:ffff:ffff:ffff:fff0")}, 16},
		{nft.Concat(nft.TypeIPv4Addr, nft.TypeInetService), [][]byte{v4("0.0.0.0"), port(0)}, 16},
	}
}

func v4in6(s string) []byte { return netip.MustParseAddr(s).AsSlice() }

// randomBoxes makes n elements of s: random boxes, and duplicates, nested,
// overlapping and adjacent copies of earlier ones.
func randomBoxes(r *rand.Rand, s boxSpace, n int) []nft.Element {
	type bx struct{ lo, hi []int }
	var made []bx
	nf := len(s.bases)
	for range n {
		b := bx{make([]int, nf), make([]int, nf)}
		if len(made) > 0 && r.IntN(2) == 0 {
			src := made[r.IntN(len(made))]
			copy(b.lo, src.lo)
			copy(b.hi, src.hi)
			f := r.IntN(nf)
			switch r.IntN(4) {
			case 0: // duplicate
			case 1: // nested
				b.lo[f] += r.IntN(b.hi[f] - b.lo[f] + 1)
				b.hi[f] = b.lo[f] + r.IntN(b.hi[f]-b.lo[f]+1)
			case 2: // adjacent after
				if b.hi[f]+1 < s.width {
					w := b.hi[f] - b.lo[f]
					b.lo[f] = b.hi[f] + 1
					b.hi[f] = min(b.lo[f]+w, s.width-1)
				}
			case 3: // overlapping
				b.hi[f] = min(b.hi[f]+1+r.IntN(s.width), s.width-1)
			}
		} else {
			for f := range nf {
				b.lo[f] = r.IntN(s.width)
				b.hi[f] = b.lo[f]
				if r.IntN(3) > 0 {
					b.hi[f] += r.IntN(s.width - b.lo[f])
				}
			}
		}
		made = append(made, b)
	}
	out := make([]nft.Element, len(made))
	for i, b := range made {
		out[i] = s.elem(b.lo, b.hi)
	}
	return out
}

// normalized is what a concatenated interval set or list of type typ holds
// for elems.
func normalized(t *testing.T, typ nft.DataType, elems []nft.Element) []nft.Element {
	t.Helper()
	out, err := nft.NormalizeElements(typ, true, slices.Clone(elems))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkBoxes compares the normalized elements with the model on every key:
// each key is in one normalized element at most, and in one exactly when
// want says so.
func checkBoxes(t *testing.T, s boxSpace, got []nft.Element, want func(nft.Key) bool) {
	t.Helper()
	if !slices.IsSortedFunc(got, compareElements) {
		t.Fatalf("%s: not sorted: %s", s, elems(s.t, got))
	}
	s.points(func(k nft.Key) {
		n := 0
		for _, e := range got {
			if contains(s.t, e, k) {
				n++
			}
			if s.t.Contains(e, k) != contains(s.t, e, k) {
				t.Fatalf("%s: DataType.Contains(%s, %s) disagrees with the model", s, s.t.FormatElement(e), s.t.FormatKey(k))
			}
		}
		switch {
		case n > 1:
			t.Fatalf("%s: key %s is in %d normalized elements: %s", s, s.t.FormatKey(k), n, elems(s.t, got))
		case (n == 1) != want(k):
			t.Fatalf("%s: key %s: in the normalized set %v, in the input %v\nnormalized: %s", s, s.t.FormatKey(k), n == 1, want(k), elems(s.t, got))
		}
	})
}

func compareElements(a, b nft.Element) int {
	alo, ahi := a.Bounds()
	blo, bhi := b.Bounds()
	if c := bytes.Compare(alo.Bytes(), blo.Bytes()); c != 0 {
		return c
	}
	return bytes.Compare(ahi.Bytes(), bhi.Bytes())
}

func inAny(t nft.DataType, es []nft.Element) func(nft.Key) bool {
	return func(k nft.Key) bool {
		return slices.ContainsFunc(es, func(e nft.Element) bool { return contains(t, e, k) })
	}
}

// TestConcatIntervalsExact: for random overlapping, nested, adjacent and
// duplicate boxes of both IP versions, the normalized set holds exactly the
// keys of the input, as disjoint boxes; normalizing it again, or
// normalizing the same keys given differently (shuffled, split), gives the
// same elements.
func TestConcatIntervalsExact(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, s := range spaces() {
		for round := range 150 {
			in := randomBoxes(r, s, 1+r.IntN(12))
			got := normalized(t, s.t, in)
			checkBoxes(t, s, got, inAny(s.t, in))
			if again := normalized(t, s.t, got); !slices.Equal(again, got) {
				t.Fatalf("%s round %d: not idempotent:\n%s\n%s", s, round, elems(s.t, got), elems(s.t, again))
			}
			// The same keys as singles and ranges in another order.
			var other []nft.Element
			s.points(func(k nft.Key) {
				if inAny(s.t, in)(k) {
					other = append(other, k.Elem())
				}
			})
			r.Shuffle(len(other), func(i, j int) { other[i], other[j] = other[j], other[i] })
			if canon := normalized(t, s.t, append(other, got...)); !slices.Equal(canon, got) {
				t.Fatalf("%s round %d: the same keys normalize differently:\n%s\n%s", s, round, elems(s.t, got), elems(s.t, canon))
			}
		}
	}
}

// TestConcatIntervalsUpdate: UpdateSet on a concatenated interval set
// removes exactly the deleted keys (even from merged boxes) and adds the
// added ones, as the model says.
func TestConcatIntervalsUpdate(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, s := range spaces() {
		if !s.t.Ordered() {
			continue // no named interval set of that type
		}
		for range 100 {
			old, add, del := randomBoxes(r, s, 1+r.IntN(8)), randomBoxes(r, s, r.IntN(4)), randomBoxes(r, s, r.IntN(4))
			tb := nft.NewTable(nft.FamilyInet, "t")
			if err := tb.PutSet(&nft.Set{Name: "s", Type: s.t, Interval: true, Elements: slices.Clone(old)}); err != nil {
				t.Fatal(err)
			}
			if err := tb.UpdateSet("s", add, del); err != nil {
				t.Fatal(err)
			}
			inOld, inAdd, inDel := inAny(s.t, old), inAny(s.t, add), inAny(s.t, del)
			got := tb.Set("s").Elements
			checkBoxes(t, s, got, func(k nft.Key) bool { return inAdd(k) || inOld(k) && !inDel(k) })
			if again := normalized(t, s.t, got); !slices.Equal(again, got) {
				t.Fatalf("%s: an updated set is not in canonical form:\n%s\n%s", s, elems(s.t, got), elems(s.t, again))
			}
		}
	}
}

// TestConcatIntervalsShapes: the sets we build from user data normalize
// without growing: an interface's nested spoofing prefixes, nested
// failsafe networks of one port, and two ports on nested networks.
func TestConcatIntervalsShapes(t *testing.T) {
	ifaddr := nft.Concat(nft.TypeIfname, nft.TypeIPv4Addr)
	netport := nft.Concat(nft.TypeIPv4Addr, nft.TypeInetProto, nft.TypeInetService)
	spoof := func(iface, prefix string) nft.Element {
		return nft.ConcatElem(nft.IfnameElem(iface), nft.PrefixElem(p(prefix)))
	}
	fs := func(prefix string, proto uint8, port uint16) nft.Element {
		return nft.ConcatElem(nft.PrefixElem(p(prefix)), nft.ProtoKey(proto).Elem(), nft.PortElem(port))
	}
	for _, tc := range []struct {
		typ  nft.DataType
		in   []nft.Element
		want string
	}{
		{ifaddr, []nft.Element{spoof("caliA", "10.0.0.0/8"), spoof("caliA", "10.1.0.0/16"), spoof("caliB", "10.1.0.0/16")},
			`"caliA" . 10.0.0.0/8, "caliB" . 10.1.0.0/16`},
		{ifaddr, []nft.Element{spoof("caliA", "10.1.0.0/16"), spoof("caliA", "10.0.0.0/16"), spoof("caliA", "10.2.0.0/15")},
			`"caliA" . 10.0.0.0/14`},
		{netport, []nft.Element{fs("10.0.0.0/8", 6, 22), fs("10.1.0.0/16", 6, 22), fs("10.1.2.3/32", 6, 22)},
			`10.0.0.0/8 . tcp . 22`},
		{netport, []nft.Element{fs("10.0.0.0/8", 6, 22), fs("10.1.0.0/16", 6, 80), fs("10.1.0.0/16", 17, 80)},
			`10.0.0.0/8 . tcp . 22, 10.1.0.0/16 . tcp . 80, 10.1.0.0/16 . udp . 80`},
	} {
		got := normalized(t, tc.typ, tc.in)
		if s := elems(tc.typ, got); s != tc.want {
			t.Errorf("%s: got %s, want %s", elems(tc.typ, tc.in), s, tc.want)
		}
		if len(got) > len(tc.in) {
			t.Errorf("%s: %d elements from %d", elems(tc.typ, tc.in), len(got), len(tc.in))
		}
	}
}

// FuzzConcatIntervals checks the normalization of arbitrary boxes of
// address . protocol . port against the model (run longer with
// go test -fuzz FuzzConcatIntervals ./pkg/nft).
func FuzzConcatIntervals(f *testing.F) {
	f.Add([]byte{0, 5, 0, 0, 0, 5, 1, 2, 0, 1, 1, 1})
	f.Add([]byte{0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3})
	s := spaces()[1] // the top window: ranges up to the largest keys
	f.Fuzz(func(t *testing.T, data []byte) {
		var in []nft.Element
		for ; len(data) >= 6 && len(in) < 24; data = data[6:] {
			lo, hi := make([]int, 3), make([]int, 3)
			for fi := range 3 {
				a, b := int(data[2*fi])%s.width, int(data[2*fi+1])%s.width
				lo[fi], hi[fi] = min(a, b), max(a, b)
			}
			in = append(in, s.elem(lo, hi))
		}
		if len(in) == 0 {
			return
		}
		got := normalized(t, s.t, in)
		checkBoxes(t, s, got, inAny(s.t, in))
		if again := normalized(t, s.t, got); !slices.Equal(again, got) {
			t.Fatalf("not idempotent:\n%s\n%s", elems(s.t, got), elems(s.t, again))
		}
	})
}

// BenchmarkConcatIntervals normalizes the anti-spoofing list of 5,000 endpoints with two
// nested prefixes each (interface . address).
func BenchmarkConcatIntervals(b *testing.B) {
	typ := nft.Concat(nft.TypeIfname, nft.TypeIPv4Addr)
	var in []nft.Element
	for i := range 5000 {
		iface := fmt.Sprintf("cali%011d", i)
		in = append(in, nft.ConcatElem(nft.IfnameElem(iface), nft.PrefixElem(netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 0}), 24))),
			nft.ConcatElem(nft.IfnameElem(iface), nft.PrefixElem(netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 128}), 25))))
	}
	for b.Loop() {
		if out, err := nft.NormalizeElements(typ, true, slices.Clone(in)); err != nil || len(out) != 5000 {
			b.Fatalf("%d elements, %v", len(out), err)
		}
	}
}
