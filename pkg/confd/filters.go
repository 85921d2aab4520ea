package confd

import (
	"crypto/sha256"
	"fmt"
	"net/netip"
	"strings"

	"github.com/calico-host/calico-host/pkg/api"
)

// maxBIRDSymbol is BIRD's limit on symbol length.
const maxBIRDSymbol = 64

// filterFuncName names the BIRD function of one BGPFilter direction the way Project Calico does:
// 'bgp_<name>_importFilterV4', with long names truncated and suffixed with a hash.
func filterFuncName(filter, direction, suffix string) string {
	fixed := len("bgp__") + len(direction) + len("Filter") + len(suffix)
	return fmt.Sprintf("'bgp_%s_%sFilter%s'", truncateAndHash(filter, maxBIRDSymbol-fixed), direction, suffix)
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

// filterFuncs builds the functions of every BGPFilter with rules in family fi. A filter with a
// rule that cannot be expressed is left out (and its peers do not call it), with a warning.
func (b *builder) filterFuncs(fi int) []FilterFunc {
	var out []FilterFunc
	for _, name := range sortedKeys(b.in.Filters) {
		spec := &b.in.Filters[name].Spec
		var funcs []FilterFunc
		ok := true
		for _, dir := range []string{"import", "export"} {
			rules := filterRules(spec, fi, dir)
			if len(rules) == 0 {
				continue
			}
			fn, err := filterFunc(name, dir, families[fi].filter, fi, rules)
			if err != nil {
				b.warn("BGPFilter %s: %v; filter not applied", name, err)
				ok = false
				break
			}
			funcs = append(funcs, fn)
		}
		if ok {
			out = append(out, funcs...)
		}
	}
	return out
}

// filterFunc converts the rules of one direction.
func filterFunc(filter, dir, suffix string, fi int, rules []api.BGPFilterRule) (FilterFunc, error) {
	fn := FilterFunc{Name: filterFuncName(filter, dir, suffix), Filter: filter, Direction: dir}
	for i, r := range rules {
		rule, err := filterRule(r, fi)
		if err != nil {
			return FilterFunc{}, fmt.Errorf("%s rule %d: %w", dir, i+1, err)
		}
		fn.Rules = append(fn.Rules, rule)
	}
	return fn, nil
}

// matchOperators maps BGPFilter operators to BIRD's.
var matchOperators = map[string]string{"Equal": "=", "NotEqual": "!=", "In": "~", "NotIn": "!~"}

// filterRule converts one rule: every present match (CIDR with operator and prefix length,
// source, interface) must hold for the action to apply.
func filterRule(r api.BGPFilterRule, fi int) (FilterRule, error) {
	action := strings.ToLower(r.Action)
	if action != "accept" && action != "reject" {
		return FilterRule{}, fmt.Errorf("unknown action %q", r.Action)
	}
	var conds []string
	if r.CIDR != "" {
		c, err := cidrCondition(r, fi)
		if err != nil {
			return FilterRule{}, err
		}
		conds = append(conds, c)
	}
	switch r.Source {
	case "":
	case "RemotePeers":
		conds = append(conds, "((defined(source))&&(source ~ [ RTS_BGP ]))")
	default:
		return FilterRule{}, fmt.Errorf("unknown source %q", r.Source)
	}
	if r.Interface != "" {
		if !birdStringOK(r.Interface) {
			return FilterRule{}, fmt.Errorf("bad interface pattern %q", r.Interface)
		}
		conds = append(conds, fmt.Sprintf("((defined(ifname))&&(ifname ~ %q))", r.Interface))
	}
	return FilterRule{Condition: strings.Join(conds, "&&"), Action: action}, nil
}

// cidrCondition is "(net OP CIDR)", with a prefix-length range "[ CIDR{min,max} ]" when given.
// Equal and NotEqual compare one prefix exactly, so a prefix length does not apply to them (BIRD
// cannot compare a prefix with a set using = and fails the filter at run time).
func cidrCondition(r api.BGPFilterRule, fi int) (string, error) {
	op, ok := matchOperators[r.MatchOperator]
	if !ok {
		return "", fmt.Errorf("unknown match operator %q", r.MatchOperator)
	}
	cidr, ok := canonicalCIDR(r.CIDR, fi)
	if !ok {
		return "", fmt.Errorf("bad %s CIDR %q", families[fi].channel, r.CIDR)
	}
	if pl := r.PrefixLength; pl != nil && (op == "~" || op == "!~") {
		bits := 32
		if fi == 1 {
			bits = 128
		}
		lo, hi := netip.MustParsePrefix(cidr).Bits(), bits
		if pl.Min != nil {
			lo = max(lo, *pl.Min)
		}
		if pl.Max != nil {
			hi = min(hi, *pl.Max)
		}
		if lo > hi {
			return "", fmt.Errorf("prefix length range %d-%d is empty for %s", lo, hi, cidr)
		}
		cidr = fmt.Sprintf("[ %s{%d,%d} ]", cidr, lo, hi)
	}
	return fmt.Sprintf("(net %s %s)", op, cidr), nil
}

// peerFilterCalls returns the functions a peer calls for its filters in family fi: only filters
// that exist and have rules in that direction. Missing filters are warned about.
func (b *builder) peerFilterCalls(peer string, names []string, fi int, funcs []FilterFunc) (imp, exp []string) {
	for _, name := range names {
		if b.in.Filters[name] == nil {
			b.warn("BGPPeer %s: filter %q does not exist; ignored", peer, name)
			continue
		}
		for _, fn := range funcs {
			if fn.Filter != name {
				continue
			}
			if fn.Direction == "import" {
				imp = append(imp, fn.Name)
			} else {
				exp = append(exp, fn.Name)
			}
		}
	}
	return imp, exp
}
