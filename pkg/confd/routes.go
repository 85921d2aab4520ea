package confd

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"github.com/calico-host/calico-host/pkg/api"
)

// canonicalCIDR parses a CIDR of family fi (-1: any) and returns it masked, as BIRD requires.
func canonicalCIDR(s string, fi int) (string, bool) {
	p, err := netip.ParsePrefix(s)
	if err != nil || (fi >= 0 && familyIndex(p.Addr()) != fi) {
		return "", false
	}
	return p.Masked().String(), true
}

// cidrFamily returns the family index of a CIDR string (by its syntax).
func cidrFamily(s string) int {
	if strings.Contains(s, ":") {
		return 1
	}
	return 0
}

// sortCIDRs sorts canonical CIDRs by address, then prefix length.
func sortCIDRs[T any](items []T, cidr func(T) string) {
	sort.SliceStable(items, func(i, j int) bool {
		a, b := netip.MustParsePrefix(cidr(items[i])), netip.MustParsePrefix(cidr(items[j]))
		if c := a.Addr().Compare(b.Addr()); c != 0 {
			return c < 0
		}
		return a.Bits() < b.Bits()
	})
}

// blocks are this host's affinity blocks of family fi. Every block gets a blackhole route (single
// addresses excepted); confirmed ones (or ones with no state) are aggregated on export.
func (b *builder) blocks(fi int) []Block {
	var out []Block
	for _, cidr := range sortedKeys(b.in.Affinities) {
		aff := b.in.Affinities[cidr]
		if cidrFamily(cidr) != fi || aff.Deleted {
			continue
		}
		c, ok := canonicalCIDR(cidr, fi)
		if !ok {
			b.warn("ignoring affinity for bad block CIDR %q", cidr)
			continue
		}
		p := netip.MustParsePrefix(c)
		out = append(out, Block{
			CIDR:      c,
			State:     aff.State,
			Aggregate: aff.State == "" || aff.State == api.AffinityConfirmed,
			Blackhole: p.Bits() < p.Addr().BitLen(),
		})
	}
	sortCIDRs(out, func(b Block) string { return b.CIDR })
	return out
}

// staticRoutes are the service CIDRs of the global BGPConfiguration (external, cluster and load
// balancer IPs), deduplicated and sorted.
func (b *builder) staticRoutes(fi int) []string {
	seen := map[string]bool{}
	for _, list := range [][]api.ServiceIPBlock{b.global.ServiceExternalIPs, b.global.ServiceClusterIPs, b.global.ServiceLoadBalancerIPs} {
		for _, blk := range list {
			if cidrFamily(blk.CIDR) != fi {
				continue
			}
			if c, ok := canonicalCIDR(blk.CIDR, fi); ok {
				seen[c] = true
			} else {
				b.warn("BGPConfiguration default: ignoring bad service CIDR %q", blk.CIDR)
			}
		}
	}
	out := sortedKeys(seen)
	sortCIDRs(out, func(s string) string { return s })
	return out
}

// pools are the IP pools of family fi, sorted by CIDR.
func (b *builder) pools(fi int) []Pool {
	var out []Pool
	for _, name := range sortedKeys(b.in.Pools) {
		spec := &b.in.Pools[name].Spec
		if cidrFamily(spec.CIDR) != fi {
			continue
		}
		c, ok := canonicalCIDR(spec.CIDR, fi)
		if !ok {
			b.warn("IPPool %s: ignoring bad CIDR %q", name, spec.CIDR)
			continue
		}
		out = append(out, poolModel(name, c, spec))
	}
	sortCIDRs(out, func(p Pool) string { return p.CIDR })
	return out
}

// poolModel decides export and kernel programming for one pool, as Project Calico's templates
// do; BIRD 2 cannot program IPIP tunnels (no krt_tunnel), so IPIP pools are left to felix too.
func poolModel(name, cidr string, spec *api.IPPoolSpec) Pool {
	p := Pool{Name: name, CIDR: cidr, Export: !spec.DisableBGPExport, ProgramKernel: true}
	var why []string
	if spec.DisableBGPExport {
		why = append(why, "BGP export is disabled")
	}
	switch {
	case isEncap(spec.VXLANMode):
		p.ProgramKernel = false
		why = append(why, "VXLAN routes are programmed by felix")
	case isEncap(spec.IPIPMode):
		p.ProgramKernel = false
		why = append(why, "IPIP routes are programmed by felix")
	}
	p.Reason = strings.Join(why, "; ")
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
		c, ok := canonicalCIDR(pa.CIDR, fi)
		if !ok {
			b.warn("BGPConfiguration %s: ignoring prefix advertisement with bad CIDR %q", srcName, pa.CIDR)
			continue
		}
		rule := CommunityRule{CIDR: c}
		for _, name := range pa.Communities {
			if com, ok := b.community(name, src); ok {
				rule.Communities = append(rule.Communities, com)
			} else {
				b.warn("BGPConfiguration %s: unknown community %q for %s", srcName, name, c)
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

// parseCommunity parses "aa:nn" (16-bit parts) or "aa:nn:mm" (32-bit parts).
func parseCommunity(v string) (Community, bool) {
	parts := strings.Split(v, ":")
	if len(parts) != 2 && len(parts) != 3 {
		return Community{}, false
	}
	limit := uint64(65535)
	if len(parts) == 3 {
		limit = 1<<32 - 1
	}
	for _, p := range parts {
		var n uint64
		if _, err := fmt.Sscanf(p, "%d", &n); err != nil || n > limit || fmt.Sprint(n) != p {
			return Community{}, false
		}
	}
	return Community{Large: len(parts) == 3, Tuple: "(" + strings.Join(parts, ", ") + ")"}, true
}
