package confd

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"github.com/calico-host/calico-host/pkg/api"
)

// BGPFilters become BIRD functions with Project Calico's names and semantics: each rule is one
// statement, "if (<every match>) then { <operations> accept|reject; }", guarded by
// "if (is_same_as)" (iBGP) or "if (!is_same_as)" (eBGP) when it has a peerType. A rule that
// cannot be written exactly (a setting calico-host does not implement, a value BIRD cannot take)
// is never written wider or left out: the whole direction of the filter is not applied, and the
// sessions that name the filter import (or export) nothing in that direction.

// filterFuncName names the BIRD function of one BGPFilter direction the way Project Calico does:
// 'bgp_<name>_importFilterV4', with long names truncated and suffixed with a hash.
func filterFuncName(filter, direction, suffix string) (Symbol, error) {
	fixed := len("bgp__") + len(direction) + len("Filter") + len(suffix)
	return newSymbol(fmt.Sprintf("bgp_%s_%sFilter%s", truncateAndHash(filter, maxSymbolLen-fixed), direction, suffix), true)
}

// truncateAndHash shortens name to maxLen: a prefix, "_" and 16 hex digits of its SHA-256.
func truncateAndHash(name string, maxLen int) string {
	if len(name) <= maxLen {
		return name
	}
	const hashLen = 16
	sum := fmt.Sprintf("%X", sha256.Sum256([]byte(name)))
	return name[:maxLen-hashLen-1] + "_" + sum[:hashLen]
}

// filterRules returns a BGPFilter's rules for one family and direction.
func filterRules(s *api.BGPFilterSpec, fi int, direction string) []api.BGPFilterRule {
	switch {
	case fi == 0 && direction == "import":
		return s.ImportV4
	case fi == 0:
		return s.ExportV4
	case direction == "import":
		return s.ImportV6
	}
	return s.ExportV6
}

// filterDir is one direction of one BGPFilter in one family.
type filterDir struct {
	filter string
	fi     int
	dir    string
}

// filterFuncs builds the functions of every BGPFilter with rules in family fi. A direction with
// a rule that cannot be written exactly gets no function and is remembered as blocked.
func (b *builder) filterFuncs(fi int) []FilterFunc {
	var out []FilterFunc
	for _, name := range sortedKeys(b.in.Filters) {
		for _, dir := range []string{"import", "export"} {
			rules := filterRules(&b.in.Filters[name].Spec, fi, dir)
			if len(rules) == 0 {
				continue
			}
			fn, err := filterFunc(name, dir, fi, rules)
			if err != nil {
				b.warn("BGPFilter %s: %v; its %s %s rules are not applied: the sessions that use it %s nothing",
					name, err, families[fi].channel, dir, dir)
				b.blockFilter(filterDir{name, fi, dir})
				continue
			}
			out = append(out, fn)
		}
	}
	return out
}

func (b *builder) blockFilter(d filterDir) {
	if b.blocked == nil {
		b.blocked = map[filterDir]bool{}
	}
	b.blocked[d] = true
}

// filterFunc converts the rules of one direction.
func filterFunc(filter, dir string, fi int, rules []api.BGPFilterRule) (FilterFunc, error) {
	name, err := filterFuncName(filter, dir, families[fi].filter)
	if err != nil {
		return FilterFunc{}, err
	}
	fn := FilterFunc{Name: name, Filter: newComment(filter), Direction: dir, filter: filter}
	for i, r := range rules {
		stmt, err := filterStatement(r, fi)
		if err != nil {
			return FilterFunc{}, fmt.Errorf("%s rule %d: %w", dir, i+1, err)
		}
		fn.PeerTyped = fn.PeerTyped || r.PeerType != ""
		fn.Rules = append(fn.Rules, stmt)
	}
	return fn, nil
}

// filterStatement converts one rule: every present match must hold for the operations and the
// action to apply.
func filterStatement(r api.BGPFilterRule, fi int) (Syntax, error) {
	if u := r.Unsupported(); len(u) > 0 {
		return Syntax{}, fmt.Errorf("%s: %s", u[0].Field, u[0].Message)
	}
	action, ok := map[string]Syntax{"Accept": {s: "accept;"}, "Reject": {s: "reject;"}}[r.Action]
	if !ok {
		return Syntax{}, fmt.Errorf("unknown action %q", r.Action)
	}
	conds, err := filterConditions(r, fi)
	if err != nil {
		return Syntax{}, err
	}
	ops, err := filterOperations(r)
	if err != nil {
		return Syntax{}, err
	}
	stmt := joinSyntax(append(ops, action), " ")
	if len(conds) > 0 {
		stmt = syntaxf("if (%s) then { %s }", joinSyntax(conds, "&&"), stmt)
	}
	switch r.PeerType {
	case "":
	case "iBGP":
		stmt = syntaxf("if (is_same_as) then { %s }", stmt)
	case "eBGP":
		stmt = syntaxf("if (!is_same_as) then { %s }", stmt)
	default:
		return Syntax{}, fmt.Errorf("unknown peer type %q", r.PeerType)
	}
	return stmt, nil
}

// filterConditions are the matches of a rule, in Project Calico's order: CIDR (with prefix
// length), source, interface, community, AS path prefix, priority.
func filterConditions(r api.BGPFilterRule, fi int) ([]Syntax, error) {
	var conds []Syntax
	if r.CIDR != "" || r.MatchOperator != "" {
		c, err := cidrCondition(r, fi)
		if err != nil {
			return nil, err
		}
		conds = append(conds, c)
	}
	switch r.Source {
	case "":
	case "RemotePeers":
		conds = append(conds, Syntax{s: "((defined(source))&&(source ~ [ RTS_BGP ]))"})
	default:
		return nil, fmt.Errorf("unknown source %q", r.Source)
	}
	if r.Interface != "" {
		t, err := interfacePattern(r.Interface)
		if err != nil {
			return nil, err
		}
		conds = append(conds, syntaxf("((defined(ifname))&&(ifname ~ %s))", t))
	}
	if r.Communities != nil {
		if len(r.Communities.Values) != 1 {
			return nil, fmt.Errorf("communities: exactly one value is required, not %d", len(r.Communities.Values))
		}
		c, ok := parseCommunity(r.Communities.Values[0])
		if !ok {
			return nil, fmt.Errorf("bad community %q", r.Communities.Values[0])
		}
		conds = append(conds, syntaxf("(%s ~ %s)", c, c.Attribute()))
	}
	if len(r.ASPathPrefix) > 0 {
		conds = append(conds, syntaxf("(bgp_path ~ [= %s * =])", asList(r.ASPathPrefix)))
	}
	if r.Priority != nil {
		lp, err := priorityLocalPref(*r.Priority)
		if err != nil {
			return nil, fmt.Errorf("priority: %w", err)
		}
		conds = append(conds, syntaxf("(defined(bgp_local_pref)&&(bgp_local_pref = %d))", lp))
	}
	return conds, nil
}

// priorityLocalPref is the LOCAL_PREF that carries a route priority (a kernel metric, in the
// units of BGPConfiguration's ...NormalRoutePriority): 2147483647 - priority, as Project
// Calico's BIRD converts them (the export filter sets it from the route's metric, the kernel
// filter turns it back into one).
func priorityLocalPref(priority int) (int64, error) {
	if priority < 1 || priority >= maxRoutePriority {
		return 0, fmt.Errorf("%d is out of range 1-%d", priority, maxRoutePriority-1)
	}
	return maxRoutePriority - int64(priority), nil
}

func interfacePattern(s string) (Text, error) {
	if !api.IsInterfacePattern(s) {
		return Text{}, fmt.Errorf("bad interface pattern %q", s)
	}
	return newText(s)
}

// asList is AS numbers separated by blanks.
func asList(asns []api.ASNumber) Syntax {
	parts := make([]Syntax, len(asns))
	for i, a := range asns {
		parts[i] = syntaxf("%d", uint32(a))
	}
	return joinSyntax(parts, " ")
}

// filterOperations are the route modifications of an Accept rule, in order. An AS path
// prefix is prepended last number first, so that the path starts with the numbers as listed.
func filterOperations(r api.BGPFilterRule) ([]Syntax, error) {
	if len(r.Operations) > 0 && r.Action != "Accept" {
		return nil, errors.New("operations are only allowed with action Accept")
	}
	var out []Syntax
	for j, op := range r.Operations {
		switch {
		case op.AddCommunity != nil && op.PrependASPath == nil && op.SetPriority == nil:
			c, ok := parseCommunity(op.AddCommunity.Value)
			if !ok {
				return nil, fmt.Errorf("operation %d: bad community %q", j+1, op.AddCommunity.Value)
			}
			out = append(out, syntaxf("%s.add(%s);", c.Attribute(), c))
		case op.PrependASPath != nil && op.AddCommunity == nil && op.SetPriority == nil && len(op.PrependASPath.Prefix) > 0:
			for _, a := range slices.Backward(op.PrependASPath.Prefix) {
				out = append(out, syntaxf("bgp_path.prepend(%d);", uint32(a)))
			}
		case op.SetPriority != nil && op.AddCommunity == nil && op.PrependASPath == nil:
			lp, err := priorityLocalPref(op.SetPriority.Value)
			if err != nil {
				return nil, fmt.Errorf("operation %d: setPriority: %w", j+1, err)
			}
			out = append(out, syntaxf("bgp_local_pref = %d;", lp))
		default:
			return nil, fmt.Errorf("operation %d: not exactly one supported operation", j+1)
		}
	}
	return out, nil
}

// matchOperators maps BGPFilter operators to BIRD's.
var matchOperators = map[string]string{"Equal": "=", "NotEqual": "!=", "In": "~", "NotIn": "!~"}

// cidrCondition is "(net OP CIDR)", with a prefix-length range "[ CIDR{min,max} ]" when given
// (for In and NotIn: Unsupported refuses a range with Equal and NotEqual).
func cidrCondition(r api.BGPFilterRule, fi int) (Syntax, error) {
	op, ok := matchOperators[r.MatchOperator]
	if !ok {
		return Syntax{}, fmt.Errorf("unknown match operator %q", r.MatchOperator)
	}
	p, err := netip.ParsePrefix(r.CIDR)
	if err != nil || familyIndex(p.Addr()) != fi || p.Addr().Is4In6() {
		return Syntax{}, fmt.Errorf("bad %s CIDR %q", families[fi].channel, r.CIDR)
	}
	p = p.Masked()
	pl := r.PrefixLength
	if pl == nil {
		return syntaxf("(net %s %s)", op, p), nil
	}
	if op == "=" || op == "!=" {
		return Syntax{}, errors.New("a prefix length range with Equal or NotEqual")
	}
	lo, hi := p.Bits(), p.Addr().BitLen()
	if pl.Min != nil {
		lo = max(lo, *pl.Min)
	}
	if pl.Max != nil {
		hi = min(hi, *pl.Max)
	}
	if lo > hi || lo < 0 {
		return Syntax{}, fmt.Errorf("prefix length range %d-%d is empty for %s", lo, hi, p)
	}
	return syntaxf("(net %s [ %s{%d,%d} ])", op, p, lo, hi), nil
}

// peerFilterCalls sets the BGPFilter function calls of a session, with the argument "true" for an
// iBGP peer (same AS as this node) when the function takes one. A filter that exists but cannot
// be applied (invalid, or a direction that cannot be written exactly) stops that direction of the
// session; a filter that does not exist is ignored, as Project Calico does.
func (b *builder) peerFilterCalls(p *Peer, peer string, names []string, funcs []FilterFunc) {
	fi := familyIndex(p.IP)
	sameAS := p.AS == p.localAS(b.local.as)
	for _, name := range names {
		if _, bad := b.in.InvalidFilters[name]; bad {
			b.warn("BGPPeer %s: filter %q is invalid: session %s imports and exports nothing", peer, name, p.Name.Name())
			p.ImportNone, p.ExportNone = true, true
			continue
		}
		if b.in.Filters[name] == nil {
			b.warn("BGPPeer %s: filter %q does not exist; ignored", peer, name)
			continue
		}
		for _, dir := range []string{"import", "export"} {
			if !b.blocked[filterDir{name, fi, dir}] {
				continue
			}
			b.warn("BGPPeer %s: filter %q cannot be applied: session %s %ss nothing", peer, name, p.Name.Name(), dir)
			if dir == "import" {
				p.ImportNone = true
			} else {
				p.ExportNone = true
			}
		}
		for _, fn := range funcs {
			if fn.filter != name {
				continue
			}
			call := syntaxf("%s()", fn.Name)
			if fn.PeerTyped {
				call = syntaxf("%s(%t)", fn.Name, sameAS)
			}
			if fn.Direction == "import" {
				p.ImportFilters = append(p.ImportFilters, call)
			} else {
				p.ExportFilters = append(p.ExportFilters, call)
			}
		}
	}
}
