package confd

import (
	"net/netip"
	"slices"
	"strings"

	"github.com/calico-host/calico-host/pkg/api"
)

// parseCIDR parses a CIDR of family fi (-1: any), masked as BIRD requires (no IPv4-mapped IPv6).
func parseCIDR(s string, fi int) (netip.Prefix, bool) {
	p, err := netip.ParsePrefix(s)
	if err != nil || p.Addr().Is4In6() || (fi >= 0 && familyIndex(p.Addr()) != fi) {
		return netip.Prefix{}, false
	}
	return p.Masked(), true
}

// cidrFamily returns the family index of a CIDR string (by its syntax).
func cidrFamily(s string) int {
	if strings.Contains(s, ":") {
		return 1
	}
	return 0
}

// comparePrefixes orders prefixes by address, then prefix length.
func comparePrefixes(a, b netip.Prefix) int {
	if c := a.Addr().Compare(b.Addr()); c != 0 {
		return c
	}
	return a.Bits() - b.Bits()
}

// blocks are this host's affinity blocks of family fi, as Project Calico's confd takes them: a
// pending affinity is not this host's block yet (another host may still own it: a blackhole
// here would outrank the owner's route), so it is left out; every other block gets a blackhole
// route (single addresses excepted); confirmed ones (or ones with no state) are aggregated on
// export, a block pending deletion is not.
func (b *builder) blocks(fi int) []Block {
	var out []Block
	for _, cidr := range sortedKeys(b.in.Affinities) {
		aff := b.in.Affinities[cidr]
		if cidrFamily(cidr) != fi || aff.Deleted {
			continue
		}
		p, ok := parseCIDR(cidr, fi)
		if !ok || p.String() != cidr {
			b.warn("ignoring affinity for bad block CIDR %q", cidr)
			continue
		}
		state, ok := affinityStates[aff.State]
		if !ok {
			b.warn("block %s: ignoring affinity with unknown state %q", cidr, aff.State)
			continue
		}
		if state == api.AffinityPending {
			continue
		}
		out = append(out, Block{
			CIDR:      p,
			State:     state,
			Aggregate: state == api.AffinityConfirmed,
			Blackhole: p.Bits() < p.Addr().BitLen(),
		})
	}
	slices.SortStableFunc(out, func(x, y Block) int { return comparePrefixes(x.CIDR, y.CIDR) })
	return out
}

// affinityStates maps the states of affinities to the model's ("": confirmed, as Project Calico
// treats affinities written before states existed).
var affinityStates = map[string]AffinityState{
	"":                          api.AffinityConfirmed,
	api.AffinityConfirmed:       api.AffinityConfirmed,
	api.AffinityPending:         api.AffinityPending,
	api.AffinityPendingDeletion: api.AffinityPendingDeletion,
}

// staticRoutes are the service CIDRs of the global BGPConfiguration that every node advertises,
// deduplicated and sorted, as Project Calico's confd chooses them: cluster IP ranges; external
// and load balancer IP ranges except single addresses (which Project Calico advertises per
// Kubernetes service, from the nodes running it: not implemented here, so not advertised); load
// balancer ranges only while serviceLoadBalancerAggregation is Enabled (the default).
func (b *builder) staticRoutes(fi int) []netip.Prefix {
	seen := map[netip.Prefix]bool{}
	var out []netip.Prefix
	lists := []struct {
		blocks      []api.ServiceIPBlock
		singlesToo  bool
		advertising bool
	}{
		{b.global.ServiceExternalIPs, false, true},
		{b.global.ServiceClusterIPs, true, true},
		{b.global.ServiceLoadBalancerIPs, false, b.aggregateLoadBalancers()},
	}
	for _, l := range lists {
		for _, blk := range l.blocks {
			if blk.CIDR == "" || cidrFamily(blk.CIDR) != fi || !l.advertising {
				continue // an entry without a CIDR is ignored, as Project Calico's confd does
			}
			p, ok := parseCIDR(blk.CIDR, fi)
			if !ok {
				b.warn("BGPConfiguration default: ignoring bad service CIDR %q", blk.CIDR)
				continue
			}
			if !seen[p] && (l.singlesToo || !p.IsSingleIP()) {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	slices.SortFunc(out, comparePrefixes)
	return out
}

// reflectedServices are, on a route reflector, the global BGPConfiguration's load balancer and
// external IP ranges of family fi: Project Calico's reflectors pass on any route within them
// (the per-service routes of the nodes running a service).
func (b *builder) reflectedServices(fi int) []netip.Prefix {
	if b.local == nil || !b.local.clusterID.IsValid() {
		return nil
	}
	var out []netip.Prefix
	for _, blocks := range [][]api.ServiceIPBlock{b.global.ServiceLoadBalancerIPs, b.global.ServiceExternalIPs} {
		for _, blk := range blocks {
			if p, ok := parseCIDR(blk.CIDR, fi); ok && !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// aggregateLoadBalancers is the global serviceLoadBalancerAggregation: Enabled unless Disabled.
func (b *builder) aggregateLoadBalancers() bool {
	a := b.global.ServiceLoadBalancerAggregation
	return a == nil || *a != "Disabled"
}

// pools are the IP pools of family fi, sorted by CIDR.
func (b *builder) pools(fi int) []Pool {
	var out []Pool
	policy := b.clusterRoutePolicy()
	var subnet netip.Prefix
	if b.local != nil && fi == 0 {
		subnet = b.local.subnet[0]
	}
	for _, name := range sortedKeys(b.in.Pools) {
		spec := &b.in.Pools[name].Spec
		if cidrFamily(spec.CIDR) != fi {
			continue
		}
		p, ok := parseCIDR(spec.CIDR, fi)
		if !ok {
			b.warn("IPPool %s: ignoring bad CIDR %q", name, spec.CIDR)
			continue
		}
		out = append(out, poolModel(name, p, spec, policy, subnet))
	}
	slices.SortStableFunc(out, func(x, y Pool) int { return comparePrefixes(x.CIDR, y.CIDR) })
	return out
}

// clusterRoutes is which pools' routes BIRD programs into the kernel (BGPConfiguration default's
// programClusterRoutes); felix is expected to program the others, as FelixConfiguration's
// programClusterRoutes says (Project Calico asks the two to be kept consistent).
type clusterRoutes struct {
	ipip    bool // IPIP pools, through tunl0: Enabled, EnabledIPIPOnly
	noEncap bool // unencapsulated pools: Enabled, EnabledNoEncapOnly (the default)
	setting string
}

// clusterRoutePolicy reads programClusterRoutes; an unknown value is the default, as in
// Project Calico.
func (b *builder) clusterRoutePolicy() clusterRoutes {
	v := b.global.ProgramClusterRoutes
	if v == nil {
		return clusterRoutes{noEncap: true}
	}
	switch *v {
	case "Disabled":
		return clusterRoutes{setting: *v}
	case "EnabledIPIPOnly":
		return clusterRoutes{ipip: true, setting: *v}
	case "Enabled":
		return clusterRoutes{ipip: true, noEncap: true, setting: *v}
	case "EnabledNoEncapOnly":
		return clusterRoutes{noEncap: true, setting: *v}
	}
	b.warn("BGPConfiguration default: unknown programClusterRoutes %q; using the default, EnabledNoEncapOnly", *v)
	return clusterRoutes{noEncap: true}
}

// poolModel decides export and kernel programming for one pool, as Project Calico's confd does.
// subnet is this node's IPv4 network (IPIP CrossSubnet).
func poolModel(name string, cidr netip.Prefix, spec *api.IPPoolSpec, policy clusterRoutes, subnet netip.Prefix) Pool {
	p := Pool{Name: newComment(name), CIDR: cidr, Export: !spec.DisableBGPExport, ProgramKernel: true}
	var why []string
	if spec.DisableBGPExport {
		why = append(why, "BGP export is disabled")
	}
	switch {
	case isEncap(spec.VXLANMode):
		p.ProgramKernel = false
		why = append(why, "VXLAN routes are programmed by felix")
	case isEncap(spec.IPIPMode) && !policy.ipip:
		p.ProgramKernel = false
		why = append(why, "IPIP routes are programmed by felix")
	case isEncap(spec.IPIPMode) && cidr.Addr().Is4():
		p.Tunnel, p.LocalSubnet = TunnelAlways, subnet
		if spec.IPIPMode == api.EncapCrossSubnet {
			p.Tunnel = TunnelCrossSubnet
		}
		why = append(why, "IPIP routes are programmed through tunl0 (programClusterRoutes "+policy.setting+")")
	case !isEncap(spec.IPIPMode) && !policy.noEncap:
		p.ProgramKernel = false
		why = append(why, "cluster routes are left to felix (programClusterRoutes "+policy.setting+")")
	}
	p.Reason = newComment(strings.Join(why, "; "))
	return p
}

func isEncap(mode string) bool { return mode == api.EncapAlways || mode == api.EncapCrossSubnet }

// communities are the prefix advertisements of this node's BGPConfiguration if it has any, else
// of the global one. Community names resolve against that configuration's communities.
func (b *builder) communities(fi int) []CommunityRule {
	src, srcName := b.global, "default"
	if len(b.nodeConf.PrefixAdvertisements) > 0 {
		src, srcName = b.nodeConf, "node."+b.opts.NodeName
	}
	var out []CommunityRule
	for _, pa := range src.PrefixAdvertisements {
		if cidrFamily(pa.CIDR) != fi {
			continue
		}
		p, ok := parseCIDR(pa.CIDR, fi)
		if !ok {
			b.warn("BGPConfiguration %s: ignoring prefix advertisement with bad CIDR %q", srcName, pa.CIDR)
			continue
		}
		rule := CommunityRule{CIDR: p}
		for _, name := range pa.Communities {
			if com, ok := b.community(name, src); ok {
				rule.Communities = append(rule.Communities, com)
			} else {
				b.warn("BGPConfiguration %s: unknown community %q for %s", srcName, name, p)
			}
		}
		if len(rule.Communities) > 0 {
			out = append(out, rule)
		}
	}
	return out
}

// community resolves a community value ("aa:nn", "aa:nn:mm") or name.
func (b *builder) community(v string, src *api.BGPConfigurationSpec) (Community, bool) {
	if c, ok := parseCommunity(v); ok {
		return c, true
	}
	for _, d := range src.Communities {
		if d.Name == v {
			return parseCommunity(d.Value)
		}
	}
	return Community{}, false
}
