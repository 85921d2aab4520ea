package dataplane

import (
	"cmp"
	"net/netip"
	"slices"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/rules"
	"github.com/calico-host/calico-host/pkg/nft"
)

// rulesetBuilder turns the model into the desired nftables tables: `ip <name>` and, with IPv6
// on, `ip6 <name>`, which one Applier writes in one transaction. It keeps them and updates them
// in place, so that a batch which changes one endpoint costs its chains and map elements, not a
// rebuild of thousands of objects (the tables record what changed; the Applier plans only that):
//   - workload chains are rendered (by package rules) when their endpoint value changes; they
//     are the same in both tables, and named by their content, so that endpoints with the same
//     policies share them (reference counts);
//   - policy group and profile chains are in the tables exactly while some endpoint chain jumps
//     to them (reference counts); a group is rendered again when one of its policies changes
//     (see groups.go);
//   - IP sets are updated from the model's per-version element deltas;
//   - the small, "volatile" rest (static chains, host endpoints, internal sets) is rebuilt on
//     every build, and what it no longer produces is removed.
type rulesetBuilder struct {
	cfg    *rules.Config
	log    zerolog.Logger
	tables []*nft.Table // one per version of cfg.Families(), in that order

	weps     map[calc.WorkloadEndpointID]*wepEntry
	byIface  map[string]map[calc.WorkloadEndpointID]bool // endpoints by interface
	wlChains map[string]int                              // installed endpoints per workload chain
	dispatch dispatchEdits                               // workload dispatch map changes of this build

	refs       map[string]*refEntry                 // group and profile chains, by name
	members    map[memberKey]*memberEntry           // policies as members of groups
	memberKeys map[calc.PolicyID]map[memberKey]bool // the members of each policy
	placeDirty map[memberKey]bool                   // members that joined or left a group since placeMembers
	groupedBy  map[calc.PolicyID]groupedBy          // what the endpoints were grouped by
	dirty      map[string]bool                      // group chains to render again

	calcSets map[string]bool      // set names made from calc IP sets (any table)
	rendered map[string]ipSetRev  // calc IP set ID -> the set its nft sets were made from
	volatile map[tableObject]bool // chains, maps and sets of the last volatile build, per table
	setNames map[string][2]string // calc IP set ID -> set name per table
	missing  map[string]bool      // empty stand-ins for sets calc did not send
	// setsToCheck: group and profile chains rendered in this build (their sets must exist);
	// recheckAllSets: a calc set or a chain went, look at every chain.
	setsToCheck    map[string]bool
	recheckAllSets bool

	policies map[calc.PolicyID]*calc.Policy // the model's, during a build (see repoint)
	sources  sourceIndex                    // user values of the static chains (nftables_sources.go)
}

type wepEntry struct {
	src       *calc.WorkloadEndpoint
	ep        rules.Workload
	installed bool
	stale     bool // to render again (its policies' grouping changed)
}

// ipSetRev identifies what a calc IP set's nft sets were made from.
type ipSetRev struct {
	set     *ipSet
	version uint64
}

func newRulesetBuilder(cfg *rules.Config, table string, log zerolog.Logger) *rulesetBuilder {
	b := &rulesetBuilder{
		cfg: cfg, log: log,
		weps: map[calc.WorkloadEndpointID]*wepEntry{}, wlChains: map[string]int{},
		byIface: map[string]map[calc.WorkloadEndpointID]bool{},
		refs:    map[string]*refEntry{}, members: map[memberKey]*memberEntry{}, dirty: map[string]bool{},
		placeDirty: map[memberKey]bool{}, memberKeys: map[calc.PolicyID]map[memberKey]bool{},
		groupedBy: map[calc.PolicyID]groupedBy{},
		calcSets:  map[string]bool{}, rendered: map[string]ipSetRev{},
		volatile: map[tableObject]bool{}, missing: map[string]bool{}, setNames: map[string][2]string{},
		setsToCheck: map[string]bool{}, sources: newSourceIndex(),
	}
	for _, v := range cfg.Families() {
		t := nft.NewTable(rules.TableFamily(v), table)
		from, to := rules.WorkloadDispatchMaps()
		must(t.PutMap(from))
		must(t.PutMap(to))
		b.tables = append(b.tables, t)
	}
	return b
}

// must panics on an error that only a bug in the renderers can cause: a name or declaration
// the table refuses.
func must(err error) {
	if err != nil {
		panic(err)
	}
}

// buildInput is what a build needs besides the model.
type buildInput struct {
	hosts []rules.HostIface
	vxlan []VXLANDevice
	ipip  bool
}

// build brings the desired tables up to date with the model and returns them.
func (b *rulesetBuilder) build(m *model, in buildInput) []*nft.Table {
	b.policies = m.policies
	b.regroupIfSelectorsChanged(m)
	b.syncWorkloads(m)
	b.refreshProfiles(m)
	if m.volatileChanged {
		b.buildVolatile(m, in)
		m.volatileChanged = false
	}
	b.finishRefs(m)
	b.syncCalcSets(m)
	b.addMissingSets()
	return b.tables
}

// putChain puts c into every table (the chain is the same in the tables of both versions).
func (b *rulesetBuilder) putChain(c *nft.Chain) {
	for _, t := range b.tables {
		must(t.PutChain(c))
	}
}

// deleteChain deletes chain name from every table.
func (b *rulesetBuilder) deleteChain(name string) {
	for _, t := range b.tables {
		t.DeleteChain(name)
	}
}

// buildVolatile rebuilds the static chains, the host endpoint chains and maps, and the
// internal sets, and removes what the previous build made that this one did not.
func (b *rulesetBuilder) buildVolatile(m *model, in buildInput) {
	for _, e := range b.refs {
		e.hostRefd = false
	}
	now := map[tableObject]bool{}
	for _, h := range in.hosts {
		if h.Iface == rules.AllInterfaces && len(h.EP.UntrackedTiers) > 0 {
			b.log.Warn().Str("hostEndpoint", h.EP.Name).
				Msg("DoNotTrack policy is not supported for a host endpoint with interfaceName *; ignoring it (as Project Calico)")
		}
	}
	hostEP, hostMaps, hd := rules.HostEndpoints(b.cfg, in.hosts, b.grouper(m))
	for _, c := range hostEP.Chains {
		b.putChain(c)
		for i := range b.tables {
			now[tableObject{i, c.Name}] = true
		}
	}
	for _, r := range hostEP.Refs {
		b.addRef(r, true)
	}
	b.sources.rendered = b.sources.rendered[:0]
	st := b.static(m, hd, in.vxlan)
	st.IPIP = in.ipip
	cfg := b.staticConfig(hd.Failsafes)
	for i, v := range b.cfg.Families() {
		t := b.tables[i]
		for _, mp := range hostMaps {
			must(t.PutMap(mp))
			now[tableObject{i, mp.Name}] = true
		}
		for _, c := range rules.StaticChains(cfg, st, v) {
			must(t.PutChain(c))
			now[tableObject{i, c.Name}] = true
		}
		for _, s := range b.internalSets(m, st, v) {
			must(t.PutSet(s))
			now[tableObject{i, s.Name}] = true
		}
	}
	b.removeStaleVolatile(now)
}

// tableObject is a chain, set or map by name in the table of index i: the tables of both
// versions have objects of the same name (static chains) that one build may make in one table
// and not in the other (NAT outgoing with natOutgoing pools of one version only).
type tableObject struct {
	i    int
	name string
}

// removeStaleVolatile removes the volatile objects of the previous build not made again in
// the same table.
func (b *rulesetBuilder) removeStaleVolatile(now map[tableObject]bool) {
	from, to := rules.DispatchMaps()
	for o := range b.volatile {
		if now[o] {
			continue
		}
		t, name := b.tables[o.i], o.name
		if t.Chain(name) != nil {
			t.DeleteChain(name)
		}
		if t.Set(name) != nil && !b.calcSets[name] {
			t.DeleteSet(name)
		}
		if t.Map(name) != nil && name != from && name != to {
			t.DeleteMap(name)
		}
	}
	b.volatile = now
}

// static gathers the state the static chains depend on.
func (b *rulesetBuilder) static(m *model, hd rules.HostDispatch, devs []VXLANDevice) *rules.Static {
	st := &rules.Static{Hosts: hd}
	for _, v := range b.cfg.Families() {
		for _, p := range m.pools {
			if p.NATOutgoing && versionOf(p.CIDR.Addr()) == v {
				st.MasqFamilies = append(st.MasqFamilies, v)
				break
			}
		}
	}
	for _, ep := range m.weps {
		for _, n := range slices.Concat(ep.IPv4NAT, ep.IPv6NAT) {
			st.FloatingIPs = append(st.FloatingIPs, rules.FloatingIP{Ext: n.ExtIP, Int: n.IntIP})
		}
	}
	st.SpoofAllowed = b.spoofAllowed(m)
	slices.SortFunc(st.SpoofAllowed, func(a, c rules.SpoofAllowed) int {
		return cmp.Or(cmp.Compare(a.Iface, c.Iface), cmp.Compare(a.Prefix.String(), c.Prefix.String()))
	})
	for _, d := range devs {
		st.VXLAN = append(st.VXLAN, rules.VXLANDevice{Name: d.Name, Version: versionOf(d.TunnelAddr)})
	}
	st.ServiceCIDRs = b.serviceCIDRs(m.services)
	return st
}

// serviceCIDRs parses the service CIDRs for service loop prevention, sorted as Project Calico
// sorts them (by their text) and without repeats. One that does not parse (calicoctl refuses
// it) is logged and left out.
func (b *rulesetBuilder) serviceCIDRs(in []string) []netip.Prefix {
	texts := slices.Clone(in)
	slices.Sort(texts)
	var out []netip.Prefix
	for _, s := range slices.Compact(texts) {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			b.log.Warn().Str("cidr", s).Msg("BGPConfiguration default: a service CIDR is not a valid CIDR; not blocking it")
			continue
		}
		if p = p.Masked(); !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// counts sums the objects of the tables: chains and sets plus maps.
func (b *rulesetBuilder) counts() (chains, sets int) {
	for _, t := range b.tables {
		c, _, s, _, mp, _ := t.Counts()
		chains, sets = chains+c, sets+s+mp
	}
	return chains, sets
}
