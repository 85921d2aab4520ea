package policydiff

import (
	"cmp"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strings"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/selector"
)

// The reference evaluator: Project Calico's verdict for one packet crossing one host, computed
// straight from the v3 objects. It is written from Project Calico's documented semantics and
// its libcalico-go conversion and felix rule rendering (read, not copied), never from our own
// renderer:
//
//   - Tiers run by ascending order (a tier without order after every ordered one; ties by name;
//     a tier object that does not exist sorts last and drops at its end). Within a tier, policies
//     run by ascending order (none = +Inf), ties broken by comparing "<name>/<namespace>/<kind>".
//   - A policy applies to an endpoint in a direction when its selector matches the endpoint's
//     labels (its own, then its profiles' labelsToApply in order) and its types name the
//     direction; a policy stored without types governs both directions. A NetworkPolicy's
//     selector is ANDed with projectcalico.org/namespace == '<ns>'.
//   - A tier with no policy applying in the direction is skipped. Otherwise the first rule that
//     matches in the policies, in order, decides: Allow accepts (no later tier or profile runs),
//     Deny drops, Pass jumps to the next tier, Log logs and goes on. When no policy passes or
//     decides, the tier's default action applies: Pass goes on, anything else drops.
//   - After the tiers, the endpoint's profiles run in order: Allow accepts, Deny drops, Pass ends
//     that profile only. If no profile accepts, the packet is dropped.
//   - A rule is left out of a family's ruleset when one of its nets lists (positive or negated)
//     is not empty but holds no CIDR of the family, or when a negated list holds the family's
//     whole space (felix/rules/policy.go FilterRuleToIPVersion, filterNets).
//   - An entity rule's selector is the one libcalico-go forms (its selector, restricted to the
//     policy's namespace or to the namespaceSelector's namespaces as soon as any selector field
//     is set). When that selector is not empty, the notSelector is folded into it: one IP set of
//     the endpoints and network sets matching "(selector) && (!(notSelector))", so an address
//     that such an item holds matches even if an item picked by the notSelector holds it too.
//     Only without a positive selector is the notSelector a negated IP set of its own
//     (felix/calc/rule_scanner.go extractSelectors, combineMatchesIfPossible). Named ports are
//     looked up among the endpoints that selector (all endpoints without one) matches.
//   - A packet from a local workload runs its egress chain first (where UDP to the VXLAN port 4789
//     and IP-in-IP are dropped before any policy); a packet to a local workload then runs the
//     destination's ingress chain. Anything else (the other end is not a local workload) only
//     runs the local end's chain.
//   - Forwarded traffic meets host endpoints (eval_host.go) in filter FORWARD: before the
//     workload chains, the ingress forward chain of the host endpoint of the input interface,
//     after them the egress forward chain of the output interface's (felix/rules/static.go
//     StaticFilterForwardChains, dispatch.go). Only applyOnForward policy applies there, tiers
//     as above, but without profiles and without a drop after the last tier: what no tier
//     accepted or dropped goes on, and so does everything when no applyOnForward policy selects
//     the endpoint (felix/rules/endpoints.go endpointIptablesChain, chainTypeForward). A packet
//     is delivered when no chain drops it.

// Packet is one IP packet as the evaluator sees it.
type Packet struct {
	Src, Dst           netip.Addr
	Proto              uint8
	SrcPort, DstPort   uint16 // TCP, UDP, SCTP
	ICMPType, ICMPCode uint8  // ICMP (IPv4) and ICMPv6
}

// IP protocol numbers.
const (
	protoICMP   = 1
	protoIPIP   = 4
	protoTCP    = 6
	protoUDP    = 17
	protoICMPv6 = 58
	protoSCTP   = 132
)

// Family is 4 or 6.
func (p Packet) Family() int {
	if p.Src.Is4() {
		return 4
	}
	return 6
}

func (p Packet) hasPorts() bool {
	return p.Proto == protoTCP || p.Proto == protoUDP || p.Proto == protoSCTP
}

func (p Packet) icmpProto() uint8 {
	if p.Family() == 4 {
		return protoICMP
	}
	return protoICMPv6
}

func (p Packet) String() string {
	switch {
	case p.hasPorts():
		return fmt.Sprintf("proto %d %s:%d -> %s:%d", p.Proto, p.Src, p.SrcPort, p.Dst, p.DstPort)
	case p.Proto == p.icmpProto():
		return fmt.Sprintf("proto %d (icmp type %d code %d) %s -> %s", p.Proto, p.ICMPType, p.ICMPCode, p.Src, p.Dst)
	}
	return fmt.Sprintf("proto %d %s -> %s", p.Proto, p.Src, p.Dst)
}

// Universe is every object of one scenario, as stored in etcd.
type Universe struct {
	Node     string // the host felix runs on; its workloads are the local ones
	Tiers    []*api.Tier
	GNPs     []*api.GlobalNetworkPolicy
	NPs      []*api.NetworkPolicy
	Profiles []*api.Profile
	GNSs     []*api.GlobalNetworkSet
	NSs      []*api.NetworkSet
	WEPs     []*api.WorkloadEndpoint
	HEPs     []*api.HostEndpoint
}

// Verdict is the evaluator's answer with the path it took: its steps in words, and the rules
// that gave a verdict (Decisions), in order.
type Verdict struct {
	Delivered bool
	Trace     []string
	Decisions []Decision
}

// Decision is a rule that gave a verdict (Allow, Deny or Pass): a policy's rule (Kind
// GlobalNetworkPolicy or NetworkPolicy), a profile's (Kind Profile; Name NoProfileMatched for
// the drop when none decided) or a tier's end (Kind EndOfTier, Rule -1).
type Decision struct {
	Tier, Kind, Namespace, Name string
	Rule                        int
	Action                      string
}

// NoProfileMatched names the drop after an endpoint's profiles.
const NoProfileMatched = "__NO_MATCH__"

func (d Decision) String() string {
	return fmt.Sprintf("%s %s %s/%s rule %d %s", d.Tier, d.Kind, d.Namespace, d.Name, d.Rule, d.Action)
}

func (v *Verdict) decided(d Decision) { v.Decisions = append(v.Decisions, d) }

// Evaluator holds a universe prepared for evaluation.
type Evaluator struct {
	node     string
	tiers    []*evalTier
	profiles map[string]*api.Profile
	eps      []*evalEndpoint
	hosts    []*evalHost
	sets     []*evalSet
}

type evalTier struct {
	name          string
	valid         bool
	order         *float64
	defaultAction string
	policies      []*evalPolicy
}

type evalPolicy struct {
	kind, ns, name string
	order          float64
	sel            *selector.Selector
	ingress        bool
	egress         bool
	forward        bool // applyOnForward
	in, out        []api.Rule
}

type evalEndpoint struct {
	wep    *api.WorkloadEndpoint
	labels inherited
	ips    []netip.Prefix
}

type evalSet struct {
	name   string
	labels selector.Map
	nets   []netip.Prefix
}

// inherited is an endpoint's labels: its own first, then each profile's labelsToApply in order.
type inherited []map[string]string

func (l inherited) Get(k string) (string, bool) {
	for _, m := range l {
		if v, ok := m[k]; ok {
			return v, true
		}
	}
	return "", false
}

// NewEvaluator prepares a universe. It refuses what it does not model.
func NewEvaluator(u *Universe) (*Evaluator, error) {
	e := &Evaluator{node: u.Node, profiles: map[string]*api.Profile{}}
	for _, p := range u.Profiles {
		e.profiles[p.Name] = p
	}
	if err := e.addEndpoints(u.WEPs); err != nil {
		return nil, err
	}
	if err := e.addHosts(u.HEPs); err != nil {
		return nil, err
	}
	if err := e.addSets(u); err != nil {
		return nil, err
	}
	if err := e.addPolicies(u); err != nil {
		return nil, err
	}
	return e, nil
}

func (e *Evaluator) addEndpoints(weps []*api.WorkloadEndpoint) error {
	for _, w := range weps {
		labels, err := e.inherit(w.Name, w.Labels, w.Spec.Profiles)
		if err != nil {
			return err
		}
		ep := &evalEndpoint{wep: w, labels: labels}
		if ep.ips, err = parseNets(w.Name, w.Spec.IPNetworks); err != nil {
			return err
		}
		e.eps = append(e.eps, ep)
	}
	return nil
}

// inherit is an endpoint's labels: its own, then its profiles' labelsToApply in order.
func (e *Evaluator) inherit(name string, own map[string]string, profiles []string) (inherited, error) {
	labels := inherited{own}
	for _, pn := range profiles {
		p, ok := e.profiles[pn]
		if !ok {
			return nil, fmt.Errorf("endpoint %s names profile %s, which does not exist (not modelled)", name, pn)
		}
		labels = append(labels, p.Spec.LabelsToApply)
	}
	return labels, nil
}

// parseNets parses an endpoint's addresses (CIDRs or plain addresses).
func parseNets(name string, nets []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, n := range nets {
		pfx, err := parseNet(n)
		if err != nil {
			return nil, fmt.Errorf("endpoint %s: %w", name, err)
		}
		out = append(out, pfx)
	}
	return out, nil
}

func (e *Evaluator) addSets(u *Universe) error {
	add := func(name string, labels map[string]string, nets []string) error {
		s := &evalSet{name: name, labels: selector.Map(labels)}
		for _, n := range nets {
			pfx, err := parseNet(n)
			if err != nil {
				return fmt.Errorf("network set %s: %w", name, err)
			}
			s.nets = append(s.nets, pfx)
		}
		e.sets = append(e.sets, s)
		return nil
	}
	for _, s := range u.GNSs {
		if err := add(s.Name, s.Labels, s.Spec.Nets); err != nil {
			return err
		}
	}
	for _, s := range u.NSs {
		// A namespaced set carries its namespace as a label (libcalico-go adds it when it
		// hands the set to felix).
		labels := map[string]string{}
		for k, v := range s.Labels {
			labels[k] = v
		}
		labels[api.LabelNamespace] = s.Namespace
		if err := add(s.Namespace+"/"+s.Name, labels, s.Spec.Nets); err != nil {
			return err
		}
	}
	return nil
}

func parseNet(s string) (netip.Prefix, error) {
	if a, err := netip.ParseAddr(s); err == nil {
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("bad CIDR %q", s)
	}
	return p.Masked(), nil
}

func (e *Evaluator) addPolicies(u *Universe) error {
	tiers := map[string]*evalTier{}
	for _, t := range u.Tiers {
		tiers[t.Name] = &evalTier{name: t.Name, valid: true, order: t.Spec.Order, defaultAction: t.Spec.DefaultAction}
	}
	add := func(kind, ns, name string, s api.PolicySpecView, nsSel string) error {
		p, err := newEvalPolicy(kind, ns, name, s, nsSel)
		if err != nil {
			return err
		}
		tier := cmp.Or(s.Tier, api.TierDefault)
		t := tiers[tier]
		if t == nil {
			t = &evalTier{name: tier}
			tiers[tier] = t
		}
		t.policies = append(t.policies, p)
		return nil
	}
	for _, p := range u.GNPs {
		if p.Spec.DoNotTrack || p.Spec.PreDNAT || p.Spec.ServiceAccountSelector != "" {
			return fmt.Errorf("policy %s: doNotTrack, preDNAT and service-account selectors are not modelled", p.Name)
		}
		if err := add("GlobalNetworkPolicy", "", p.Name, p.View(), p.Spec.NamespaceSelector); err != nil {
			return err
		}
	}
	for _, p := range u.NPs {
		if p.Spec.ServiceAccountSelector != "" {
			return fmt.Errorf("policy %s/%s: service-account selectors are not modelled", p.Namespace, p.Name)
		}
		if err := add("NetworkPolicy", p.Namespace, p.Name, p.View(), ""); err != nil {
			return err
		}
	}
	for _, t := range tiers {
		slices.SortFunc(t.policies, policyCmp)
		e.tiers = append(e.tiers, t)
	}
	slices.SortFunc(e.tiers, tierCmp)
	return nil
}

// policyCmp orders policies within a tier: by order, then by "<name>/<namespace>/<kind>".
func policyCmp(a, b *evalPolicy) int {
	if a.order != b.order {
		return cmp.Compare(a.order, b.order)
	}
	return strings.Compare(a.name+"/"+a.ns+"/"+a.kind, b.name+"/"+b.ns+"/"+b.kind)
}

// tierCmp orders tiers: existing before missing, ordered before unordered, then by order and name.
func tierCmp(a, b *evalTier) int {
	if a.valid != b.valid {
		if a.valid {
			return -1
		}
		return 1
	}
	if (a.order == nil) != (b.order == nil) {
		if a.order != nil {
			return -1
		}
		return 1
	}
	if a.order != nil && *a.order != *b.order {
		return cmp.Compare(*a.order, *b.order)
	}
	return strings.Compare(a.name, b.name)
}

func newEvalPolicy(kind, ns, name string, s api.PolicySpecView, nsSel string) (*evalPolicy, error) {
	if nsSel != "" {
		return nil, fmt.Errorf("policy %s: a policy-level namespaceSelector is not modelled", name)
	}
	p := &evalPolicy{kind: kind, ns: ns, name: name, order: math.Inf(1), forward: s.ApplyOnForward, in: s.Ingress, out: s.Egress}
	if s.Order != nil {
		p.order = *s.Order
	}
	text := s.Selector
	if ns != "" {
		nsText := fmt.Sprintf("%s == '%s'", api.LabelNamespace, ns)
		if text == "" {
			text = nsText
		} else {
			text = fmt.Sprintf("(%s) && %s", text, nsText)
		}
	}
	sel, err := selector.Parse(text)
	if err != nil {
		return nil, fmt.Errorf("policy %s selector %q: %w", name, text, err)
	}
	p.sel = sel
	if len(s.Types) == 0 {
		p.ingress, p.egress = true, true
	}
	for _, t := range s.Types {
		switch strings.ToLower(t) {
		case "ingress":
			p.ingress = true
		case "egress":
			p.egress = true
		}
	}
	return p, nil
}

// Evaluate returns Project Calico's verdict for a packet forwarded by the host: the chains of
// filter FORWARD in their order, the first drop ends it.
func (e *Evaluator) Evaluate(p Packet) Verdict {
	v := Verdict{}
	src, dst := e.localEndpoint(p.Src), e.localEndpoint(p.Dst)
	v.Delivered = e.hostForward(ifaceOf(src), true, p, &v) &&
		(src == nil || e.endpointChain(src, false, p, &v)) &&
		(dst == nil || e.endpointChain(dst, true, p, &v)) &&
		e.hostForward(ifaceOf(dst), false, p, &v)
	return v
}

func (v *Verdict) tracef(format string, args ...any) {
	v.Trace = append(v.Trace, fmt.Sprintf(format, args...))
}

// localEndpoint is the workload endpoint of this node that owns addr, if any.
func (e *Evaluator) localEndpoint(addr netip.Addr) *evalEndpoint {
	for _, ep := range e.eps {
		if ep.wep.Spec.Node == e.node && ep.owns(addr) {
			return ep
		}
	}
	return nil
}

func (ep *evalEndpoint) owns(addr netip.Addr) bool {
	for _, n := range ep.ips {
		if n.Contains(addr) {
			return true
		}
	}
	return false
}

// endpointChain runs an endpoint's chain for one direction and reports whether it accepts.
func (e *Evaluator) endpointChain(ep *evalEndpoint, ingress bool, p Packet, v *Verdict) bool {
	dir := "egress"
	if ingress {
		dir = "ingress"
	}
	v.tracef("%s of %s/%s", dir, ep.wep.Namespace, ep.wep.Name)
	if !ingress && (p.Proto == protoIPIP || (p.Proto == protoUDP && p.DstPort == 4789)) {
		v.tracef("  encapsulated packet from a workload: drop")
		return false
	}
	switch e.tiersVerdict(ep.labels, ingress, nil, p, v) {
	case api.ActionAllow:
		return true
	case api.ActionDeny:
		return false
	}
	return e.profileChain(ep, ingress, p, v)
}

// tiersVerdict runs the tiers for an endpoint with these labels in one direction, over the
// policies that keep admits (all when nil): Allow or Deny when a tier decides, "" when the
// packet passes every tier that has a policy applying.
func (e *Evaluator) tiersVerdict(labels inherited, ingress bool, keep func(*evalPolicy) bool, p Packet, v *Verdict) string {
	for _, t := range e.tiers {
		var pols []*evalPolicy
		for _, pol := range t.policies {
			if ((ingress && pol.ingress) || (!ingress && pol.egress)) && (keep == nil || keep(pol)) && pol.sel.Evaluate(labels) {
				pols = append(pols, pol)
			}
		}
		if len(pols) == 0 {
			continue
		}
		if act := e.tier(t, pols, ingress, p, v); act != api.ActionPass {
			return act
		}
	}
	return ""
}

// tier returns Allow, Deny or Pass for one tier's applicable policies.
func (e *Evaluator) tier(t *evalTier, pols []*evalPolicy, ingress bool, p Packet, v *Verdict) string {
	for _, pol := range pols {
		rules := pol.out
		if ingress {
			rules = pol.in
		}
		if act, idx := e.rules(rules, pol.ns, p); act != "" {
			v.tracef("  tier %s: %s %s/%s rule %d: %s", t.name, pol.kind, pol.ns, pol.name, idx, act)
			v.decided(Decision{Tier: t.name, Kind: pol.kind, Namespace: pol.ns, Name: pol.name, Rule: idx, Action: act})
			return act
		}
	}
	if t.defaultAction == api.ActionPass {
		v.tracef("  tier %s: no verdict, default action Pass", t.name)
		return api.ActionPass
	}
	v.tracef("  tier %s: no verdict, end of tier drop", t.name)
	v.decided(Decision{Tier: t.name, Kind: "EndOfTier", Rule: -1, Action: api.ActionDeny})
	return api.ActionDeny
}

func (e *Evaluator) profileChain(ep *evalEndpoint, ingress bool, p Packet, v *Verdict) bool {
	for _, name := range ep.wep.Spec.Profiles {
		prof := e.profiles[name]
		rules := prof.Spec.Egress
		if ingress {
			rules = prof.Spec.Ingress
		}
		act, idx := e.rules(rules, "", p)
		if act != "" {
			v.decided(Decision{Kind: "Profile", Name: name, Rule: idx, Action: act})
		}
		switch act {
		case api.ActionAllow:
			v.tracef("  profile %s rule %d: Allow", name, idx)
			return true
		case api.ActionDeny:
			v.tracef("  profile %s rule %d: Deny", name, idx)
			return false
		case api.ActionPass:
			v.tracef("  profile %s rule %d: Pass (next profile)", name, idx)
		}
	}
	v.tracef("  no profile accepted: drop")
	v.decided(Decision{Kind: "Profile", Name: NoProfileMatched, Rule: -1, Action: api.ActionDeny})
	return false
}

// rules returns the action of the first matching non-Log rule, or "".
func (e *Evaluator) rules(rules []api.Rule, ns string, p Packet) (string, int) {
	for i := range rules {
		r := &rules[i]
		if r.Action == api.ActionLog || !e.ruleMatches(r, ns, p) {
			continue
		}
		return r.Action, i
	}
	return "", -1
}
