package nft

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// planSet decides whether a desired set is new, replaced (its type
// changed), resynced against the kernel's elements, or updated.
func (p *planner) planSet(name string, s *Set) error {
	t, _ := parseSetType(s.Type) // validated
	st := p.cur.sets[name]
	var err error
	switch {
	case st == nil && p.cur.maps[name] == nil:
		err = p.addSet(phAddSets, phAddSets, t, s)
	case st == nil || st.typ == nil || st.typ.name != t.name || st.interval != s.Interval:
		p.deleteOld(name)
		err = p.addSet(phRecreate, phRecreateElems, t, s)
	case st.raw == nil:
		err = p.resyncSet(st, t, s)
	default:
		err = p.updateSet(st, s)
	}
	if err != nil {
		return fmt.Errorf("set %q: %w", name, err)
	}
	return nil
}

func (p *planner) addSet(phase, elemPhase int, t *setType, s *Set) error {
	st, elems, err := newSetState(t, s.Interval, s.Elements)
	if err != nil {
		return err
	}
	p.emit(phase, Op{Kind: OpAddSet, Name: s.Name, Type: t.name, Interval: s.Interval})
	if len(elems) > 0 {
		p.emit(elemPhase, Op{Kind: OpAddElements, Name: s.Name, Interval: s.Interval, Elements: elems})
	}
	p.edit(func(m *mirror) { m.putSet(s.Name, st) })
	p.stats.SetsAdded++
	p.stats.ElementsAdded += len(elems)
	return nil
}

// resyncSet compares a set read from the kernel with the desired elements.
func (p *planner) resyncSet(old *setState, t *setType, s *Set) error {
	st, elems, err := newSetState(t, s.Interval, s.Elements)
	if err != nil {
		return err
	}
	want := elementMap(elems)
	p.emitElements(s, missingFrom(want, old.elems), missingFrom(old.elems, want))
	p.edit(func(m *mirror) { m.putSet(s.Name, st) })
	return nil
}

// updateSet emits the element delta of a set we wrote, from the change of
// its desired elements: a merge of two sorted lists, then only the changed
// elements are parsed and (for interval sets) re-merged.
func (p *planner) updateSet(st *setState, s *Set) error {
	raw := sortedCopy(s.Elements)
	rawAdd, rawDel := diffSorted(st.raw, raw)
	if len(rawAdd)+len(rawDel) == 0 {
		return nil
	}
	d, err := st.delta(rawAdd, rawDel)
	if err != nil {
		return err
	}
	p.emitElements(s, d.add, d.del)
	p.edit(func(*mirror) { st.apply(d, raw) })
	return nil
}

func (p *planner) emitElements(s *Set, add, del []element) {
	if len(del) > 0 {
		p.emit(phElems, Op{Kind: OpDeleteElements, Name: s.Name, Interval: s.Interval, Elements: del})
	}
	if len(add) > 0 {
		p.emit(phElems, Op{Kind: OpAddElements, Name: s.Name, Interval: s.Interval, Elements: add})
	}
	p.stats.ElementsAdded += len(add)
	p.stats.ElementsRemoved += len(del)
}

// newSetState parses and indexes a set's desired elements; it returns the
// state and the kernel's elements for them, sorted by text.
func newSetState(t *setType, interval bool, elements []string) (*setState, []element, error) {
	raw := sortedCopy(elements)
	st := &setState{typ: t, interval: interval, raw: raw, parsed: make(map[string]parsedElem, len(raw))}
	for _, s := range raw {
		if _, ok := st.parsed[s]; ok {
			continue
		}
		pe, err := parseRaw(t, interval, s)
		if err != nil {
			return nil, nil, err
		}
		st.parsed[s] = pe
	}
	if interval {
		spans := make([]span, len(raw))
		for i, s := range raw {
			spans[i] = st.parsed[s].sp
		}
		st.ivx = newIntervalIndex(spans)
		elems, _ := runDelta(t.fields[0], nil, st.ivx.ivals)
		return st, elems, nil
	}
	st.count = make(map[string]int, len(st.parsed))
	var elems []element
	for _, s := range raw {
		e := st.parsed[s].el
		if st.count[e.text]++; st.count[e.text] == 1 {
			elems = append(elems, e)
		}
	}
	slices.SortFunc(elems, func(a, b element) int { return strings.Compare(a.text, b.text) })
	return st, elems, nil
}

// setDelta is a planned change of a set we wrote.
type setDelta struct {
	add, del         []element             // kernel elements
	rawDel           []string              // desired elements removed
	parsed           map[string]parsedElem // desired elements added, parsed
	spanAdd, spanDel []span                // interval sets: their intervals
	runs             []ivalRun             // interval sets: how the union changes
	counts           map[string]int        // plain sets: change of each element's count
}

// delta plans adding and removing raw elements, without changing st.
func (st *setState) delta(rawAdd, rawDel []string) (*setDelta, error) {
	d := &setDelta{rawDel: rawDel, parsed: make(map[string]parsedElem, len(rawAdd))}
	added := make([]parsedElem, len(rawAdd))
	for i, s := range rawAdd {
		pe, ok := st.parsed[s]
		if !ok {
			var err error
			if pe, err = parseRaw(st.typ, st.interval, s); err != nil {
				return nil, err
			}
			d.parsed[s] = pe
		}
		added[i] = pe
	}
	if st.interval {
		st.intervalDelta(d, added)
	} else {
		st.plainDelta(d, added)
	}
	byText := func(a, b element) int { return strings.Compare(a.text, b.text) }
	slices.SortFunc(d.add, byText)
	slices.SortFunc(d.del, byText)
	return d, nil
}

func (st *setState) intervalDelta(d *setDelta, added []parsedElem) {
	for _, pe := range added {
		d.spanAdd = append(d.spanAdd, pe.sp)
	}
	for _, s := range d.rawDel {
		d.spanDel = append(d.spanDel, st.parsed[s].sp)
	}
	d.runs = st.ivx.plan(d.spanAdd, d.spanDel)
	for _, r := range d.runs {
		add, del := runDelta(st.typ.fields[0], st.ivx.ivals[r.from:r.to], r.with)
		d.add, d.del = append(d.add, add...), append(d.del, del...)
	}
}

func (st *setState) plainDelta(d *setDelta, added []parsedElem) {
	d.counts = map[string]int{}
	elems := map[string]element{}
	for _, pe := range added {
		d.counts[pe.el.text]++
		elems[pe.el.text] = pe.el
	}
	for _, s := range d.rawDel {
		e := st.parsed[s].el
		d.counts[e.text]--
		elems[e.text] = e
	}
	for text, n := range d.counts {
		old := st.count[text]
		switch {
		case old == 0 && n > 0:
			d.add = append(d.add, elems[text])
		case old > 0 && old+n == 0:
			d.del = append(d.del, elems[text])
		}
	}
}

// apply makes a planned change true; raw is the new sorted desired list.
func (st *setState) apply(d *setDelta, raw []string) {
	st.raw = raw
	maps.Copy(st.parsed, d.parsed)
	for _, s := range d.rawDel {
		if _, still := slices.BinarySearch(raw, s); !still {
			delete(st.parsed, s)
		}
	}
	if st.interval {
		st.ivx.apply(d.spanAdd, d.spanDel, d.runs)
		return
	}
	for text, n := range d.counts {
		if st.count[text] += n; st.count[text] <= 0 {
			delete(st.count, text)
		}
	}
}

// diffSorted compares two sorted lists (duplicates count) and returns what
// b has more and what it has less than a.
func diffSorted(a, b []string) (add, del []string) {
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || (i < len(a) && a[i] < b[j]):
			del = append(del, a[i])
			i++
		case i == len(a) || a[i] > b[j]:
			add = append(add, b[j])
			j++
		default:
			i, j = i+1, j+1
		}
	}
	return add, del
}

func elementMap(elems []element) map[string]element {
	m := make(map[string]element, len(elems))
	for _, e := range elems {
		m[e.text] = e
	}
	return m
}

// missingFrom lists the elements of a that b lacks, sorted by text.
func missingFrom(a, b map[string]element) []element {
	var out []element
	for k, e := range a {
		if _, ok := b[k]; !ok {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(x, y element) int { return strings.Compare(x.text, y.text) })
	return out
}
