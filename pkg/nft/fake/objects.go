package fake

import (
	"slices"

	"golang.org/x/sys/unix"

	"github.com/calico-host/calico-host/pkg/nft"
)

func (t *tx) setOp(tb *table, op *nft.Op) {
	s, m := tb.sets[op.Name], tb.maps[op.Name]
	isMap := op.Kind == nft.OpAddMap || op.Kind == nft.OpDeleteMap
	switch op.Kind {
	case nft.OpAddSet, nft.OpAddMap:
		t.addSet(tb, op, s, m)
	case nft.OpDeleteSet, nft.OpDeleteMap:
		switch {
		case (isMap && m == nil) || (!isMap && s == nil):
			t.fail(op, unix.ENOENT, "no %s %s", op.Object().Kind, op.Name)
		case setInUse(tb, op.Name):
			t.fail(op, unix.EBUSY, "%s is in use", op.Name)
		case isMap:
			delete(tb.maps, op.Name)
		default:
			delete(tb.sets, op.Name)
		}
	}
}

func (t *tx) addSet(tb *table, op *nft.Op, s *set, m *vmap) {
	isMap := op.Kind == nft.OpAddMap
	switch {
	case !op.Type.Valid() || (op.Interval && (isMap || !op.Type.Ordered())):
		t.fail(op, unix.EINVAL, "type %s", op.Type)
	case s == nil && m == nil && isMap:
		nm := &vmap{typ: op.Type, elems: map[nft.Key]nft.Verdict{}}
		t.copied[nm] = true
		tb.maps[op.Name] = nm
	case s == nil && m == nil:
		ns := &set{typ: op.Type, interval: op.Interval, elems: map[nft.Element]struct{}{}, handle: t.handle()}
		t.copied[ns] = true
		tb.sets[op.Name] = ns
	case isMap && m != nil && m.typ == op.Type:
	case !isMap && s != nil && s.typ == op.Type && s.interval == op.Interval:
	default:
		t.fail(op, unix.EEXIST, "%s exists with another type", op.Name)
	}
}

// setInUse reports whether a rule looks the set or map up.
func setInUse(tb *table, name string) bool {
	for _, c := range tb.chains {
		for _, r := range c.rules {
			for _, rf := range r.Refs() {
				if (rf.Kind == nft.RefSet || rf.Kind == nft.RefMap) && rf.Name == name {
					return true
				}
			}
		}
	}
	return false
}

// chainInUse reports whether a rule or a map element jumps or goes to the
// chain.
func chainInUse(tb *table, name string) bool {
	for _, c := range tb.chains {
		for _, r := range c.rules {
			for _, rf := range r.Refs() {
				if rf.Kind == nft.RefChain && rf.Name == name {
					return true
				}
			}
		}
	}
	for _, m := range tb.maps {
		for _, v := range m.elems {
			if v.Chain == name {
				return true
			}
		}
	}
	return false
}

func (t *tx) elementOp(tb *table, op *nft.Op) {
	if tb.sets[op.Name] == nil {
		t.fail(op, unix.ENOENT, "no set %s", op.Name)
		return
	}
	s := t.set(tb, op.Name)
	if op.Kind == nft.OpFlushSet {
		clear(s.elems)
		return
	}
	n := s.typ.KeyLen()
	for _, e := range op.Elements {
		switch _, ok := s.elems[e]; {
		case !e.Valid() || e.KeyLen() != n:
			t.fail(op, unix.EINVAL, "element of %d bytes in a set of %d-byte keys", e.KeyLen(), n)
			return
		case e.IsRange() && !s.interval:
			t.fail(op, unix.EINVAL, "range in a set without the interval flag")
			return
		case op.Kind == nft.OpDeleteElements && !ok:
			t.fail(op, unix.ENOENT, "no such element")
			return
		case op.Kind == nft.OpDeleteElements:
			delete(s.elems, e)
		case !ok && s.interval && overlaps(s, e):
			t.fail(op, unix.EEXIST, "element overlaps another")
			t.errs[len(t.errs)-1].Key, _ = e.Bounds()
			return
		default:
			s.elems[e] = struct{}{}
		}
	}
}

// overlaps reports whether an element shares keys with one of the set's
// (the kernel refuses overlapping intervals). The elements of a
// concatenated set are boxes, one range per field: two overlap when their
// ranges overlap in every field.
func overlaps(s *set, e nft.Element) bool {
	for o := range s.elems {
		if boxesOverlap(s.typ, e, o) {
			return true
		}
	}
	return false
}

func boxesOverlap(t nft.DataType, a, b nft.Element) bool {
	alo, ahi := a.Bounds()
	blo, bhi := b.Bounds()
	off := 0
	for _, n := range t.FieldLens() {
		if t.NumFields() > 1 {
			n = (n + 3) &^ 3 // the padding is zero in both
		}
		f := func(k nft.Key) string { return k.Raw()[off : off+n] }
		if f(alo) > f(bhi) || f(blo) > f(ahi) {
			return false
		}
		off += n
	}
	return true
}

func (t *tx) mapElementOp(tb *table, op *nft.Op) {
	if tb.maps[op.Name] == nil {
		t.fail(op, unix.ENOENT, "no map %s", op.Name)
		return
	}
	m := t.vmap(tb, op.Name)
	n := m.typ.KeyLen()
	if op.Kind == nft.OpDeleteMapElements {
		for _, k := range op.Keys {
			if _, ok := m.elems[k]; !ok || k.Len() != n {
				t.fail(op, unix.ENOENT, "no such element")
				return
			}
			delete(m.elems, k)
		}
		return
	}
	jumps := false
	for _, e := range op.MapElements {
		if errno, msg := checkMapElement(tb, m, e); errno != 0 {
			t.fail(op, errno, "%s", msg)
			return
		}
		m.elems[e.Key] = e.Verdict
		jumps = jumps || e.Verdict.Chain != ""
	}
	t.validate(tb, op, jumps)
}

func checkMapElement(tb *table, m *vmap, e nft.MapElement) (unix.Errno, string) {
	if e.Key.Len() != m.typ.KeyLen() {
		return unix.EINVAL, "key length"
	}
	if old, ok := m.elems[e.Key]; ok && old != e.Verdict {
		return unix.EEXIST, "key exists with another verdict"
	}
	if _, err := e.Verdict.VM(); err != nil {
		return unix.EINVAL, err.Error()
	}
	if e.Verdict.Chain != "" {
		return checkRef(tb, nft.Ref{Kind: nft.RefChain, Name: e.Verdict.Chain})
	}
	return 0, ""
}

// hasLoop reports whether the jump graph (rules' jumps and gotos, verdict
// maps' targets through the rules that look them up) has a cycle.
func hasLoop(tb *table) bool {
	const (
		unseen = iota
		active
		done
	)
	state := map[string]int{}
	var visit func(string) bool
	visit = func(name string) bool {
		switch state[name] {
		case active:
			return true
		case done:
			return false
		}
		state[name] = active
		for _, next := range successors(tb, name) {
			if visit(next) {
				return true
			}
		}
		state[name] = done
		return false
	}
	names := make([]string, 0, len(tb.chains))
	for name := range tb.chains {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if visit(name) {
			return true
		}
	}
	return false
}

func successors(tb *table, name string) []string {
	c := tb.chains[name]
	if c == nil {
		return nil
	}
	var out []string
	for _, r := range c.rules {
		for _, rf := range r.Refs() {
			switch rf.Kind {
			case nft.RefChain:
				out = append(out, rf.Name)
			case nft.RefMap:
				if m := tb.maps[rf.Name]; m != nil {
					for _, v := range m.elems {
						if v.Chain != "" {
							out = append(out, v.Chain)
						}
					}
				}
			}
		}
	}
	return out
}
