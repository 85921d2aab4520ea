package nft

import (
	"bytes"
	"slices"
	"sort"
)

// intervalIndex keeps an interval set's desired elements (spans, one per
// raw element, duplicates kept) and their union (ivals: sorted, disjoint,
// non-adjacent intervals, which is what the kernel holds), both sorted, so
// that changing a few elements costs a binary search and a re-merge of the
// intervals they touch, not a re-merge of the whole set.
type intervalIndex struct {
	spans []span
	ivals []span
}

// ivalRun replaces ivals[from:to] with with.
type ivalRun struct {
	from, to int
	with     []span
}

func newIntervalIndex(spans []span) *intervalIndex {
	spans = slices.Clone(spans)
	slices.SortFunc(spans, compareSpans)
	return &intervalIndex{spans: spans, ivals: mergeSpans(slices.Clone(spans))}
}

func compareSpans(a, b span) int {
	if c := bytes.Compare(a.lo, b.lo); c != 0 {
		return c
	}
	return bytes.Compare(a.hi, b.hi)
}

// before reports whether a ends before b starts with a gap between them.
func before(a, b span) bool {
	next := increment(a.hi)
	return next != nil && bytes.Compare(next, b.lo) < 0
}

// touching returns the range of ivals that overlap sp or are adjacent to it.
func (x *intervalIndex) touching(sp span) (int, int) {
	i := sort.Search(len(x.ivals), func(k int) bool { return !before(x.ivals[k], sp) })
	j := i
	for j < len(x.ivals) && !before(sp, x.ivals[j]) {
		j++
	}
	return i, j
}

// cluster is a group of changes whose intervals, with the ivals they touch,
// form one contiguous range [lo, hi]; ivals[from:to] are those touched.
type cluster struct {
	lo, hi   []byte
	from, to int
	add, del []span
}

// plan computes how the union changes when the spans add are added and del
// (which must be present) removed, without changing the index.
func (x *intervalIndex) plan(add, del []span) []ivalRun {
	var runs []ivalRun
	var cur *cluster
	for _, c := range sortedChanges(add, del) {
		i, j := x.touching(c.sp)
		lo, hi := c.sp.lo, c.sp.hi
		if i < j {
			lo, hi = minBytes(lo, x.ivals[i].lo), maxBytes(hi, x.ivals[j-1].hi)
		}
		if cur != nil && !before(span{hi: cur.hi}, span{lo: lo}) {
			cur.hi, cur.to = maxBytes(cur.hi, hi), max(cur.to, j)
		} else {
			if cur != nil {
				runs = append(runs, x.remerge(cur))
			}
			cur = &cluster{lo: lo, hi: hi, from: i, to: j}
		}
		if c.add {
			cur.add = append(cur.add, c.sp)
		} else {
			cur.del = append(cur.del, c.sp)
		}
	}
	if cur != nil {
		runs = append(runs, x.remerge(cur))
	}
	return runs
}

type spanChange struct {
	sp  span
	add bool
}

func sortedChanges(add, del []span) []spanChange {
	out := make([]spanChange, 0, len(add)+len(del))
	for _, sp := range add {
		out = append(out, spanChange{sp: sp, add: true})
	}
	for _, sp := range del {
		out = append(out, spanChange{sp: sp})
	}
	slices.SortFunc(out, func(a, b spanChange) int { return bytes.Compare(a.sp.lo, b.sp.lo) })
	return out
}

// remerge computes the new union over a cluster: the raw spans starting in
// its range, less the removed ones, plus the added ones.
func (x *intervalIndex) remerge(c *cluster) ivalRun {
	i := sort.Search(len(x.spans), func(k int) bool { return bytes.Compare(x.spans[k].lo, c.lo) >= 0 })
	var spans []span
	for k := i; k < len(x.spans) && bytes.Compare(x.spans[k].lo, c.hi) <= 0; k++ {
		spans = append(spans, x.spans[k])
	}
	for _, d := range c.del {
		if k := slices.IndexFunc(spans, func(s span) bool { return compareSpans(s, d) == 0 }); k >= 0 {
			spans = slices.Delete(spans, k, k+1)
		}
	}
	spans = append(spans, c.add...)
	return ivalRun{from: c.from, to: c.to, with: mergeSpans(spans)}
}

// apply makes the planned change: runs as returned by plan for add and del.
func (x *intervalIndex) apply(add, del []span, runs []ivalRun) {
	for k := len(runs) - 1; k >= 0; k-- {
		r := runs[k]
		x.ivals = slices.Replace(x.ivals, r.from, r.to, r.with...)
	}
	if len(add)+len(del) > 64 {
		x.rebuildSpans(add, del)
		return
	}
	for _, d := range del {
		if k, ok := slices.BinarySearchFunc(x.spans, d, compareSpans); ok {
			x.spans = slices.Delete(x.spans, k, k+1)
		}
	}
	for _, a := range add {
		k, _ := slices.BinarySearchFunc(x.spans, a, compareSpans)
		x.spans = slices.Insert(x.spans, k, a)
	}
}

// rebuildSpans applies many changes at once: a sort instead of many moves.
func (x *intervalIndex) rebuildSpans(add, del []span) {
	del = slices.Clone(del)
	slices.SortFunc(del, compareSpans)
	out := make([]span, 0, len(x.spans)+len(add))
	for _, s := range x.spans {
		if len(del) > 0 && compareSpans(s, del[0]) == 0 {
			del = del[1:]
			continue
		}
		out = append(out, s)
	}
	out = append(out, add...)
	slices.SortFunc(out, compareSpans)
	x.spans = out
}

// runDelta lists the elements a run removes and adds.
func runDelta(f *baseType, old, new []span) (add, del []element) {
	i, j := 0, 0
	for i < len(old) || j < len(new) {
		switch {
		case j == len(new) || (i < len(old) && compareSpans(old[i], new[j]) < 0):
			del = append(del, spanElement(f, old[i]))
			i++
		case i == len(old) || compareSpans(old[i], new[j]) > 0:
			add = append(add, spanElement(f, new[j]))
			j++
		default:
			i, j = i+1, j+1
		}
	}
	return add, del
}

func minBytes(a, b []byte) []byte {
	if bytes.Compare(a, b) <= 0 {
		return a
	}
	return b
}

func maxBytes(a, b []byte) []byte {
	if bytes.Compare(a, b) >= 0 {
		return a
	}
	return b
}
