package nft

import (
	"slices"
)

// mirror is what the Applier believes the kernel holds: after a commit, what
// it wrote; after a full sync's read, what it read. The Applier keeps one
// mirror and edits it in place once a transaction commits (see edits), so a
// partial sync costs what it changes, not the size of the table.
type mirror struct {
	table  bool
	read   bool // read from the kernel (full sync), rather than written by us
	chains map[string]*chainState
	sets   map[string]*setState
	maps   map[string]*mapState
	// users indexes the known chains by what their rules refer to (keyed
	// by refKey), so that deleting or replacing an object finds its users.
	users map[ref]map[string]struct{}
}

type chainState struct {
	base   *BaseChain
	rules  []Rule // nil with known=false when only the hashes are known
	known  bool
	hashes []string
	refs   []ref
}

// setState is one set. A set we wrote knows its desired elements (raw) and
// indexes them so that a change of a few elements costs a few elements; a
// set read from the kernel knows only the kernel's elements.
type setState struct {
	typ      *setType // nil: a kernel set we cannot use; it is recreated or deleted
	interval bool
	raw      []string              // the desired elements as last given, sorted; nil when read
	elems    map[string]element    // read from the kernel: its elements by text
	parsed   map[string]parsedElem // each raw element parsed
	count    map[string]int        // plain sets: how many raw elements give each element text
	ivx      *intervalIndex        // interval sets: the raw intervals and their union
}

type mapState struct {
	typ     *setType // nil: a kernel map we cannot use
	raw     map[string]Verdict
	elems   map[string]mapElement
	parsed  map[string]element // each raw key parsed, a cache
	targets map[string]int     // chains that elements jump or go to, with their counts
}

func newMirror() *mirror {
	return &mirror{
		chains: map[string]*chainState{},
		sets:   map[string]*setState{},
		maps:   map[string]*mapState{},
		users:  map[ref]map[string]struct{}{},
	}
}

// edits are the changes to the mirror that a planned transaction makes
// true; they are applied, in order, once it commits.
type edits []func(*mirror)

func (e edits) apply(m *mirror) {
	for _, f := range e {
		f(m)
	}
}

// putChain records a chain's state and indexes its references.
func (m *mirror) putChain(name string, st *chainState) {
	m.dropUsers(name)
	m.chains[name] = st
	for _, rf := range st.refs {
		k := refKey(rf)
		if m.users[k] == nil {
			m.users[k] = map[string]struct{}{}
		}
		m.users[k][name] = struct{}{}
	}
}

func (m *mirror) deleteChain(name string) {
	m.dropUsers(name)
	delete(m.chains, name)
}

func (m *mirror) dropUsers(name string) {
	old := m.chains[name]
	if old == nil {
		return
	}
	for _, rf := range old.refs {
		k := refKey(rf)
		delete(m.users[k], name)
		if len(m.users[k]) == 0 {
			delete(m.users, k)
		}
	}
}

// putSet records a set, replacing any set or map of that name.
func (m *mirror) putSet(name string, st *setState) {
	delete(m.maps, name)
	m.sets[name] = st
}

// putMap records a map, replacing any set or map of that name.
func (m *mirror) putMap(name string, st *mapState) {
	delete(m.sets, name)
	m.maps[name] = st
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
	st := &mapState{elems: make(map[string]mapElement, len(km.Elements)), targets: map[string]int{}}
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
		st.target(v, 1)
	}
	st.typ = typ
	return st
}

// target counts (n=1) or uncounts (n=-1) an element's verdict.
func (st *mapState) target(v Verdict, n int) {
	if v.Kind != VerdictJump && v.Kind != VerdictGoto {
		return
	}
	if st.targets[v.Chain] += n; st.targets[v.Chain] <= 0 {
		delete(st.targets, v.Chain)
	}
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
