package nft

import (
	"slices"
)

// mirror is what the Applier believes the kernel holds: after a commit, what
// it wrote; after a full sync's read, what it read. States are immutable once
// in a mirror, so successive mirrors share unchanged objects.
type mirror struct {
	table  bool
	read   bool // read from the kernel (full sync), rather than written by us
	chains map[string]*chainState
	sets   map[string]*setState
	maps   map[string]*mapState
}

type chainState struct {
	base   *BaseChain
	rules  []Rule // nil with known=false when only the hashes are known
	known  bool
	hashes []string
	refs   []ref
}

type setState struct {
	typ      *setType // nil: a kernel set we cannot use; it is recreated or deleted
	interval bool
	raw      []string // the desired elements as last given; nil when unknown
	elems    map[string]element
	parsed   map[string]parsedElem // each raw element parsed, a cache
}

type mapState struct {
	typ    *setType // nil: a kernel map we cannot use
	raw    map[string]Verdict
	elems  map[string]mapElement
	parsed map[string]element // each raw key parsed, a cache
}

func newMirror() *mirror {
	return &mirror{
		chains: map[string]*chainState{},
		sets:   map[string]*setState{},
		maps:   map[string]*mapState{},
	}
}

// newMirrorSized returns an empty mirror with room for the ruleset.
func newMirrorSized(rs *Ruleset) *mirror {
	return &mirror{
		chains: make(map[string]*chainState, len(rs.Chains)),
		sets:   make(map[string]*setState, len(rs.Sets)),
		maps:   make(map[string]*mapState, len(rs.Maps)),
	}
}

// mirrorFromKernel turns a kernel read into a mirror. Objects it cannot
// interpret (unknown types, unparsable elements) get a nil type, which makes
// the planner replace or delete them.
func mirrorFromKernel(ks *KernelState) *mirror {
	m := newMirror()
	m.table, m.read = ks.TableExists, true
	for name, kc := range ks.Chains {
		m.chains[name] = &chainState{base: kc.Base, hashes: kc.Hashes}
	}
	for name, ksSet := range ks.Sets {
		m.sets[name] = setFromKernel(ksSet)
	}
	for name, km := range ks.Maps {
		m.maps[name] = mapFromKernel(km)
	}
	return m
}

func setFromKernel(ks *KernelSet) *setState {
	st := &setState{interval: ks.Interval, elems: make(map[string]element, len(ks.Elements))}
	typ, err := parseSetType(ks.Type)
	if err != nil {
		return st
	}
	for _, s := range ks.Elements {
		e, err := parseElement(typ, ks.Interval, s)
		if err != nil {
			return st
		}
		st.elems[e.text] = e
	}
	st.typ = typ
	return st
}

func mapFromKernel(km *KernelMap) *mapState {
	st := &mapState{elems: make(map[string]mapElement, len(km.Elements))}
	typ, err := parseSetType(km.KeyType)
	if err != nil {
		return st
	}
	for k, v := range km.Elements {
		e, err := parseKey(typ, k)
		if err != nil {
			return st
		}
		st.elems[e.text] = mapElement{text: e.text, key: e.key, verdict: v}
	}
	st.typ = typ
	return st
}

// newChainState records a chain as written from the desired state.
func newChainState(c *Chain, hashes []string) *chainState {
	st := &chainState{rules: copyRules(c.Rules), known: true, hashes: hashes}
	if c.Base != nil {
		b := *c.Base
		st.base = &b
	}
	st.refs = chainRefs(c.Rules)
	return st
}

// copyRules copies the rule and primitive slices so later changes by the
// caller cannot alter the mirror. Primitives themselves are values.
func copyRules(rules []Rule) []Rule {
	out := make([]Rule, len(rules))
	for i, r := range rules {
		out[i] = Rule{Exprs: slices.Clone(r.Exprs), Comment: r.Comment}
	}
	return out
}

// rulesEqual compares rules primitive by primitive; every primitive type is
// comparable, so this is cheap.
func rulesEqual(a, b []Rule) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Comment != b[i].Comment || len(a[i].Exprs) != len(b[i].Exprs) {
			return false
		}
		for j := range a[i].Exprs {
			if a[i].Exprs[j] != b[i].Exprs[j] {
				return false
			}
		}
	}
	return true
}

// chainRefs lists the distinct objects a chain's rules refer to.
func chainRefs(rules []Rule) []ref {
	var out []ref
	for _, r := range rules {
		for _, x := range r.Exprs {
			x.refs(func(rf ref) {
				if !slices.Contains(out, rf) {
					out = append(out, rf)
				}
			})
		}
	}
	return out
}
