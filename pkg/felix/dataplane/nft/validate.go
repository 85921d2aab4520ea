package nft

import (
	"errors"
	"fmt"
	"strings"

	"github.com/google/nftables"
)

var (
	errNoPorts    = errors.New("port match without ports")
	errBadVerdict = errors.New("unknown verdict")
)

// maxNameLen is the longest chain, set or map name the kernel accepts.
const maxNameLen = 255

// checker is implemented by primitives whose arguments can be invalid.
type checker interface {
	check() error
}

// Validate checks the whole ruleset: names, set and map types and
// elements, every primitive, and that every jump, goto, @set and vmap
// reference resolves to an object of the right kind and type. Apply
// validates too; renderer tests can call this directly.
func (r *Ruleset) Validate() error {
	if err := r.validateObjects(); err != nil {
		return err
	}
	for _, name := range sortedKeys(r.Sets) {
		s := r.Sets[name]
		t, _ := parseSetType(s.Type)
		if _, err := normalizeElements(t, s.Interval, s.Elements); err != nil {
			return fmt.Errorf("set %q: %w", name, err)
		}
	}
	for _, name := range sortedKeys(r.Maps) {
		if err := r.validateMapElements(r.Maps[name]); err != nil {
			return err
		}
		if _, _, err := normalizeMap(r.Maps[name], nil); err != nil {
			return err
		}
	}
	for _, name := range sortedKeys(r.Chains) {
		if err := r.validateChain(name, r.Chains[name]); err != nil {
			return err
		}
	}
	return nil
}

// validateObjects checks everything except chain contents.
func (r *Ruleset) validateObjects() error {
	return r.validateNamed(sortedKeys(r.Chains), unionKeys(r.Sets, r.Maps))
}

// validateNamed checks the declarations of the named chains and of the
// named sets and maps (one namespace), where they exist.
func (r *Ruleset) validateNamed(chains, sets []string) error {
	for _, name := range sets {
		s, isSet := r.Sets[name]
		m, isMap := r.Maps[name]
		if isSet && isMap {
			return fmt.Errorf("%q is both a set and a map", name)
		}
		if isSet {
			if err := validateSetDecl(name, s); err != nil {
				return err
			}
		}
		if isMap {
			if err := r.validateMap(name, m); err != nil {
				return err
			}
		}
	}
	for _, name := range chains {
		if c, ok := r.Chains[name]; ok {
			if err := validateChainDecl(name, c); err != nil {
				return err
			}
		}
	}
	return nil
}

func validateName(kind, name string) error {
	if name == "" || len(name) > maxNameLen || strings.ContainsRune(name, 0) {
		return fmt.Errorf("invalid %s name %q", kind, name)
	}
	return nil
}

func validateSetDecl(name string, s *Set) error {
	if s == nil || s.Name != name {
		return fmt.Errorf("set %q is stored under the wrong name", name)
	}
	if err := validateName("set", name); err != nil {
		return err
	}
	t, err := parseSetType(s.Type)
	if err != nil {
		return fmt.Errorf("set %q: %w", name, err)
	}
	if s.Interval && !t.intervalCapable() {
		return fmt.Errorf("set %q: type %s cannot be an interval set", name, t.name)
	}
	return nil
}

func (r *Ruleset) validateMap(name string, m *Map) error {
	if m == nil || m.Name != name {
		return fmt.Errorf("map %q is stored under the wrong name", name)
	}
	if err := validateName("map", name); err != nil {
		return err
	}
	if _, err := parseSetType(m.KeyType); err != nil {
		return fmt.Errorf("map %q: %w", name, err)
	}
	return nil
}

// validateMapElements checks that every verdict of the map targets a
// regular chain of the ruleset.
func (r *Ruleset) validateMapElements(m *Map) error {
	for k, v := range m.Elements {
		if err := r.checkVerdictTarget(v); err != nil {
			return fmt.Errorf("map %q element %q: %w", m.Name, k, err)
		}
	}
	return nil
}

func validateChainDecl(name string, c *Chain) error {
	if c == nil || c.Name != name {
		return fmt.Errorf("chain %q is stored under the wrong name", name)
	}
	if err := validateName("chain", name); err != nil {
		return err
	}
	if c.Base != nil {
		return validateBase(name, c.Base)
	}
	return nil
}

func validateBase(name string, b *BaseChain) error {
	switch b.Hook {
	case HookPrerouting, HookInput, HookForward, HookOutput, HookPostrouting:
	default:
		return fmt.Errorf("chain %q: unknown hook %q", name, b.Hook)
	}
	switch {
	case b.Type == TypeFilter:
	case b.Type == TypeNAT && b.Hook != HookForward:
	case b.Type == TypeRoute && b.Hook == HookOutput:
	default:
		return fmt.Errorf("chain %q: type %q cannot use hook %s", name, b.Type, b.Hook)
	}
	if p := b.policy(); p != PolicyAccept && p != PolicyDrop {
		return fmt.Errorf("chain %q: unknown policy %q", name, p)
	}
	return nil
}

// validateChain checks every rule of a chain and its references.
func (r *Ruleset) validateChain(name string, c *Chain) error {
	for i, rule := range c.Rules {
		if err := r.validateRule(rule); err != nil {
			return fmt.Errorf("chain %q rule %d (%s): %w", name, i, rule, err)
		}
	}
	return nil
}

func (r *Ruleset) validateRule(rule Rule) error {
	if len(rule.Exprs) == 0 {
		return errors.New("empty rule")
	}
	for _, x := range rule.Exprs {
		if x == nil {
			return errors.New("nil primitive")
		}
		if c, ok := x.(checker); ok {
			if err := c.check(); err != nil {
				return err
			}
		}
		var err error
		x.refs(func(rf ref) {
			if err == nil {
				err = r.checkRef(rf)
			}
		})
		if err != nil {
			return err
		}
	}
	// A dry run of the encoder finds what only the rule as a whole shows,
	// such as an ip and an ip6 match in one rule.
	enc := newEncoder(func(*nftables.Set, []nftables.SetElement) error { return nil })
	for _, x := range rule.Exprs {
		x.encode(enc)
	}
	return enc.err
}

// checkRef checks that a reference resolves in the ruleset.
func (r *Ruleset) checkRef(rf ref) error {
	switch rf.kind {
	case refChain:
		return r.checkVerdictTarget(Verdict{Kind: VerdictJump, Chain: rf.name})
	case refSet:
		s, ok := r.Sets[rf.name]
		if !ok {
			return fmt.Errorf("set %q does not exist", rf.name)
		}
		if t, err := parseSetType(s.Type); err != nil || t.name != rf.typ {
			return fmt.Errorf("set %q has type %s, lookup needs %s", rf.name, s.Type, rf.typ)
		}
	case refMap:
		m, ok := r.Maps[rf.name]
		if !ok {
			return fmt.Errorf("map %q does not exist", rf.name)
		}
		if t, err := parseSetType(m.KeyType); err != nil || t.name != rf.typ {
			return fmt.Errorf("map %q has key type %s, lookup needs %s", rf.name, m.KeyType, rf.typ)
		}
	}
	return nil
}

// checkVerdictTarget checks a verdict's chain: it must exist and must not
// be a base chain (the kernel refuses jumps to base chains).
func (r *Ruleset) checkVerdictTarget(v Verdict) error {
	if v.Kind < VerdictAccept || v.Kind > VerdictGoto {
		return errBadVerdict
	}
	if v.Kind != VerdictJump && v.Kind != VerdictGoto {
		return nil
	}
	c, ok := r.Chains[v.Chain]
	if !ok {
		return fmt.Errorf("chain %q does not exist", v.Chain)
	}
	if c.Base != nil {
		return fmt.Errorf("chain %q is a base chain and cannot be a jump target", v.Chain)
	}
	return nil
}

func (m ifnameMatch) check() error {
	name := strings.TrimSuffix(m.name, "*")
	if len(name) >= ifnameSize || strings.ContainsAny(name, "\x00*\"") || m.name == "" {
		return fmt.Errorf("invalid interface name %q", m.name)
	}
	return nil
}

func (m lookupMatch) check() error {
	if m.bad {
		return fmt.Errorf("a lookup needs 1 to %d fields", maxConcat)
	}
	return checkFields(m.fields.slice())
}

func (s vmapStmt) check() error { return checkFields([]Field{s.field}) }

func (m portMatch) check() error {
	if m.ranges == "" {
		return errNoPorts
	}
	return checkFields([]Field{m.field})
}

func checkFields(fields []Field) error {
	for _, f := range fields {
		if f.kind == 0 {
			return errors.New("zero Field")
		}
		if (f.kind == fieldSPort || f.kind == fieldDPort) && f.proto != 0 && l4Keyword(f.proto) == "th" {
			return fmt.Errorf("protocol %d has no ports; use 0 (th) with a meta l4proto match", f.proto)
		}
		if (f.kind == fieldSAddr || f.kind == fieldDAddr) && f.fam != IPv4 && f.fam != IPv6 {
			return fmt.Errorf("unknown family %d", f.fam)
		}
	}
	return nil
}

func (m addrMatch) check() error {
	if !m.prefix.IsValid() {
		return errors.New("invalid address prefix")
	}
	return nil
}

func (m icmpMatch) check() error {
	if m.fam != IPv4 && m.fam != IPv6 {
		return fmt.Errorf("unknown family %d", m.fam)
	}
	return nil
}

func (m nfprotoMatch) check() error {
	if m.fam != IPv4 && m.fam != IPv6 {
		return fmt.Errorf("unknown family %d", m.fam)
	}
	return nil
}

func (m ctMatch) check() error {
	if m.bits == 0 {
		return errors.New("ct match without states")
	}
	return nil
}

func (s natStmt) check() error {
	if !s.addr.IsValid() {
		return errors.New("NAT without an address")
	}
	if s.ports.First > s.ports.Last || s.ports.First == 0 && s.ports.Last != 0 {
		return fmt.Errorf("invalid NAT port range %s", s.ports)
	}
	return nil
}

func (s masqStmt) check() error {
	if s.hasPorts && (s.ports.First == 0 || s.ports.First > s.ports.Last) {
		return fmt.Errorf("invalid masquerade port range %s", s.ports)
	}
	return nil
}
