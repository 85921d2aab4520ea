package calc

import (
	"reflect"
	"strings"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/selector"
)

// policyInfo is a policy as the graph keeps it.
type policyInfo struct {
	key      string // "gnp/<name>" or "np/<ns>/<name>": also its selector ID in the index
	id       PolicyID
	view     api.PolicySpecView
	sel      *selector.Selector
	order    float64
	sortKey  string // "<name>/<namespace>/<kind>", the tie-break between equal orders
	ingress  bool
	egress   bool
	hostOnly bool   // doNotTrack or preDNAT: applies to host endpoints only
	invalid  string // why the policy failed validation: it drops what reaches it (failClosed)
}

// failClosed makes p stand for a policy that failed validation: in both directions, a single
// rule dropping everything that reaches it, in place of rules that cannot be trusted.
func (p *policyInfo) failClosed(err error) {
	p.invalid = "policy failed validation: " + err.Error()
	p.ingress, p.egress = true, true
	p.view.Ingress, p.view.Egress = nil, nil
}

// rules renders one direction of p.
func (p *policyInfo) rules(r *ruleRenderer, dir string, rules []api.Rule) []Rule {
	if p.invalid != "" {
		return []Rule{{Action: RuleDeny, Invalid: p.invalid}}
	}
	return r.renderRules(dir, rules)
}

// sameMeta reports whether two versions of a policy sort and apply identically.
func (p *policyInfo) sameMeta(o *policyInfo) bool {
	return p.id == o.id && p.order == o.order && p.ingress == o.ingress && p.egress == o.egress &&
		p.view.DoNotTrack == o.view.DoNotTrack && p.view.PreDNAT == o.view.PreDNAT &&
		p.view.ApplyOnForward == o.view.ApplyOnForward
}

// renderedRules is an active policy's or profile's output with the IP sets its rules use.
type renderedRules struct {
	sets    map[string]ipSetSpec
	pid     PolicyID
	policy  *Policy
	profile *Profile
}

// policyCalc keeps every policy and tier, matches policy selectors against this host's
// endpoints (index), renders the rules of the policies that match at least one (the active
// ones) and says which policies apply to each local endpoint.
type policyCalc struct {
	log        zerolog.Logger
	policies   map[string]*policyInfo
	tiers      map[string]tierInfo
	byTier     map[string]map[string]struct{}
	index      *labelIndex
	matches    map[string]map[string]struct{} // policy -> local endpoint item IDs
	epPolicies map[string]map[string]struct{} // local endpoint item ID -> policies
	ipsets     *ipSetCalc
	onEndpoint func(itemID string) // an endpoint's policies changed
	dirty      map[string]bool     // policy -> its rules changed (else only its activity may have)
	rendered   map[string]*renderedRules
}

func newPolicyCalc(log zerolog.Logger, ipsets *ipSetCalc, onEndpoint func(string)) *policyCalc {
	c := &policyCalc{
		log:        log,
		policies:   map[string]*policyInfo{},
		tiers:      map[string]tierInfo{},
		byTier:     map[string]map[string]struct{}{},
		matches:    map[string]map[string]struct{}{},
		epPolicies: map[string]map[string]struct{}{},
		ipsets:     ipsets,
		onEndpoint: onEndpoint,
		dirty:      map[string]bool{},
		rendered:   map[string]*renderedRules{},
	}
	c.index = newLabelIndex(c.onMatch)
	return c
}

// tier returns a tier's ordering data: its Tier object's, an implicit tier's, or missingTier.
func (c *policyCalc) tier(name string) tierInfo {
	if t, ok := c.tiers[name]; ok {
		return t
	}
	if t, ok := implicitTiers[name]; ok {
		return t
	}
	return missingTier
}

// newPolicyInfo builds a policyInfo from a GlobalNetworkPolicy or NetworkPolicy view.
func newPolicyInfo(kind, name string, v api.PolicySpecView) (*policyInfo, error) {
	sel, err := policySelector(&v)
	if err != nil {
		return nil, err
	}
	if v.Tier == "" {
		v.Tier = api.TierDefault
	}
	p := &policyInfo{
		key:      kind + "/" + name,
		id:       PolicyID{Tier: v.Tier, Kind: kind, Namespace: v.Namespace, Name: name},
		view:     v,
		sel:      sel,
		order:    policyOrder(v.Order),
		sortKey:  name + "/" + v.Namespace + "/" + kind,
		hostOnly: v.DoNotTrack || v.PreDNAT,
	}
	if v.Namespace != "" {
		p.key = kind + "/" + v.Namespace + "/" + name
	}
	if len(v.Types) == 0 {
		// Felix (policy_sorter.go): no types means both directions.
		p.ingress, p.egress = true, true
	}
	for _, t := range v.Types {
		p.ingress = p.ingress || strings.EqualFold(t, api.PolicyTypeIngress)
		p.egress = p.egress || strings.EqualFold(t, api.PolicyTypeEgress)
	}
	return p, nil
}

// update adds or replaces a policy.
func (c *policyCalc) update(p *policyInfo) {
	old := c.policies[p.key]
	if old != nil && (old.sel.String() != p.sel.String() || old.hostOnly != p.hostOnly || old.id.Tier != p.id.Tier) {
		// Stop the old matches while the old policy still decides which ones counted.
		c.index.DeleteSelector(p.key)
	}
	if old != nil {
		removeFromSet(c.byTier, old.id.Tier, p.key)
	}
	c.policies[p.key] = p
	addToSet(c.byTier, p.id.Tier, p.key)
	c.index.UpdateSelector(p.key, p.sel)
	if old != nil && !old.sameMeta(p) {
		c.markMatchedEndpoints(p.key)
	}
	c.dirty[p.key] = true
}

// remove deletes a policy.
func (c *policyCalc) remove(key string) {
	p := c.policies[key]
	if p == nil {
		return
	}
	c.index.DeleteSelector(key)
	removeFromSet(c.byTier, p.id.Tier, key)
	delete(c.policies, key)
	c.dirty[key] = true
}

// updateTier records a tier (nil when deleted): the endpoints its policies match re-sort.
func (c *policyCalc) updateTier(name string, t *tierInfo) {
	oldT := c.tier(name)
	if t != nil {
		c.tiers[name] = *t
	} else {
		delete(c.tiers, name)
	}
	if c.tier(name).equal(oldT) {
		return
	}
	for key := range c.byTier[name] {
		c.markMatchedEndpoints(key)
	}
}

// onMatch is the index's callback: a policy starts or stops matching a local endpoint.
func (c *policyCalc) onMatch(key, itemID string, matched bool) {
	if c.policies[key].hostOnly && !isHostItem(itemID) {
		return
	}
	if matched {
		addToSet(c.matches, key, itemID)
		addToSet(c.epPolicies, itemID, key)
	} else {
		removeFromSet(c.matches, key, itemID)
		removeFromSet(c.epPolicies, itemID, key)
	}
	if _, ok := c.dirty[key]; !ok {
		c.dirty[key] = false
	}
	c.onEndpoint(itemID)
}

func (c *policyCalc) markMatchedEndpoints(key string) {
	for itemID := range c.matches[key] {
		c.onEndpoint(itemID)
	}
}

// tiersFor resolves the policies that apply to a local endpoint.
func (c *policyCalc) tiersFor(itemID string, host bool) tierLists {
	keys := c.epPolicies[itemID]
	pols := make([]*policyInfo, 0, len(keys))
	for key := range keys {
		pols = append(pols, c.policies[key])
	}
	return c.buildTierLists(pols, host)
}

// flush renders the policies that became active or changed while active, and withdraws those
// that became inactive.
func (c *policyCalc) flush() (updates, removes []Update) {
	keys := sortedKeys(c.dirty)
	for _, key := range keys {
		rulesChanged := c.dirty[key]
		p, prev := c.policies[key], c.rendered[key]
		active := p != nil && len(c.matches[key]) > 0
		switch {
		case active && (prev == nil || rulesChanged):
			if u := c.render(p, prev); u != nil {
				updates = append(updates, *u)
			}
			if prev != nil && prev.pid != p.id {
				removes = append(removes, ActivePolicyRemove{ID: prev.pid})
			}
		case !active && prev != nil:
			c.ipsets.swapRefs(nil, prev.sets)
			delete(c.rendered, key)
			removes = append(removes, ActivePolicyRemove{ID: prev.pid})
		}
	}
	clear(c.dirty)
	return updates, removes
}

// render renders an active policy, moving its IP set references, and returns the update to send
// (nil when the output did not change).
func (c *policyCalc) render(p *policyInfo, prev *renderedRules) *ActivePolicyUpdate {
	r := &ruleRenderer{log: c.log.With().Str("policy", p.key).Logger(), ns: p.id.Namespace, sets: map[string]ipSetSpec{}}
	pol := &Policy{
		Namespace:      p.id.Namespace,
		Selector:       p.sel.String(),
		InboundRules:   p.rules(r, "ingress", p.view.Ingress),
		OutboundRules:  p.rules(r, "egress", p.view.Egress),
		Untracked:      p.view.DoNotTrack,
		PreDNAT:        p.view.PreDNAT,
		ApplyOnForward: p.view.ApplyOnForward,
	}
	var prevSets map[string]ipSetSpec
	if prev != nil {
		prevSets = prev.sets
	}
	c.ipsets.swapRefs(r.sets, prevSets)
	c.rendered[p.key] = &renderedRules{sets: r.sets, policy: pol, pid: p.id}
	if prev != nil && prev.pid == p.id && reflect.DeepEqual(prev.policy, pol) {
		return nil
	}
	return &ActivePolicyUpdate{ID: p.id, Policy: pol}
}

// isHostItem reports whether an item ID is a host endpoint's.
func isHostItem(itemID string) bool { return strings.HasPrefix(itemID, hostItemPrefix) }
