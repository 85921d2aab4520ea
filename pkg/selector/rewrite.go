package selector

import "slices"

// PrefixKeys returns the selector with every label key prefixed by prefix, as Calico's
// parseSelectorAttachPrefix does when it turns a namespace selector into one over "pcns.<key>"
// labels (or a service-account selector over "pcsa.<key>"). all() is replaced by all and
// global() by global when those are non-nil (for a namespace selector Calico reads all() as
// has(projectcalico.org/namespace) and global() as its negation); nil keeps them as they are.
// A nil receiver stands for all().
func (s *Selector) PrefixKeys(prefix string, all, global *Selector) *Selector {
	r := keyPrefixer{prefix: prefix}
	if all != nil {
		r.all = all.root
	}
	if global != nil {
		r.global = global.root
	}
	return newSelector(r.rewrite(s.orAll().root))
}

// keyPrefixer rewrites a tree; all and global, when set, replace those leaves.
type keyPrefixer struct {
	prefix      string
	all, global *node
}

func (r keyPrefixer) rewrite(n *node) *node {
	switch n.op {
	case opAll:
		return cmpOrNode(r.all, n)
	case opGlobal:
		return cmpOrNode(r.global, n)
	case opNot:
		return negate(r.rewrite(n.kids[0])) // as re-parsing "!" + "!x" would: no double negation
	case opAnd, opOr:
		kids := make([]*node, len(n.kids))
		for i, k := range n.kids {
			kids[i] = r.rewrite(k)
		}
		return &node{op: n.op, kids: kids}
	}
	c := *n // a leaf with a key; its value and set are shared, never modified
	c.key = r.prefix + n.key
	return &c
}

func cmpOrNode(repl, n *node) *node {
	if repl != nil {
		return repl
	}
	return n
}

// RequiredKeys returns the sorted, distinct label keys that every label set the selector
// matches must have: the keys of has() and of the positive comparisons (==, in, contains,
// starts with, ends with) that must hold, through && (all of them) and || (those every
// alternative requires). Negations, != and not in require nothing. A label index can file the
// selector under one of these keys. The caller may modify the result.
func (s *Selector) RequiredKeys() []string {
	keys := s.orAll().root.requiredKeys()
	slices.Sort(keys)
	return slices.Compact(keys)
}

func (n *node) requiredKeys() []string {
	switch n.op {
	case opHas, opEq, opContains, opStartsWith, opEndsWith, opIn:
		return []string{n.key}
	case opAnd:
		var out []string
		for _, k := range n.kids {
			out = append(out, k.requiredKeys()...)
		}
		return out
	case opOr:
		out := n.kids[0].requiredKeys()
		for _, k := range n.kids[1:] {
			theirs := k.requiredKeys()
			out = slices.DeleteFunc(out, func(key string) bool { return !slices.Contains(theirs, key) })
		}
		return out
	}
	return nil // all(), global(), !, != and not in
}
