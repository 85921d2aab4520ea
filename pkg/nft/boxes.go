package nft

import (
	"slices"
	"strings"
)

// An element of a concatenated interval set is a box: one range per field
// (`10.0.0.0/8 . tcp . 22-80` holds every key whose address, protocol and
// port are each in their range), and the kernel refuses a box that overlaps
// one it holds. Merging such boxes as ranges of their whole key would be
// wrong (the union of two boxes is rarely a box), so they are normalized
// here, exactly: the result holds the same keys as the union of the input,
// as disjoint boxes, in a canonical form that depends only on that union.
//
// Canonical form, for an order of the fields (the last one "merged"):
// split the first field's axis at every box's bounds; for each piece, take
// the boxes covering it and normalize them on the remaining fields
// (recursively; the last field is a union of ranges, adjacent ones joined);
// then join adjacent pieces whose results are equal. The pieces are then
// the maximal runs of values of the first field whose "slice" of the set is
// the same and not empty, a property of the set alone, so the result is
// canonical for that order. Each field in turn is tried as the merged one
// (the others kept in key order); the order giving the fewest boxes wins,
// the earliest on a tie. The choice depends on the counts only, themselves
// properties of the set, so normalizing again changes nothing. For the
// shapes we build (interface . prefixes, prefix . protocol . port) the
// winner is the address field merged last, which gives at most as many
// boxes as the input.

// span is one field's range: the field's bytes without padding.
type span struct{ lo, hi string }

// box is an element seen as one span per field (in key order); tags says
// which input it came from (see boxUpdate).
type box struct {
	spans []span
	tags  uint8
}

// Input tags of boxUpdate: a key is in the result when it is in an added
// box, or in an old one and in no deleted one.
const (
	tagOld uint8 = 1 << iota
	tagDel
	tagAdd
)

func inUpdate(tags uint8) bool { return tags&tagAdd != 0 || tags&tagOld != 0 && tags&tagDel == 0 }

// mergeBoxes normalizes the (valid) elements of a concatenated interval set
// of type t: their union as canonical disjoint boxes, sorted.
func mergeBoxes(t DataType, elems []Element) []Element {
	return boxUpdate(t, nil, nil, elems)
}

// boxUpdate is old less del plus add, normalized (each list of valid
// elements of type t).
func boxUpdate(t DataType, old, del, add []Element) []Element {
	var in []box
	for _, l := range []struct {
		elems []Element
		tag   uint8
	}{{old, tagOld}, {del, tagDel}, {add, tagAdd}} {
		for _, e := range l.elems {
			in = append(in, t.boxOf(e, l.tag))
		}
	}
	if len(in) == 0 {
		return nil
	}
	var best []box
	bestField := -1
	for _, f := range candidateOrder(in, int(t.n)) {
		limit := -1 // the first order tried is not bounded
		if best != nil {
			limit = len(best) - 1 // a later one must have fewer boxes, or as many and win the tie
			if f < bestField {
				limit = len(best)
			}
		}
		if out, ok := sweep(in, fieldOrder(int(t.n), f), limit, inUpdate); ok {
			best, bestField = out, f
		}
	}
	out := make([]Element, len(best))
	for i, b := range best {
		out[i] = t.elemOf(b)
	}
	slices.SortFunc(out, compareElems)
	return out
}

// candidateOrder lists the fields to try as the merged one, the one with
// the most distinct spans first (most likely the best: it makes the bound
// of the others tight).
func candidateOrder(in []box, n int) []int {
	distinct := make([]int, n)
	for f := range n {
		seen := map[span]bool{}
		for _, b := range in {
			seen[b.spans[f]] = true
		}
		distinct[f] = len(seen)
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return distinct[b] - distinct[a] })
	return order
}

// fieldOrder is the fields in key order with last moved to the end.
func fieldOrder(n, last int) []int {
	out := make([]int, 0, n)
	for f := range n {
		if f != last {
			out = append(out, f)
		}
	}
	return append(out, last)
}

// sweep normalizes the boxes on the fields of order (the others are left
// zero in the result). It gives up (ok false) when the result would have
// more than limit boxes (limit < 0: no bound).
func sweep(in []box, order []int, limit int, keep func(uint8) bool) (out []box, ok bool) {
	if len(in) == 1 { // one box is its own normal form (on the fields of order)
		if !keep(in[0].tags) {
			return nil, true
		}
		spans := make([]span, len(in[0].spans))
		for _, g := range order {
			spans[g] = in[0].spans[g]
		}
		return []box{{spans: spans}}, limit < 0 || limit >= 1
	}
	f := order[0]
	if len(order) == 1 && !slices.ContainsFunc(in, func(b box) bool { return b.tags&tagDel != 0 }) {
		return unionSpans(in, f), true // (every key of a box is kept: a union of ranges)
	}
	var point []box // the result on no further field: one box (zero spans, set by the callers)
	var run span
	var runSub []box
	have := false
	flush := func() bool {
		for _, b := range runSub {
			nb := box{spans: slices.Clone(b.spans)}
			nb.spans[f] = run
			out = append(out, nb)
		}
		return limit < 0 || len(out) <= limit
	}
	for _, seg := range segments(in, f) {
		var sub []box
		if len(order) == 1 {
			if keep(seg.tags) {
				if point == nil {
					point = []box{{spans: make([]span, len(in[0].spans))}}
				}
				sub = point
			}
		} else if sub, ok = sweep(seg.cover, order[1:], limit, keep); !ok {
			return nil, false
		}
		switch {
		case len(sub) == 0:
			if have && !flush() {
				return nil, false
			}
			have = false
		case have && touches(run.hi, seg.lo) && equalBoxes(sub, runSub): // (disjoint: touching is adjacent)
			run.hi = seg.hi
		default:
			if have && !flush() {
				return nil, false
			}
			run, runSub, have = seg.span, sub, true
		}
	}
	if have && !flush() {
		return nil, false
	}
	return out, true
}

// segment is a piece of one field's axis between bounds of the boxes, with
// the boxes covering it (each covers it whole) and their tags.
type segment struct {
	span
	cover []box
	tags  uint8
}

// segments splits field f's axis at every box's first value and the value
// after its last, and returns the covered pieces in order.
func segments(in []box, f int) []segment {
	sorted := slices.Clone(in)
	slices.SortFunc(sorted, func(a, b box) int { return strings.Compare(a.spans[f].lo, b.spans[f].lo) })
	cuts := make([]string, 0, 2*len(in))
	for _, b := range in {
		cuts = append(cuts, b.spans[f].lo)
		if next, ok := succ(b.spans[f].hi); ok {
			cuts = append(cuts, next)
		}
	}
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	out := make([]segment, 0, len(cuts))
	var active []box
	i := 0
	for j, c := range cuts {
		for i < len(sorted) && sorted[i].spans[f].lo <= c {
			active = append(active, sorted[i])
			i++
		}
		active = slices.DeleteFunc(active, func(b box) bool { return b.spans[f].hi < c })
		if len(active) == 0 {
			continue
		}
		hi := strings.Repeat("\xff", len(c))
		if j+1 < len(cuts) {
			hi = pred(cuts[j+1])
		}
		seg := segment{span: span{c, hi}, cover: slices.Clone(active)}
		for _, b := range active {
			seg.tags |= b.tags
		}
		out = append(out, seg)
	}
	return out
}

// succ is the key after s (of its length); ok is false when s is the
// largest. pred is the key before s (s must not be zero).
func succ(s string) (string, bool) {
	b := []byte(s)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i]++; b[i] != 0 {
			return string(b), true
		}
	}
	return "", false
}

func pred(s string) string {
	b := []byte(s)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i]--; b[i] != 0xff {
			break
		}
	}
	return string(b)
}

// unionSpans is the union of the boxes' ranges of field f, as maximal
// ranges (boxes with the other fields zero).
func unionSpans(in []box, f int) []box {
	spans := make([]span, len(in))
	for i, b := range in {
		spans[i] = b.spans[f]
	}
	slices.SortFunc(spans, func(a, b span) int { return strings.Compare(a.lo, b.lo) })
	var out []box
	cur := spans[0]
	for _, sp := range spans[1:] {
		if touches(cur.hi, sp.lo) {
			cur.hi = max(cur.hi, sp.hi)
			continue
		}
		out = append(out, spanBox(len(in[0].spans), f, cur))
		cur = sp
	}
	return append(out, spanBox(len(in[0].spans), f, cur))
}

func spanBox(n, f int, sp span) box {
	b := box{spans: make([]span, n)}
	b.spans[f] = sp
	return b
}

func equalBoxes(a, b []box) bool {
	return slices.EqualFunc(a, b, func(x, y box) bool { return slices.Equal(x.spans, y.spans) })
}

// boxOf splits an element of type t into its fields' spans.
func (t DataType) boxOf(e Element, tag uint8) box {
	lo, hi := e.Bounds()
	b := box{spans: make([]span, t.n), tags: tag}
	off := 0
	for i, bt := range t.fields() {
		size := baseInfos[bt].size
		b.spans[i] = span{lo.raw[off : off+size], hi.raw[off : off+size]}
		off += t.fieldSize(i)
	}
	return b
}

// elemOf joins a box's spans into an element of type t (padding zeroed).
func (t DataType) elemOf(b box) Element {
	lo, hi := make([]byte, 0, t.KeyLen()), make([]byte, 0, t.KeyLen())
	for i, s := range b.spans {
		pad := t.fieldSize(i) - len(s.lo)
		lo = append(append(lo, s.lo...), make([]byte, pad)...)
		hi = append(append(hi, s.hi...), make([]byte, pad)...)
	}
	return RangeElem(Key{raw: string(lo)}, Key{raw: string(hi)})
}

// Contains reports whether element e of a set of type t holds key k: each
// field of k is within e's range for that field.
func (t DataType) Contains(e Element, k Key) bool {
	if !e.Valid() || e.KeyLen() != t.KeyLen() || k.Len() != t.KeyLen() {
		return false
	}
	lo, hi := e.Bounds()
	off := 0
	for i, bt := range t.fields() {
		f := k.raw[off : off+baseInfos[bt].size]
		if f < lo.raw[off:off+len(f)] || f > hi.raw[off:off+len(f)] {
			return false
		}
		off += t.fieldSize(i)
	}
	return true
}
