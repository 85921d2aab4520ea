package dataplane

import (
	"cmp"
	"net/netip"
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
// The nft Applier copies what it keeps, so changing the Ruleset between Applies is safe.
type rulesetBuilder struct {
	cfg *rules.Config
	log zerolog.Logger
	rs  *nft.Ruleset

	weps     map[calc.WorkloadEndpointID]*wepEntry
	from, to *nft.Map                // workload dispatch maps
	refs     map[rules.Ref]*refEntry // rendered policy and profile chains
	calcSets map[string]bool         // set names made from calc IP sets
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
		refs: map[rules.Ref]*refEntry{}, calcSets: map[string]bool{}, volatile: map[string]bool{}, missing: map[string]bool{},
	}
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

// refreshRefChains re-renders the referenced chains whose policy or profile changed.
func (b *rulesetBuilder) refreshRefChains(m *model) {
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
		delete(b.rs.Chains, e.rc.Chain.Name)
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
	for _, p := range e.rc.Problems {
		b.log.Warn().Str("chain", p.Chain).Int("rule", p.Index).Str("ruleID", p.RuleID).Str("reason", p.Reason).
			Msg("Skipping a policy rule that cannot be expressed in nftables")
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

// syncCalcSets puts calc's IP sets (per configured family) in the ruleset and removes those
// calc removed. The element lists are the model's own sorted slices.
func (b *rulesetBuilder) syncCalcSets(m *model) {
	nfam := len(b.cfg.Families())
	now := make(map[string]bool, len(b.calcSets))
	for id, s := range m.ipsets {
		for i := range nfam {
			set := s.nftSet(i, id)
			b.rs.AddSet(set)
			now[set.Name] = true
		}
	}
	for name := range b.calcSets {
		if !now[name] {
			delete(b.rs.Sets, name)
			b.refsDirt = true
		}
	}
	if len(now) != len(b.calcSets) {
		b.refsDirt = true
	}
	b.calcSets = now
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
		delete(b.rs.Chains, name)
		if !b.calcSets[name] {
			delete(b.rs.Sets, name)
		}
		if name != b.from.Name && name != b.to.Name {
			delete(b.rs.Maps, name)
		}
	}
	b.volatile = now
}

// addMissingSets adds an empty set for each set a rule looks up that calc never sent, so that
// the table stays consistent; it warns, since calc promised to send every set it refers to.
// It only looks again when the referenced chains or calc's sets changed.
func (b *rulesetBuilder) addMissingSets() {
	if !b.refsDirt {
		return
	}
	b.refsDirt = false
	for name := range b.missing {
		if !b.calcSets[name] {
			delete(b.rs.Sets, name)
		}
	}
	clear(b.missing)
	for _, e := range b.refs {
		for _, id := range e.rc.SetIDs {
			for i := range b.cfg.Families() {
				name := rules.SetName(families[i], id)
				if _, ok := b.rs.Sets[name]; ok {
					continue
				}
				b.log.Warn().Str("ipset", id).Msg("A rule refers to an IP set that calc did not send; using an empty set")
				b.rs.AddSet(newIPSet(calc.IPSetNet, nil).nftSet(i, id))
				b.missing[name] = true
			}
		}
	}
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

// internalSets are the pool sets NAT outgoing uses and the VTEP underlay sets the VXLAN rules
// use, for the families that need them.
func (b *rulesetBuilder) internalSets(m *model, st *rules.Static) []*nft.Set {
	var out []*nft.Set
	for _, f := range st.MasqFamilies {
		var all, masq []netip.Prefix
		for _, p := range m.pools {
			all = append(all, p.CIDR)
			if p.NATOutgoing {
				masq = append(masq, p.CIDR)
			}
		}
		out = append(out, rules.NetSet(f, rules.SetAllPools, all), rules.NetSet(f, rules.SetMasqPools, masq))
	}
	for _, d := range st.VXLAN {
		var hosts []netip.Prefix
		for _, v := range m.vteps {
			if a := v.ParentDeviceAddr; a.IsValid() {
				hosts = append(hosts, hostPrefix(a))
			}
		}
		out = append(out, rules.NetSet(d.Family, rules.SetAllVXLAN, hosts))
	}
	return out
}
