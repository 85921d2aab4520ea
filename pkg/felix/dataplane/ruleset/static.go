package ruleset

import (
	"cmp"
	"net/netip"
	"slices"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/rules"
	"github.com/calico-host/calico-host/pkg/nft"
)

// static is the small, "volatile" rest of the tables: the static chains, the host endpoint
// chains and maps, and the internal sets (pools, VTEP underlay addresses, hosts). It is rebuilt
// whole when what it depends on changed, and what a build no longer makes is removed.
type static struct {
	cfg    *rules.Config
	log    zerolog.Logger
	tables tables
	groups *groups   // host endpoint chains jump to group and profile chains
	sets   *calcSets // calc's sets are not static objects
	values *values   // the user values the static chains hold

	objects map[tableObject]bool // chains, maps and sets of the last build, per table
	stale   bool                 // to build again, though the model did not change
}

// tableObject is a chain, set or map by name in the table of index i: the tables of both
// versions have objects of the same name (static chains) that one build may make in one table
// and not in the other (NAT outgoing with natOutgoing pools of one version only).
type tableObject struct {
	i    int
	name string
}

func newStatic(cfg *rules.Config, t tables, log zerolog.Logger, g *groups, sets *calcSets, v *values) *static {
	return &static{cfg: cfg, log: log, tables: t, groups: g, sets: sets, values: v,
		objects: map[tableObject]bool{}, stale: true}
}

// markStale makes the next sync build the static part again.
func (s *static) markStale() { s.stale = true }

// sync builds the static part again when what it depends on changed.
func (s *static) sync(in *Input) {
	if !in.Changed.Volatile && !s.stale {
		return
	}
	s.build(in)
	s.stale = false
}

// build rebuilds the static chains, the host endpoint chains and maps, and the internal sets,
// and removes what the previous build made that this one did not.
func (s *static) build(in *Input) {
	s.groups.clearHostRefs()
	now := map[tableObject]bool{}
	for _, h := range in.HostEndpoints {
		if h.Iface == rules.AllInterfaces && len(h.EP.UntrackedTiers) > 0 {
			s.log.Warn().Str("hostEndpoint", h.EP.Name).
				Msg("DoNotTrack policy is not supported for a host endpoint with interfaceName *; ignoring it (as Project Calico)")
		}
	}
	hostEP, hostMaps, hd := rules.HostEndpoints(s.cfg, in.HostEndpoints, s.groups.grouper(in))
	for _, c := range hostEP.Chains {
		s.tables.putChain(c)
		for i := range s.tables {
			now[tableObject{i, c.Name}] = true
		}
	}
	for _, r := range hostEP.Refs {
		s.groups.addRef(r, true)
	}
	s.values.startBuild()
	st := s.state(in, hd)
	cfg := s.values.staticConfig(s.cfg, hd.Failsafes)
	for i, v := range s.cfg.Families() {
		t := s.tables[i]
		for _, mp := range hostMaps {
			must(t.PutMap(mp))
			now[tableObject{i, mp.Name}] = true
		}
		for _, c := range rules.StaticChains(cfg, st, v) {
			must(t.PutChain(c))
			now[tableObject{i, c.Name}] = true
		}
		for _, set := range s.internalSets(in, st, v) {
			must(t.PutSet(set))
			now[tableObject{i, set.Name}] = true
		}
	}
	s.removeStale(now)
}

// removeStale removes the objects of the previous build not made again in the same table.
func (s *static) removeStale(now map[tableObject]bool) {
	from, to := rules.DispatchMaps()
	for o := range s.objects {
		if now[o] {
			continue
		}
		t, name := s.tables[o.i], o.name
		if t.Chain(name) != nil {
			t.DeleteChain(name)
		}
		if t.Set(name) != nil && !s.sets.isCalcSet(name) {
			t.DeleteSet(name)
		}
		if t.Map(name) != nil && name != from && name != to {
			t.DeleteMap(name)
		}
	}
	s.objects = now
}

// state gathers the state the static chains depend on.
func (s *static) state(in *Input, hd rules.HostDispatch) *rules.Static {
	st := &rules.Static{Hosts: hd, VXLAN: in.VXLAN, IPIP: in.IPIP}
	for _, v := range s.cfg.Families() {
		for _, p := range in.Pools {
			if p.NATOutgoing && versionOf(p.CIDR.Addr()) == v {
				st.MasqFamilies = append(st.MasqFamilies, v)
				break
			}
		}
	}
	for _, ep := range in.Endpoints {
		for _, n := range slices.Concat(ep.IPv4NAT, ep.IPv6NAT) {
			st.FloatingIPs = append(st.FloatingIPs, rules.FloatingIP{Ext: n.ExtIP, Int: n.IntIP})
		}
	}
	st.SpoofAllowed = s.values.spoofAllowed(in.Endpoints)
	slices.SortFunc(st.SpoofAllowed, func(a, c rules.SpoofAllowed) int {
		return cmp.Or(cmp.Compare(a.Iface, c.Iface), cmp.Compare(a.Prefix.String(), c.Prefix.String()))
	})
	st.ServiceCIDRs = s.serviceCIDRs(in.ServiceCIDRs)
	return st
}

// serviceCIDRs parses the service CIDRs for service loop prevention, sorted as Project Calico
// sorts them (by their text) and without repeats. One that does not parse (calicoctl refuses
// it) is logged and left out.
func (s *static) serviceCIDRs(in []string) []netip.Prefix {
	texts := slices.Clone(in)
	slices.Sort(texts)
	var out []netip.Prefix
	for _, t := range slices.Compact(texts) {
		p, err := netip.ParsePrefix(t)
		if err != nil {
			s.log.Warn().Str("cidr", t).Msg("BGPConfiguration default: a service CIDR is not a valid CIDR; not blocking it")
			continue
		}
		if p = p.Masked(); !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// internalSets are the pool sets NAT outgoing uses and the VTEP underlay set the VXLAN rules
// use, in the table of version v when it needs them.
func (s *static) internalSets(in *Input, st *rules.Static, v nft.IPVersion) []*nft.Set {
	var out []*nft.Set
	for _, mv := range st.MasqFamilies {
		if mv != v {
			continue
		}
		var all, masq []netip.Prefix
		for _, p := range in.Pools {
			all = append(all, p.CIDR)
			if p.NATOutgoing {
				masq = append(masq, p.CIDR)
			}
		}
		out = append(out, rules.NetSet(v, rules.SetAllPools, all), rules.NetSet(v, rules.SetMasqPools, masq))
	}
	for _, d := range st.VXLAN {
		if d.Version != v {
			continue
		}
		var hosts []netip.Prefix
		for vt := range in.VTEPs {
			if a := vt.ParentDeviceAddr; a.IsValid() {
				hosts = append(hosts, hostPrefix(a))
			}
		}
		out = append(out, rules.NetSet(v, rules.SetAllVXLAN, hosts))
		break
	}
	// The hosts' addresses: IPIP (IPv4) filters by them, NAT outgoing with IPPoolsAndHostIPs
	// leaves traffic to them alone.
	if st.IPIP && v == nft.IPv4 || s.cfg.NATExcludeHosts && slices.Contains(st.MasqFamilies, v) {
		out = append(out, rules.NetSet(v, rules.SetAllHosts, allHosts(in.Hosts, v)))
	}
	return out
}

// allHosts are the addresses of version v of every host (Project Calico's all-hosts-net).
func allHosts(hosts map[string]*calc.HostMetadata, v nft.IPVersion) []netip.Prefix {
	var out []netip.Prefix
	for _, h := range hosts {
		a := h.IPv4Addr.Addr()
		if v == nft.IPv6 {
			a = h.IPv6Addr.Addr()
		}
		if a.IsValid() && versionOf(a) == v {
			out = append(out, hostPrefix(a))
		}
	}
	slices.SortFunc(out, func(a, b netip.Prefix) int { return a.Addr().Compare(b.Addr()) })
	return out
}

// versionOf is the IP version of an address (IPv4-mapped addresses are IPv4).
func versionOf(a netip.Addr) nft.IPVersion {
	if a.Is4() || a.Is4In6() {
		return nft.IPv4
	}
	return nft.IPv6
}

// hostPrefix is the single-address prefix of a.
func hostPrefix(a netip.Addr) netip.Prefix { return netip.PrefixFrom(a, a.BitLen()) }
