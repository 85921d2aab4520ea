package rules

import (
	"slices"

	"github.com/calico-host/calico-host/pkg/felix/dataplane/nft"
)

func natPrerouting(cfg *Config, st *Static) []nft.Rule {
	var rs []nft.Rule
	if len(st.FloatingIPs) > 0 {
		rs = append(rs, rule(nft.Jump(NAT.Name(chainFIPDNAT))))
	}
	return append(rs, openStackMetadataDNAT(cfg)...)
}

func natOutput(_ *Config, st *Static) []nft.Rule {
	if len(st.FloatingIPs) == 0 {
		return nil
	}
	return []nft.Rule{rule(nft.Jump(NAT.Name(chainFIPDNAT)))}
}

// natPostrouting: floating IP hairpin SNAT, NAT outgoing, and masquerading of host traffic
// that leaves through a tunnel with a source address of another interface.
func natPostrouting(_ *Config, st *Static) []nft.Rule {
	var rs []nft.Rule
	if len(st.FloatingIPs) > 0 {
		rs = append(rs, rule(nft.Jump(NAT.Name(chainFIPSNAT))))
	}
	if len(st.MasqFamilies) > 0 {
		rs = append(rs, rule(nft.Jump(NAT.Name(chainNATOutgoing))))
	}
	for _, d := range st.VXLAN {
		rs = append(rs, rule(nft.NFProto(d.Family), nft.OIFName(d.Name),
			nft.Not(nft.FibAddrType(nft.FibSAddr|nft.FibOIF, nft.AddrTypeLocal)),
			nft.FibAddrType(nft.FibSAddr, nft.AddrTypeLocal), nft.Counter(), nft.Masquerade()).
			WithComment("Masquerade host traffic into the tunnel"))
	}
	return rs
}

// natChains renders the chains natPrerouting, natOutput and natPostrouting jump to.
func natChains(cfg *Config, st *Static) []*nft.Chain {
	var out []*nft.Chain
	if len(st.FloatingIPs) > 0 {
		dnat, snat := floatingIPChains(cfg, st.FloatingIPs)
		out = append(out, dnat, snat)
	}
	if len(st.MasqFamilies) > 0 {
		out = append(out, natOutgoingChain(cfg, st.MasqFamilies))
	}
	return out
}

// floatingIPChains DNAT a floating IP to its workload and, when the workload talks to its own
// floating IP, SNAT the hairpinned packet to the floating IP so the reply comes back through
// the NAT.
func floatingIPChains(cfg *Config, fips []FloatingIP) (dnat, snat *nft.Chain) {
	fips = slices.Clone(fips)
	slices.SortFunc(fips, func(a, b FloatingIP) int {
		if c := a.Ext.Compare(b.Ext); c != 0 {
			return c
		}
		return a.Int.Compare(b.Int)
	})
	dnat = &nft.Chain{Name: NAT.Name(chainFIPDNAT)}
	snat = &nft.Chain{Name: NAT.Name(chainFIPSNAT)}
	for _, f := range fips {
		if familyOf(f.Ext) != familyOf(f.Int) || (familyOf(f.Ext) == nft.IPv6 && !cfg.IPv6) {
			continue
		}
		ext, in := host(f.Ext), host(f.Int)
		dnat.Rules = append(dnat.Rules, rule(nft.DAddr(ext), nft.Counter(), nft.DNAT(f.Int, 0)))
		snat.Rules = append(snat.Rules, rule(nft.SAddr(in), nft.DAddr(in), nft.Counter(), nft.SNAT(f.Ext)))
	}
	return dnat, snat
}

// natOutgoingChain masquerades traffic from natOutgoing pools to anywhere outside the pools
// (or SNATs it to NATOutgoingAddress).
func natOutgoingChain(cfg *Config, fams []nft.Family) *nft.Chain {
	c := &nft.Chain{Name: NAT.Name(chainNATOutgoing)}
	for _, f := range fams {
		x := []nft.Expr{
			nft.SAddrInSet(f, SetName(f, SetMasqPools)),
			nft.Not(nft.DAddrInSet(f, SetName(f, SetAllPools))),
			nft.Counter(),
		}
		if a := cfg.NATOutgoingAddress; a.IsValid() && familyOf(a) == f {
			x = append(x, nft.SNAT(a))
		} else {
			x = append(x, nft.MasqueradeFullyRandom())
		}
		c.Rules = append(c.Rules, rule(x...))
	}
	return c
}
