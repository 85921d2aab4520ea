package dataplane

import (
	"cmp"
	"slices"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/nft"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/rules"
)

// rulesetBuilder turns the model into the desired nftables ruleset. It keeps one desired
// Ruleset and updates it in place, so that a batch which changes one endpoint costs two chains
// and two map elements, not a rebuild of thousands of objects:
//   - workload chains are rendered (by package rules) when their endpoint value changes;
//   - a policy or profile chain is rendered when its value changes and is in the ruleset
//     exactly while some endpoint chain jumps to it (reference counts);
//   - IP sets are updated from the model's per-family element lists;
//   - the small, "volatile" rest (static chains, host endpoints, internal sets) is rebuilt on
//     every build, and what it no longer produces is removed.
//
// The Ruleset is tracked (nft.Ruleset.Track): every object added, replaced, edited or deleted
// is reported to it, so that the Applier plans only those objects on a partial sync. The nft
// Applier copies what it keeps, so changing the Ruleset between Applies is safe.
type rulesetBuilder struct {
	cfg *rules.Config
	log zerolog.Logger
	rs  *nft.Ruleset

	weps     map[calc.WorkloadEndpointID]*wepEntry
	from, to *nft.Map                // workload dispatch maps
	refs     map[rules.Ref]*refEntry // rendered policy and profile chains
	calcSets map[string]bool         // set names made from calc IP sets
	rendered map[string]ipSetRev     // calc IP set ID -> the version its sets were made from
	volatile map[string]bool         // chains, maps and sets of the last volatile build
	missing  map[string]bool         // empty stand-ins for sets calc did not send
	refsDirt bool                    // referenced chains or calc sets changed
}

type wepEntry struct {
	src       *calc.WorkloadEndpoint
	ep        rules.Endpoint
	installed bool
}

// refEntry is a rendered policy or profile chain, the model value it was rendered from, and
// how many chains refer to it (workload chains count; host endpoint chains are volatile).
type refEntry struct {
	src      any // *calc.Policy or *calc.Profile (nil: calc never sent it)
	rc       rules.RuleChain
	wlRefs   int
	hostRefd bool
}

func newRulesetBuilder(cfg *rules.Config, log zerolog.Logger) *rulesetBuilder {
	b := &rulesetBuilder{
		cfg: cfg, log: log, rs: nft.NewRuleset(),
		weps: map[calc.WorkloadEndpointID]*wepEntry{},
		refs: map[rules.Ref]*refEntry{}, calcSets: map[string]bool{}, rendered: map[string]ipSetRev{},
		volatile: map[string]bool{}, missing: map[string]bool{},
	}
	b.rs.Track()
	b.from, b.to = rules.WorkloadDispatch(nil)
	b.rs.AddMap(b.from)
	b.rs.AddMap(b.to)
	return b
}

// buildInput is what a build needs besides the model.
type buildInput struct {
	hosts []rules.HostIface
	vxlan []VXLANDevice
}

// build brings the desired ruleset up to date with the model and returns it.
func (b *rulesetBuilder) build(m *model, in buildInput) *nft.Ruleset {
	b.syncWorkloads(m)
	b.refreshRefChains(m)
	b.syncCalcSets(m)
	b.buildVolatile(m, in)
	return b.rs
}

// refreshRefChains re-renders the referenced chains whose policy or profile changed; it looks
// only when the model says some did.
func (b *rulesetBuilder) refreshRefChains(m *model) {
	if !m.rulesChanged {
		return
	}
	m.rulesChanged = false
	for ref, e := range b.refs {
		if src, _ := refSource(ref, m); src != e.src {
			b.renderRef(ref, e, m)
		}
	}
}

// addRef counts a reference from a workload chain (host == false) or marks one from a host
// endpoint chain, adding the chain when it becomes referenced.
func (b *rulesetBuilder) addRef(ref rules.Ref, m *model, host bool) {
	e := b.refs[ref]
	if e == nil {
		e = &refEntry{}
		b.refs[ref] = e
		b.renderRef(ref, e, m)
	}
	if host {
		e.hostRefd = true
	} else {
		e.wlRefs++
	}
}

// dropRef removes a workload chain's reference; the chain goes when nothing refers to it.
func (b *rulesetBuilder) dropRef(ref rules.Ref) {
	if e := b.refs[ref]; e != nil {
		e.wlRefs--
		b.gcRef(ref, e)
	}
}

func (b *rulesetBuilder) gcRef(ref rules.Ref, e *refEntry) {
	if e.wlRefs <= 0 && !e.hostRefd {
		delete(b.refs, ref)
		b.rs.DeleteChain(e.rc.Chain.Name)
		b.refsDirt = true
	}
}

// renderRef renders a policy or profile direction into e and the ruleset. A reference to a
// policy or profile calc never sent renders as an empty chain: it matches nothing.
func (b *rulesetBuilder) renderRef(ref rules.Ref, e *refEntry, m *model) {
	src, rs := refSource(ref, m)
	if src == nil {
		b.log.Warn().Str("chain", ref.Chain()).Msg("An endpoint refers to a policy or profile that calc did not send; it matches nothing")
	}
	e.src, e.rc = src, rules.PolicyRules(b.cfg, ref.Layer, ref.Chain(), rs)
	b.refsDirt = true
	kind, name := ref.Owner()
	for _, p := range e.rc.Problems {
		b.log.Warn().Str(kind, name).Str("chain", p.Chain).Int("rule", p.Index).Str("ruleID", p.RuleID).Str("reason", p.Reason).
			Msg("A rule cannot be enforced: the chain drops every packet that reaches it (fail closed)")
	}
	b.rs.AddChain(e.rc.Chain)
}

// refSource finds the model value and rules of a reference (nil when absent).
func refSource(ref rules.Ref, m *model) (any, []calc.Rule) {
	if ref.Profile != "" {
		if p := m.profiles[ref.Profile]; p != nil {
			return p, pick(ref.Egress, p.InboundRules, p.OutboundRules)
		}
		return nil, nil
	}
	if p := m.policies[ref.Policy]; p != nil {
		return p, pick(ref.Egress, p.InboundRules, p.OutboundRules)
	}
	return nil, nil
}

func pick(egress bool, in, out []calc.Rule) []calc.Rule {
	if egress {
		return out
	}
	return in
}

// buildVolatile rebuilds the static chains, the host endpoint chains and maps, and the
// internal sets, and removes what the previous build made that this one did not.
func (b *rulesetBuilder) buildVolatile(m *model, in buildInput) {
	for _, e := range b.refs {
		e.hostRefd = false
	}
	now := map[string]bool{}
	hostEP, hostMaps, hd := rules.HostEndpoints(b.cfg, in.hosts)
	for _, c := range hostEP.Chains {
		b.rs.AddChain(c)
		now[c.Name] = true
	}
	for _, r := range hostEP.Refs {
		b.addRef(r, m, true)
	}
	for _, mp := range hostMaps {
		b.rs.AddMap(mp)
		now[mp.Name] = true
	}
	st := b.static(m, hd, in.vxlan)
	for _, c := range rules.StaticChains(b.cfg, st) {
		b.rs.AddChain(c)
		now[c.Name] = true
	}
	for _, s := range b.internalSets(m, st) {
		b.rs.AddSet(s)
		now[s.Name] = true
	}
	b.removeStaleVolatile(now)
	for ref, e := range b.refs {
		b.gcRef(ref, e)
	}
	b.addMissingSets()
}

// removeStaleVolatile removes the volatile objects of the previous build not made again.
func (b *rulesetBuilder) removeStaleVolatile(now map[string]bool) {
	for name := range b.volatile {
		if now[name] {
			continue
		}
		if _, ok := b.rs.Chains[name]; ok {
			b.rs.DeleteChain(name)
		}
		if _, ok := b.rs.Sets[name]; ok && !b.calcSets[name] {
			b.rs.DeleteSet(name)
		}
		if _, ok := b.rs.Maps[name]; ok && name != b.from.Name && name != b.to.Name {
			b.rs.DeleteMap(name)
		}
	}
	b.volatile = now
}

// static gathers the state the static chains depend on.
func (b *rulesetBuilder) static(m *model, hd rules.HostDispatch, devs []VXLANDevice) *rules.Static {
	st := &rules.Static{Hosts: hd}
	for _, f := range b.cfg.Families() {
		for _, p := range m.pools {
			if p.NATOutgoing && familyOf(p.CIDR.Addr()) == f {
				st.MasqFamilies = append(st.MasqFamilies, f)
				break
			}
		}
	}
	for _, ep := range m.weps {
		for _, n := range slices.Concat(ep.IPv4NAT, ep.IPv6NAT) {
			st.FloatingIPs = append(st.FloatingIPs, rules.FloatingIP{Ext: n.ExtIP, Int: n.IntIP})
		}
		for _, p := range ep.AllowSpoofedSourcePrefixes {
			st.SpoofAllowed = append(st.SpoofAllowed, rules.SpoofAllowed{Iface: ep.Name, Prefix: p})
		}
	}
	slices.SortFunc(st.SpoofAllowed, func(a, c rules.SpoofAllowed) int {
		return cmp.Or(cmp.Compare(a.Iface, c.Iface), cmp.Compare(a.Prefix.String(), c.Prefix.String()))
	})
	for _, d := range devs {
		st.VXLAN = append(st.VXLAN, rules.VXLANDevice{Name: d.Name, Family: familyOf(d.TunnelAddr)})
	}
	return st
}
