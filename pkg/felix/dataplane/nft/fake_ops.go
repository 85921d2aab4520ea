package nft

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// Errors the fake reports, named after the kernel's errno.
var (
	ErrFakeNoEntry = errors.New("no such file or directory (ENOENT)")
	ErrFakeBusy    = errors.New("device or resource busy (EBUSY)")
	ErrFakeExists  = errors.New("file exists (EEXIST)")
	ErrFakeInvalid = errors.New("invalid argument (EINVAL)")
)

// apply performs one operation on t (already forked) and returns the table,
// which is nil when it was deleted.
func (f *Fake) apply(t *fakeTable, op Op, handle *uint64) (*fakeTable, error) {
	switch op.Kind {
	case OpAddTable:
		if t == nil {
			t = newFakeTable()
			t.owned = map[any]bool{}
		}
		return t, nil
	case OpDeleteTable:
		if t == nil {
			return nil, ErrFakeNoEntry
		}
		return nil, nil
	}
	if t == nil {
		return nil, fmt.Errorf("table %s: %w", f.table, ErrFakeNoEntry)
	}
	return t, t.applyObjectOp(op, handle)
}

func (t *fakeTable) applyObjectOp(op Op, handle *uint64) error {
	switch op.Kind {
	case OpAddChain:
		return t.addChain(op.Name, op.Base)
	case OpFlushChain:
		return t.flushChain(op.Name)
	case OpDeleteChain:
		return t.deleteChain(op.Name)
	case OpAddRule:
		return t.addRule(op, handle)
	case OpAddSet:
		return t.addSet(op)
	case OpDeleteSet:
		return t.deleteSet(op.Name)
	case OpAddElements, OpDeleteElements:
		return t.setElements(op)
	case OpAddMap:
		return t.addMap(op)
	case OpDeleteMap:
		return t.deleteMap(op.Name)
	case OpAddMapElements, OpDeleteMapElements:
		return t.mapElements(op)
	}
	return fmt.Errorf("unknown operation %d: %w", op.Kind, ErrFakeInvalid)
}

func (t *fakeTable) addChain(name string, base *BaseChain) error {
	if err := validateName("chain", name); err != nil {
		return fmt.Errorf("%w: %w", err, ErrFakeInvalid)
	}
	if c, ok := t.chains[name]; ok {
		if !equalBase(c.base, base) {
			return fmt.Errorf("chain %q exists with another hook: %w", name, ErrFakeExists)
		}
		return nil
	}
	if base != nil {
		if err := validateBase(name, base); err != nil {
			return fmt.Errorf("%w: %w", err, ErrFakeInvalid)
		}
		b := *base
		base = &b
	}
	c := &fakeChain{base: base}
	t.chains[name] = c
	t.owned[c] = true
	return nil
}

func (t *fakeTable) flushChain(name string) error {
	c := t.chainForWrite(name)
	if c == nil {
		return fmt.Errorf("chain %q: %w", name, ErrFakeNoEntry)
	}
	for _, r := range c.rules {
		t.unuse(r.rule)
	}
	c.rules = nil
	return nil
}

func (t *fakeTable) deleteChain(name string) error {
	c, ok := t.chains[name]
	if !ok {
		return fmt.Errorf("chain %q: %w", name, ErrFakeNoEntry)
	}
	if n := t.uses[ref{kind: refChain, name: name}]; n > 0 {
		return fmt.Errorf("chain %q is used by %d references: %w", name, n, ErrFakeBusy)
	}
	for _, r := range c.rules {
		t.unuse(r.rule)
	}
	delete(t.chains, name)
	return nil
}

func (t *fakeTable) addRule(op Op, handle *uint64) error {
	c := t.chainForWrite(op.Name)
	if c == nil {
		return fmt.Errorf("chain %q: %w", op.Name, ErrFakeNoEntry)
	}
	if len(op.Rule.Exprs) == 0 {
		return fmt.Errorf("empty rule: %w", ErrFakeInvalid)
	}
	if err := t.use(op.Rule); err != nil {
		return err
	}
	*handle++
	c.rules = append(c.rules, fakeRule{rule: op.Rule, hash: op.Hash, handle: *handle})
	return nil
}

// use checks a rule's references and counts them.
func (t *fakeTable) use(r Rule) error {
	var err error
	for _, x := range r.Exprs {
		if c, ok := x.(checker); ok && err == nil {
			if cerr := c.check(); cerr != nil {
				err = fmt.Errorf("%w: %w", cerr, ErrFakeInvalid)
			}
		}
		x.refs(func(rf ref) {
			if err == nil {
				err = t.checkRef(rf)
			}
		})
	}
	if err != nil {
		return err
	}
	for _, x := range r.Exprs {
		x.refs(func(rf ref) { t.uses[refKey(rf)]++ })
	}
	return nil
}

// unuse releases a rule's references.
func (t *fakeTable) unuse(r Rule) {
	for _, x := range r.Exprs {
		x.refs(func(rf ref) { t.uses[refKey(rf)]-- })
	}
}

// refKey drops the type so all references to one object count together.
func refKey(rf ref) ref {
	if rf.kind == refMap {
		rf.kind = refSet // sets and maps share one namespace in the kernel
	}
	return ref{kind: rf.kind, name: rf.name}
}

func (t *fakeTable) checkRef(rf ref) error {
	switch rf.kind {
	case refChain:
		c, ok := t.chains[rf.name]
		if !ok {
			return fmt.Errorf("jump to chain %q: %w", rf.name, ErrFakeNoEntry)
		}
		if c.base != nil {
			return fmt.Errorf("jump to base chain %q: %w", rf.name, ErrFakeInvalid)
		}
	case refSet:
		s, ok := t.sets[rf.name]
		if !ok {
			return fmt.Errorf("set %q: %w", rf.name, ErrFakeNoEntry)
		}
		if s.typ.name != rf.typ {
			return fmt.Errorf("set %q has type %s, lookup needs %s: %w", rf.name, s.typ.name, rf.typ, ErrFakeInvalid)
		}
	case refMap:
		m, ok := t.maps[rf.name]
		if !ok {
			return fmt.Errorf("map %q: %w", rf.name, ErrFakeNoEntry)
		}
		if m.typ.name != rf.typ {
			return fmt.Errorf("map %q has key type %s, lookup needs %s: %w", rf.name, m.typ.name, rf.typ, ErrFakeInvalid)
		}
	}
	return nil
}

func (t *fakeTable) nameTaken(name string) bool {
	_, s := t.sets[name]
	_, m := t.maps[name]
	return s || m
}

func (t *fakeTable) addSet(op Op) error {
	typ, err := parseSetType(op.Type)
	if err != nil {
		return fmt.Errorf("%w: %w", err, ErrFakeInvalid)
	}
	if op.Interval && !typ.intervalCapable() {
		return fmt.Errorf("interval set of type %s: %w", typ.name, ErrFakeInvalid)
	}
	if s, ok := t.sets[op.Name]; ok {
		if s.typ.name != typ.name || s.interval != op.Interval {
			return fmt.Errorf("set %q exists with another type: %w", op.Name, ErrFakeExists)
		}
		return nil
	}
	if t.nameTaken(op.Name) {
		return fmt.Errorf("set %q: %w", op.Name, ErrFakeExists)
	}
	s := &fakeSet{typ: typ, interval: op.Interval, elems: map[string]element{}}
	t.sets[op.Name] = s
	t.owned[s] = true
	return nil
}

func (t *fakeTable) deleteSet(name string) error {
	if _, ok := t.sets[name]; !ok {
		return fmt.Errorf("set %q: %w", name, ErrFakeNoEntry)
	}
	if n := t.uses[ref{kind: refSet, name: name}]; n > 0 {
		return fmt.Errorf("set %q is used by %d rules: %w", name, n, ErrFakeBusy)
	}
	delete(t.sets, name)
	return nil
}

// setElements adds or deletes elements, re-parsing each one with the set's
// own type so that elements of the wrong type are refused.
func (t *fakeTable) setElements(op Op) error {
	s := t.setForWrite(op.Name)
	if s == nil {
		return fmt.Errorf("set %q: %w", op.Name, ErrFakeNoEntry)
	}
	for _, e := range op.Elements {
		parsed, err := parseElement(s.typ, s.interval, e.text)
		if err != nil || parsed.text != e.text {
			return fmt.Errorf("set %q: element %q: %w", op.Name, e.text, ErrFakeInvalid)
		}
		if err := s.apply(op.Kind == OpAddElements, parsed); err != nil {
			return fmt.Errorf("set %q: %w", op.Name, err)
		}
	}
	if s.interval {
		if a, b, ok := overlapping(s.typ.fields[0], mapsValues(s.elems)); ok {
			return fmt.Errorf("set %q: intervals %s and %s overlap: %w", op.Name, a, b, ErrFakeExists)
		}
	}
	return nil
}

func (s *fakeSet) apply(add bool, e element) error {
	_, exists := s.elems[e.text]
	switch {
	case add:
		s.elems[e.text] = e
	case !exists:
		return fmt.Errorf("element %q: %w", e.text, ErrFakeNoEntry)
	default:
		delete(s.elems, e.text)
	}
	return nil
}

func (t *fakeTable) addMap(op Op) error {
	typ, err := parseSetType(op.Type)
	if err != nil {
		return fmt.Errorf("%w: %w", err, ErrFakeInvalid)
	}
	if m, ok := t.maps[op.Name]; ok {
		if m.typ.name != typ.name {
			return fmt.Errorf("map %q exists with another type: %w", op.Name, ErrFakeExists)
		}
		return nil
	}
	if t.nameTaken(op.Name) {
		return fmt.Errorf("map %q: %w", op.Name, ErrFakeExists)
	}
	m := &fakeMap{typ: typ, elems: map[string]mapElement{}}
	t.maps[op.Name] = m
	t.owned[m] = true
	return nil
}

func (t *fakeTable) deleteMap(name string) error {
	m, ok := t.maps[name]
	if !ok {
		return fmt.Errorf("map %q: %w", name, ErrFakeNoEntry)
	}
	if n := t.uses[ref{kind: refSet, name: name}]; n > 0 {
		return fmt.Errorf("map %q is used by %d rules: %w", name, n, ErrFakeBusy)
	}
	for _, e := range m.elems {
		e.verdict.refs(func(rf ref) { t.uses[rf]-- })
	}
	delete(t.maps, name)
	return nil
}

func (t *fakeTable) mapElements(op Op) error {
	m := t.mapForWrite(op.Name)
	if m == nil {
		return fmt.Errorf("map %q: %w", op.Name, ErrFakeNoEntry)
	}
	for _, e := range op.MapElems {
		parsed, err := parseKey(m.typ, e.text)
		if err != nil || parsed.text != e.text {
			return fmt.Errorf("map %q: key %q: %w", op.Name, e.text, ErrFakeInvalid)
		}
		if err := t.mapElement(m, op.Kind == OpAddMapElements, e); err != nil {
			return fmt.Errorf("map %q: %w", op.Name, err)
		}
	}
	return nil
}

func (t *fakeTable) mapElement(m *fakeMap, add bool, e mapElement) error {
	old, exists := m.elems[e.text]
	switch {
	case add && exists && old.verdict != e.verdict:
		return fmt.Errorf("key %q exists with verdict %s: %w", e.text, old.verdict, ErrFakeBusy)
	case add && exists:
		return nil
	case add:
		var err error
		e.verdict.refs(func(rf ref) { err = t.checkRef(rf) })
		if err != nil {
			return err
		}
		e.verdict.refs(func(rf ref) { t.uses[rf]++ })
		m.elems[e.text] = e
	case !exists:
		return fmt.Errorf("key %q: %w", e.text, ErrFakeNoEntry)
	default:
		old.verdict.refs(func(rf ref) { t.uses[rf]-- })
		delete(m.elems, e.text)
	}
	return nil
}

func mapsValues[K comparable, V any](m map[K]V) []V {
	return slices.Collect(maps.Values(m))
}
