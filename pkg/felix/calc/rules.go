package calc

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/selector"
)

// allSelector is all(): the selector of a named-port set on a side without a selector.
var allSelector = selector.MustParse("all()")

// ruleRenderer turns v3 rules into dataplane Rules, collecting the IP sets they use.
type ruleRenderer struct {
	log  zerolog.Logger // carries the owning policy or profile
	ns   string         // the NetworkPolicy's namespace, "" for global policies and profiles
	sets map[string]ipSetSpec
}

// errMatchesNothing marks a rule that can never match a packet (no IP family left, or a
// Kubernetes Service match, which names nothing here): leaving it out is exact.
var errMatchesNothing = errors.New("the rule can never match")

// renderRules renders a list of rules. A rule that can never match is left out; a rule that
// cannot be interpreted is logged and kept as an Invalid rule, which the dataplane enforces by
// dropping what reaches it (leaving out a deny, pass or log rule would let through what it
// stops).
func (r *ruleRenderer) renderRules(dir string, rules []api.Rule) []Rule {
	var out []Rule
	for i := range rules {
		rs, err := r.renderRule(&rules[i])
		switch {
		case errors.Is(err, errMatchesNothing):
			r.log.Warn().Err(err).Str("direction", dir).Int("rule", i).Msg("Rule can never match; leaving it out")
			continue
		case err != nil:
			r.log.Warn().Err(err).Str("direction", dir).Int("rule", i).
				Msg("Rule cannot be interpreted; packets that reach it are dropped (fail closed)")
			rs = []Rule{invalidRule(&rules[i], err)}
		}
		for j := range rs {
			rs[j].Index = i
		}
		out = append(out, rs...)
	}
	return out
}

// invalidRule stands for a rule calc could not interpret: no matches but its IP version.
func invalidRule(ar *api.Rule, err error) Rule {
	rule := Rule{Action: RuleDeny, RuleID: ruleID(ar), Invalid: err.Error()}
	if ar.IPVersion != nil && (*ar.IPVersion == 4 || *ar.IPVersion == 6) {
		rule.IPVersion = *ar.IPVersion
	}
	return rule
}

// sideMatch is one side (source or destination) of a rule, resolved.
type sideMatch struct {
	nets, notNets   []netip.Prefix
	ports, notPorts []PortRange
	selSet          string   // positive selector set ID, "" for none
	useSelSet       bool     // the selector set is needed (numeric ports, or no named ports)
	namedSets       []string // positive named-port sets
	notSelSet       string
	notNamedSets    []string
}

// renderRule renders one v3 rule into one or more Rules (several when numeric and named ports
// are mixed on a side, since the two are alternatives).
func (r *ruleRenderer) renderRule(ar *api.Rule) ([]Rule, error) {
	base, err := ruleBase(ar)
	if err != nil {
		return nil, err
	}
	npProto := namedPortProtocol(base.Protocol)
	src, err := r.resolveSide(&ar.Source, npProto)
	if err != nil {
		return nil, fmt.Errorf("source: %w", err)
	}
	dst, err := r.resolveSide(&ar.Destination, npProto)
	if err != nil {
		return nil, fmt.Errorf("destination: %w", err)
	}
	ver, err := r.ruleFamilies(ar, base.Protocol, src, dst)
	if err != nil {
		return nil, err
	}
	base.IPVersion = ver
	base.SrcNets, base.NotSrcNets = filterFamily(src.nets, ver), filterFamily(src.notNets, ver)
	base.DstNets, base.NotDstNets = filterFamily(dst.nets, ver), filterFamily(dst.notNets, ver)
	base.NotSrcPorts, base.NotDstPorts = src.notPorts, dst.notPorts
	base.NotSrcIPSetIDs, base.NotDstIPSetIDs = idList(src.notSelSet), idList(dst.notSelSet)
	base.NotSrcNamedPortIPSetIDs, base.NotDstNamedPortIPSetIDs = src.notNamedSets, dst.notNamedSets
	base.RuleID = ruleID(ar)
	var out []Rule
	for _, s := range src.alternatives() {
		for _, d := range dst.alternatives() {
			rule := base
			rule.SrcPorts, rule.SrcIPSetIDs, rule.SrcNamedPortIPSetIDs = s.ports, s.sets, s.named
			rule.DstPorts, rule.DstIPSetIDs, rule.DstNamedPortIPSetIDs = d.ports, d.sets, d.named
			out = append(out, rule)
		}
	}
	return out, nil
}

// ruleBase converts the action, protocols and ICMP matches.
func ruleBase(ar *api.Rule) (Rule, error) {
	var rule Rule
	switch ar.Action {
	case api.ActionAllow, api.ActionDeny, api.ActionPass, api.ActionLog:
		rule.Action = strings.ToLower(ar.Action)
	default:
		return rule, fmt.Errorf("unknown action %q", ar.Action)
	}
	var err error
	if rule.Protocol, err = protocolNumber(ar.Protocol); err != nil {
		return rule, err
	}
	if rule.NotProtocol, err = protocolNumber(ar.NotProtocol); err != nil {
		return rule, err
	}
	if rule.ICMP, err = icmpMatch(ar.ICMP); err != nil {
		return rule, err
	}
	if rule.NotICMP, err = icmpMatch(ar.NotICMP); err != nil {
		return rule, err
	}
	// As Project Calico: icmp needs protocol ICMP or ICMPv6; notICMP may also go without a
	// protocol, and then matches the ICMP packets of each family whose type (and code) differ.
	isICMP := rule.Protocol == 1 || rule.Protocol == 58
	if ar.ICMP != nil && !isICMP || ar.NotICMP != nil && !isICMP && rule.Protocol != 0 {
		return rule, fmt.Errorf("ICMP match without protocol ICMP or ICMPv6")
	}
	portsUsed := len(ar.Source.Ports)+len(ar.Source.NotPorts)+len(ar.Destination.Ports)+len(ar.Destination.NotPorts) > 0
	if portsUsed && (ar.Protocol == nil || !ar.Protocol.SupportsPorts()) {
		return rule, fmt.Errorf("ports need protocol TCP, UDP, SCTP or UDPLite")
	}
	if ar.Source.Services != nil || ar.Destination.Services != nil {
		// Service matches name Kubernetes Services, which do not exist here: the match is
		// empty, so the rule can never match.
		return rule, fmt.Errorf("service matches are not supported: %w", errMatchesNothing)
	}
	return rule, nil
}

func protocolNumber(p *api.Protocol) (uint8, error) {
	if p == nil {
		return 0, nil
	}
	n, ok := p.NumberValue()
	if !ok || n == 0 {
		return 0, fmt.Errorf("unknown protocol %q", p.String())
	}
	return n, nil
}

func icmpMatch(f *api.ICMPFields) (*ICMPMatch, error) {
	if f == nil || f.Type == nil {
		if f != nil && f.Code != nil {
			return nil, fmt.Errorf("ICMP code without type")
		}
		return nil, nil
	}
	if *f.Type < 0 || *f.Type > 255 {
		return nil, fmt.Errorf("ICMP type %d out of range", *f.Type)
	}
	m := &ICMPMatch{Type: uint8(*f.Type)}
	if f.Code != nil {
		if *f.Code < 0 || *f.Code > 255 {
			return nil, fmt.Errorf("ICMP code %d out of range", *f.Code)
		}
		c := uint8(*f.Code)
		m.Code = &c
	}
	return m, nil
}

// namedPortProtocol is the protocol named ports resolve with: TCP unless the rule says UDP or
// SCTP (as Calico's rule scanner).
func namedPortProtocol(proto uint8) uint8 {
	if proto == 17 || proto == 132 {
		return proto
	}
	return 6
}

// resolveSide parses the nets, ports and selectors of one side and registers its IP sets.
func (r *ruleRenderer) resolveSide(er *api.EntityRule, npProto uint8) (sideMatch, error) {
	var m sideMatch
	var err error
	if m.nets, err = parseNets(er.Nets); err != nil {
		return m, err
	}
	if m.notNets, err = parseNets(er.NotNets); err != nil {
		return m, err
	}
	pos, neg, err := ruleSelectors(er, r.ns)
	if err != nil {
		return m, err
	}
	var named, notNamed []string
	m.ports, named = splitPorts(er.Ports)
	m.notPorts, notNamed = splitPorts(er.NotPorts)
	filter := pos
	if filter == nil {
		filter = allSelector
	}
	m.namedSets = r.namedPortSets(filter, named, npProto)
	m.notNamedSets = r.namedPortSets(filter, notNamed, npProto)
	m.useSelSet = len(m.ports) > 0 || len(named) == 0
	if pos != nil && m.useSelSet {
		m.selSet = r.selectorSet(pos)
	}
	if neg != nil {
		m.notSelSet = r.selectorSet(neg)
	}
	return m, nil
}

func (r *ruleRenderer) selectorSet(sel *selector.Selector) string {
	id := sel.UniqueID()
	r.sets[id] = ipSetSpec{id: id, sel: sel}
	return id
}

func (r *ruleRenderer) namedPortSets(sel *selector.Selector, names []string, proto uint8) []string {
	var ids []string
	for _, name := range names {
		id := namedPortSetID(sel, proto, name)
		r.sets[id] = ipSetSpec{id: id, sel: sel, namedPort: name, proto: proto}
		ids = append(ids, id)
	}
	return ids
}

// namedPortSetID is Calico's ID of a named-port set: MakeUniqueID("n", "<selector ID>,<proto>,<name>").
func namedPortSetID(sel *selector.Selector, proto uint8, name string) string {
	protoName := map[uint8]string{6: "tcp", 17: "udp", 132: "sctp"}[proto]
	return uniqueID("n", sel.UniqueID()+","+protoName+","+name)
}

// uniqueID is Calico's hash.MakeUniqueID: prefix + ":" + base64url(SHA-224(prefix + ":" + content)).
func uniqueID(prefix, content string) string {
	h := sha256.Sum224([]byte(prefix + ":" + content))
	return prefix + ":" + base64.RawURLEncoding.EncodeToString(h[:])
}

// alternative is one way a side can match: numeric ports with the selector set, or named ports.
type alternative struct {
	ports []PortRange
	sets  []string
	named []string
}

func (m *sideMatch) alternatives() []alternative {
	var out []alternative
	if m.useSelSet {
		out = append(out, alternative{ports: m.ports, sets: idList(m.selSet)})
	}
	if len(m.namedSets) > 0 {
		out = append(out, alternative{named: m.namedSets})
	}
	return out
}

func idList(id string) []string {
	if id == "" {
		return nil
	}
	return []string{id}
}

func splitPorts(ports []api.Port) (numeric []PortRange, named []string) {
	for _, p := range ports {
		if p.PortName != "" {
			named = append(named, p.PortName)
			continue
		}
		numeric = append(numeric, PortRange{First: p.MinPort, Last: p.MaxPort})
	}
	return numeric, named
}

// parseNets parses CIDRs (or bare addresses), masking host bits.
func parseNets(in []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range in {
		p, err := parsePrefixOrAddr(s)
		if err != nil {
			return nil, err
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// parsePrefixOrAddr parses "10.0.0.0/8" or "10.0.0.1" (as /32), keeping host bits.
func parsePrefixOrAddr(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("invalid CIDR %q", s)
		}
		return unmapPrefix(p), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("invalid address %q", s)
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// unmapPrefix makes an IPv4-mapped IPv6 prefix (::ffff:10.0.0.0/104) the IPv4 prefix it maps
// (10.0.0.0/8); a mapped prefix shorter than /96 covers more than IPv4 and stays IPv6. Other
// prefixes are returned as they are. The result is always a valid prefix of its address.
func unmapPrefix(p netip.Prefix) netip.Prefix {
	if !p.Addr().Is4In6() || p.Bits() < 96 {
		return p
	}
	return netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
}

// ruleFamilies works out which IP families the rule can be rendered for: 0 (both), 4 or 6. A
// family is left out when ipVersion says so, when the protocol is the other family's ICMP, when
// the source or destination nets have none of that family, or when their negated nets have none
// or all of it.
func (r *ruleRenderer) ruleFamilies(ar *api.Rule, proto uint8, src, dst sideMatch) (int, error) {
	fams := map[int]string{4: "", 6: ""}
	if ar.IPVersion != nil {
		for _, f := range []int{4, 6} {
			if f != *ar.IPVersion {
				fams[f] = "ipVersion"
			}
		}
	}
	restrict := func(f int, why string) {
		if fams[f] == "" {
			fams[f] = why
		}
	}
	if proto == 1 {
		restrict(6, "ICMP is IPv4 only")
	}
	if proto == 58 {
		restrict(4, "ICMPv6 is IPv6 only")
	}
	for _, f := range []int{4, 6} {
		if len(src.nets) > 0 && !hasFamily(src.nets, f) {
			restrict(f, "no source net of this family")
		}
		if len(dst.nets) > 0 && !hasFamily(dst.nets, f) {
			restrict(f, "no destination net of this family")
		}
		// As Project Calico's FilterRuleToIPVersion: a negated list with no net of the family,
		// or with its whole address space, leaves the rule out of that family too.
		if negatedOut(src.notNets, f) {
			restrict(f, "the negated source nets have none (or all) of this family")
		}
		if negatedOut(dst.notNets, f) {
			restrict(f, "the negated destination nets have none (or all) of this family")
		}
	}
	return r.pickFamily(ar, fams)
}

// negatedOut reports whether a non-empty negated net list rules family fam out.
func negatedOut(notNets []netip.Prefix, fam int) bool {
	if len(notNets) == 0 {
		return false
	}
	for _, n := range notNets {
		if familyOf(n.Addr()) == fam && n.Bits() == 0 {
			return true
		}
	}
	return !hasFamily(notNets, fam)
}

func (r *ruleRenderer) pickFamily(ar *api.Rule, fams map[int]string) (int, error) {
	switch {
	case fams[4] == "" && fams[6] == "":
		return 0, nil
	case fams[4] == "" || fams[6] == "":
		keep, drop := 4, 6
		if fams[4] != "" {
			keep, drop = 6, 4
		}
		if fams[drop] != "ipVersion" {
			if e := r.log.Debug(); e.Enabled() {
				e.Str("rule", ruleID(ar)).Int("family", drop).Str("reason", fams[drop]).
					Msg("Rule left out for one IP family")
			}
		}
		return keep, nil
	}
	return 0, fmt.Errorf("no IP family (IPv4: %s; IPv6: %s): %w", fams[4], fams[6], errMatchesNothing)
}

func hasFamily(nets []netip.Prefix, fam int) bool {
	for _, n := range nets {
		if familyOf(n.Addr()) == fam {
			return true
		}
	}
	return false
}

func familyOf(a netip.Addr) int {
	if a.Is4() {
		return 4
	}
	return 6
}

// filterFamily keeps the nets of one family (all of them when ver is 0).
func filterFamily(nets []netip.Prefix, ver int) []netip.Prefix {
	if ver == 0 || len(nets) == 0 {
		return nets
	}
	var out []netip.Prefix
	for _, n := range nets {
		if familyOf(n.Addr()) == ver {
			out = append(out, n)
		}
	}
	return out
}

// ruleID is a short stable hash of the v3 rule.
func ruleID(ar *api.Rule) string {
	b, _ := json.Marshal(ar)
	h := sha256.Sum224(b)
	return base64.RawURLEncoding.EncodeToString(h[:])[:16]
}
