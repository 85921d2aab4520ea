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

// rulesetBuilder turns the model into the desired nftables ruleset. Endpoint, policy and
// profile chains are rendered by the pure functions of package rules and cached against the
// model value they came from, so that a batch which changes one endpoint re-renders two chains,
// not thousands; everything else (static chains, dispatch maps, host endpoints) is cheap and
// rebuilt on every call.
type rulesetBuilder struct {
	cfg  *rules.Config
	log  zerolog.Logger
	weps map[calc.WorkloadEndpointID]wepEntry
	refs map[rules.Ref]refEntry
}

type wepEntry struct {
	src *calc.WorkloadEndpoint
	ep  rules.Endpoint
}

// refEntry is a rendered policy or profile chain and the model value it was rendered from.
type refEntry struct {
	src any // *calc.Policy or *calc.Profile
	rc  rules.RuleChain
}

func newRulesetBuilder(cfg *rules.Config, log zerolog.Logger) *rulesetBuilder {
	return &rulesetBuilder{cfg: cfg, log: log, weps: map[calc.WorkloadEndpointID]wepEntry{}, refs: map[rules.Ref]refEntry{}}
}

// buildInput is what a build needs besides the model.
type buildInput struct {
	hosts []rules.HostIface
	vxlan []VXLANDevice
}

// build renders the whole desired ruleset.
func (b *rulesetBuilder) build(m *model, in buildInput) *nft.Ruleset {
	rs := nft.NewRuleset()
	refs := map[rules.Ref]bool{}
	b.addWorkloads(rs, m, refs)
	hostEP, hostMaps, hd := rules.HostEndpoints(b.cfg, in.hosts)
	addEndpoint(rs, hostEP, refs)
	for _, mp := range hostMaps {
		rs.AddMap(mp)
	}
	st := b.static(m, hd, in.vxlan)
	for _, c := range rules.StaticChains(b.cfg, st) {
		rs.AddChain(c)
	}
	setIDs := b.addRefChains(rs, m, refs)
	b.addSets(rs, m, setIDs, st)
	return rs
}

// addWorkloads adds the chains of every workload endpoint and the dispatch maps. When two
// endpoints claim one interface, the lower ID wins.
func (b *rulesetBuilder) addWorkloads(rs *nft.Ruleset, m *model, refs map[rules.Ref]bool) {
	owner := make(map[string]calc.WorkloadEndpointID, len(m.weps))
	for id, ep := range m.weps {
		if o, ok := owner[ep.Name]; !ok || compareWEPIDs(id, o) < 0 {
			owner[ep.Name] = id
		}
	}
	ifaces := make([]string, 0, len(owner))
	for iface, id := range owner {
		ifaces = append(ifaces, iface)
		addEndpoint(rs, b.workload(id, m.weps[id]), refs)
	}
	for id := range b.weps {
		if _, ok := m.weps[id]; !ok {
			delete(b.weps, id)
		}
	}
	from, to := rules.WorkloadDispatch(ifaces)
	rs.AddMap(from)
	rs.AddMap(to)
}

func compareWEPIDs(a, b calc.WorkloadEndpointID) int {
	return cmp.Or(cmp.Compare(a.OrchestratorID, b.OrchestratorID), cmp.Compare(a.WorkloadID, b.WorkloadID),
		cmp.Compare(a.EndpointID, b.EndpointID))
}

// workload returns the (cached) rendering of a workload endpoint.
func (b *rulesetBuilder) workload(id calc.WorkloadEndpointID, ep *calc.WorkloadEndpoint) rules.Endpoint {
	if e, ok := b.weps[id]; ok && e.src == ep {
		return e.ep
	}
	e := wepEntry{src: ep, ep: rules.WorkloadEndpoint(b.cfg, ep)}
	b.weps[id] = e
	return e.ep
}

func addEndpoint(rs *nft.Ruleset, ep rules.Endpoint, refs map[rules.Ref]bool) {
	for _, c := range ep.Chains {
		rs.AddChain(c)
	}
	for _, r := range ep.Refs {
		refs[r] = true
	}
}

// addRefChains adds the policy and profile chains the endpoint chains jump to, and returns the
// IP set IDs they use. A chain nobody refers to is not programmed.
func (b *rulesetBuilder) addRefChains(rs *nft.Ruleset, m *model, refs map[rules.Ref]bool) map[string]bool {
	sets := map[string]bool{}
	for ref := range refs {
		rc := b.refChain(ref, m)
		rs.AddChain(rc.Chain)
		for _, id := range rc.SetIDs {
			sets[id] = true
		}
	}
	for ref := range b.refs {
		if !refs[ref] {
			delete(b.refs, ref)
		}
	}
	return sets
}

// refChain returns the (cached) chain of a policy or profile direction. A reference to a
// policy or profile calc never sent renders as an empty chain: it matches nothing.
func (b *rulesetBuilder) refChain(ref rules.Ref, m *model) rules.RuleChain {
	var src any
	var rs []calc.Rule
	if ref.Profile != "" {
		if p := m.profiles[ref.Profile]; p != nil {
			src, rs = p, pick(ref.Egress, p.InboundRules, p.OutboundRules)
		}
	} else if p := m.policies[ref.Policy]; p != nil {
		src, rs = p, pick(ref.Egress, p.InboundRules, p.OutboundRules)
	}
	if e, ok := b.refs[ref]; ok && e.src == src {
		return e.rc
	}
	if src == nil {
		b.log.Warn().Str("chain", ref.Chain()).Msg("An endpoint refers to a policy or profile that calc did not send; it matches nothing")
	}
	rc := rules.PolicyRules(b.cfg, ref.Layer, ref.Chain(), rs)
	for _, p := range rc.Problems {
		b.log.Warn().Str("chain", p.Chain).Int("rule", p.Index).Str("ruleID", p.RuleID).Str("reason", p.Reason).
			Msg("Skipping a policy rule that cannot be expressed in nftables")
	}
	b.refs[ref] = refEntry{src: src, rc: rc}
	return rc
}

func pick(egress bool, in, out []calc.Rule) []calc.Rule {
	if egress {
		return out
	}
	return in
}

// addSets adds calc's IP sets (per configured family), the sets referenced by rules that calc
// never sent (empty, with a warning), and the internal sets of pools and VTEPs.
func (b *rulesetBuilder) addSets(rs *nft.Ruleset, m *model, used map[string]bool, st *rules.Static) {
	nfam := len(b.cfg.Families())
	for id, s := range m.ipsets {
		for i := range nfam {
			rs.AddSet(s.nftSet(i, id))
		}
	}
	for id := range used {
		if _, ok := m.ipsets[id]; !ok {
			b.log.Warn().Str("ipset", id).Msg("A rule refers to an IP set that calc did not send; using an empty set")
			empty := newIPSet(calc.IPSetNet, nil)
			for i := range nfam {
				rs.AddSet(empty.nftSet(i, id))
			}
		}
	}
	for _, s := range internalSets(m, st) {
		rs.AddSet(s)
	}
}

// static gathers the state the static chains depend on.
func (b *rulesetBuilder) static(m *model, hd rules.HostDispatch, devs []VXLANDevice) *rules.Static {
	st := &rules.Static{Hosts: hd}
	for _, f := range b.cfg.Families() {
		if slices.ContainsFunc(mapValues(m.pools), func(p *calc.IPPool) bool { return p.NATOutgoing && familyOf(p.CIDR.Addr()) == f }) {
			st.MasqFamilies = append(st.MasqFamilies, f)
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
func internalSets(m *model, st *rules.Static) []*nft.Set {
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

func mapValues[K comparable, V any](m map[K]V) []V {
	out := make([]V, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
