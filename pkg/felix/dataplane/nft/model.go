package nft

// DefaultTable is the name of the table the package manages unless told
// otherwise. The table family is always inet.
const DefaultTable = "calico"

// Ruleset is the whole desired content of our table. A renderer that keeps
// one Ruleset and edits it between Applies can make it tracked (Track), so
// that a partial sync costs what changed rather than the whole ruleset.
type Ruleset struct {
	Chains map[string]*Chain
	Sets   map[string]*Set
	Maps   map[string]*Map

	changes *changes // nil unless tracked
}

// NewRuleset returns an empty Ruleset with its maps allocated.
func NewRuleset() *Ruleset {
	return &Ruleset{
		Chains: map[string]*Chain{},
		Sets:   map[string]*Set{},
		Maps:   map[string]*Map{},
	}
}

// AddChain stores c under its name and returns it.
func (r *Ruleset) AddChain(c *Chain) *Chain {
	if r.Chains == nil {
		r.Chains = map[string]*Chain{}
	}
	r.Chains[c.Name] = c
	r.TouchChain(c.Name)
	return c
}

// AddSet stores s under its name and returns it.
func (r *Ruleset) AddSet(s *Set) *Set {
	if r.Sets == nil {
		r.Sets = map[string]*Set{}
	}
	r.Sets[s.Name] = s
	r.TouchSet(s.Name)
	return s
}

// AddMap stores m under its name and returns it.
func (r *Ruleset) AddMap(m *Map) *Map {
	if r.Maps == nil {
		r.Maps = map[string]*Map{}
	}
	r.Maps[m.Name] = m
	r.TouchMap(m.Name)
	return m
}

// Chain is a named list of rules. A chain with a Base is attached to a
// netfilter hook; other chains are reached by jump, goto or a verdict map.
type Chain struct {
	Name  string
	Base  *BaseChain
	Rules []Rule
}

// ChainType is the type of a base chain.
type ChainType string

// Base chain types.
const (
	TypeFilter ChainType = "filter"
	TypeNAT    ChainType = "nat"
	TypeRoute  ChainType = "route"
)

// Hook is the netfilter hook of a base chain.
type Hook string

// Hooks available to an inet table.
const (
	HookPrerouting  Hook = "prerouting"
	HookInput       Hook = "input"
	HookForward     Hook = "forward"
	HookOutput      Hook = "output"
	HookPostrouting Hook = "postrouting"
)

// Policy is a base chain's default verdict. The zero value means accept.
type Policy string

// Base chain policies.
const (
	PolicyAccept Policy = "accept"
	PolicyDrop   Policy = "drop"
)

// Standard base chain priorities (nft's names for them).
const (
	PriorityRaw      = -300
	PriorityMangle   = -150
	PriorityDstNAT   = -100
	PriorityFilter   = 0
	PrioritySecurity = 50
	PrioritySrcNAT   = 100
)

// BaseChain attaches a chain to a hook.
type BaseChain struct {
	Type     ChainType
	Hook     Hook
	Priority int
	Policy   Policy
}

// policy returns the effective policy (accept when unset).
func (b *BaseChain) policy() Policy {
	if b.Policy == "" {
		return PolicyAccept
	}
	return b.Policy
}

// equalBase reports whether two (possibly nil) base chain specs are the same.
func equalBase(a, b *BaseChain) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Type == b.Type && a.Hook == b.Hook && a.Priority == b.Priority && a.policy() == b.policy()
}

// Set is a named set. Type is an nft type name such as "ipv4_addr" or a
// concatenation such as "ipv4_addr . inet_proto . inet_service" (see the
// Type* constants and Concat). Elements are written in nft syntax:
// "10.65.1.5", "10.65.0.0/16", "10.0.0.1-10.0.0.9" (interval sets only),
// "cali123" or "\"cali123\"" for ifname, "10.65.1.5 . tcp . 80" for
// concatenations. An interval set may hold overlapping elements; the kernel
// gets their union.
type Set struct {
	Name     string
	Type     string
	Interval bool
	Elements []string
}

// Map is a named verdict map (`type KEY : verdict`). Keys are written like
// set elements; values are verdicts such as Goto("cali-fw-cali123").
type Map struct {
	Name     string
	KeyType  string
	Elements map[string]Verdict
}

// Set element types.
const (
	TypeIPv4Addr    = "ipv4_addr"
	TypeIPv6Addr    = "ipv6_addr"
	TypeIfname      = "ifname"
	TypeInetProto   = "inet_proto"
	TypeInetService = "inet_service"
	TypeEtherAddr   = "ether_addr"
	TypeMark        = "mark"
)

// Concat builds a concatenated set type, e.g.
// Concat(TypeIPv4Addr, TypeInetProto, TypeInetService).
func Concat(types ...string) string {
	out := ""
	for i, t := range types {
		if i > 0 {
			out += " . "
		}
		out += t
	}
	return out
}

// Rule is an ordered list of match and statement primitives plus an optional
// comment. Build the primitives with the constructors of this package.
type Rule struct {
	Exprs   []Expr
	Comment string
}

// NewRule returns a rule made of exprs.
func NewRule(exprs ...Expr) Rule {
	return Rule{Exprs: exprs}
}

// WithComment returns a copy of r carrying comment c.
func (r Rule) WithComment(c string) Rule {
	r.Comment = c
	return r
}
