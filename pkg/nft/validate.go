package nft

import (
	"errors"
	"fmt"
)

// refKey identifies a referenced object (sets and maps share a namespace
// but a reference says which it expects).
type refKey struct {
	kind RefKind
	name string
}

// countRefs adds n to the reference counts of everything c refers to.
func (t *Table) countRefs(c *Chain, n int) {
	if c == nil {
		return
	}
	visit := func(rf Ref) { t.addUse(refKey{rf.Kind, rf.Name}, n) }
	for _, r := range c.Rules {
		for _, x := range r.Exprs {
			if x != nil {
				x.refs(visit)
			}
		}
	}
}

func (t *Table) countMapRefs(m *Map, n int) {
	if m != nil {
		m.refs(func(rf Ref) { t.addUse(refKey{rf.Kind, rf.Name}, n) })
	}
}

func (t *Table) addUse(k refKey, n int) {
	if t.users == nil {
		t.users = map[refKey]int{}
	}
	if t.users[k] += n; t.users[k] <= 0 {
		delete(t.users, k)
	}
}

// Referenced reports whether a rule or map element refers to the chain,
// set or map name (of kind k).
func (t *Table) Referenced(k RefKind, name string) bool { return t.users[refKey{k, name}] > 0 }

// CheckRef checks that a reference resolves: the object exists, a set or
// map has the key type the lookup needs, a jump does not target a base
// chain.
func (t *Table) CheckRef(rf Ref) error {
	switch rf.Kind {
	case RefChain:
		c := t.chains[rf.Name]
		if c == nil {
			return fmt.Errorf("chain %s does not exist", rf.Name)
		}
		if c.Base != nil {
			return fmt.Errorf("chain %s is a base chain and cannot be a jump target", rf.Name)
		}
	case RefSet:
		s := t.sets[rf.Name]
		if s == nil {
			return fmt.Errorf("set %s does not exist", rf.Name)
		}
		if s.Type != rf.KeyType {
			return fmt.Errorf("set %s has type %s, the lookup needs %s", rf.Name, s.Type, rf.KeyType)
		}
	case RefMap:
		m := t.maps[rf.Name]
		if m == nil {
			return fmt.Errorf("map %s does not exist", rf.Name)
		}
		if m.Type != rf.KeyType {
			return fmt.Errorf("map %s has type %s, the lookup needs %s", rf.Name, m.Type, rf.KeyType)
		}
	}
	return nil
}

// CheckChain checks that the references of every rule of chain c resolve.
// It returns one error per bad rule. (Whether a rule can be encoded at all
// is the backend's to check when it encodes the batch; Validate checks
// both.)
func (t *Table) CheckChain(c *Chain) []ObjectError { return t.checkChain(c, false) }

func (t *Table) checkChain(c *Chain, lower bool) []ObjectError {
	var out []ObjectError
	for i := range c.Rules {
		if err := t.checkRule(&c.Rules[i], lower); err != nil {
			o := Object{Kind: ObjectRule, Table: t.ID(), Name: c.Name, Rule: i}
			out = append(out, ObjectError{Object: o, Op: OpAddRule, Err: err})
		}
	}
	return out
}

func (t *Table) checkRule(r *Rule, lower bool) error {
	if lower {
		if _, err := LowerRule(t.Family, *r); err != nil {
			return err
		}
	}
	var errs []error
	for _, x := range r.Exprs {
		x.refs(func(rf Ref) {
			if err := t.CheckRef(rf); err != nil {
				errs = append(errs, err)
			}
		})
	}
	return errors.Join(errs...)
}

// CheckMap checks that every verdict of map m targets a regular chain.
func (t *Table) CheckMap(m *Map) error {
	var err error
	m.refs(func(rf Ref) {
		if e := t.CheckRef(rf); e != nil && err == nil {
			err = fmt.Errorf("map %s: %w", m.Name, e)
		}
	})
	return err
}

// Users lists the chains and maps that refer to name (of kind k): the
// objects to blame when it is deleted while still referenced. It scans the
// table.
func (t *Table) Users(k RefKind, name string) []Object {
	var out []Object
	for _, cn := range t.ChainNames() {
		found := false
		for _, rf := range chainRefs(t.chains[cn]) {
			found = found || (rf.Kind == k && rf.Name == name)
		}
		if found {
			out = append(out, ChainObject(t.ID(), cn))
		}
	}
	for _, mn := range t.MapNames() {
		found := false
		t.maps[mn].refs(func(rf Ref) { found = found || (rf.Kind == k && rf.Name == name) })
		if found {
			out = append(out, Object{Kind: ObjectMap, Table: t.ID(), Name: mn, Rule: -1})
		}
	}
	return out
}

func chainRefs(c *Chain) []Ref {
	var out []Ref
	for _, r := range c.Rules {
		out = append(out, r.Refs()...)
	}
	return out
}

// Validate checks the whole table: every rule lowers for the table's
// family and its references resolve, every map verdict targets a regular
// chain. It returns a *CommitError listing the objects at fault, or nil.
func (t *Table) Validate() error {
	var objs []ObjectError
	for _, name := range t.ChainNames() {
		objs = append(objs, t.checkChain(t.chains[name], true)...)
	}
	for _, name := range t.MapNames() {
		if err := t.CheckMap(t.maps[name]); err != nil {
			o := Object{Kind: ObjectMap, Table: t.ID(), Name: name, Rule: -1}
			objs = append(objs, ObjectError{Object: o, Op: OpAddMapElements, Err: err})
		}
	}
	if len(objs) == 0 {
		return nil
	}
	return &CommitError{Objects: objs}
}
