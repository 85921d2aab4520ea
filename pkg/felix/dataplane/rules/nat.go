package rules

import (
	"cmp"
	"slices"

	"github.com/calico-host/calico-host/pkg/nft"
)

func natPrerouting(cfg *Config, st *Static, v nft.IPVersion) []nft.Rule {
	var rs []nft.Rule
	if len(floatingIPs(st, v)) > 0 {
		rs = append(rs, rule(nft.Jump(NAT.Name(chainFIPDNAT))))
	}
	return append(rs, openStackMetadataDNAT(cfg, v)...)
}

func natOutput(_ *Config, st *Static, v nft.IPVersion) []nft.Rule {
	if len(floatingIPs(st, v)) == 0 {
		return nil
	}
	return []nft.Rule{rule(nft.Jump(NAT.Name(chainFIPDNAT)))}
}

// floatingIPs are the floating IPs of version v (both addresses of that version).
func floatingIPs(st *Static, v nft.IPVersion) []FloatingIP {
	var out []FloatingIP
	for _, f := range st.FloatingIPs {
		if versionOf(f.Ext) == v && versionOf(f.Int) == v {
			out = append(out, f)
		}
	}
	return out
}

// natPostrouting: floating IP hairpin SNAT, NAT outgoing, and masquerading of host traffic
// that leaves through a tunnel with a source address of another interface.
func natPostrouting(cfg *Config, st *Static, v nft.IPVersion) []nft.Rule {
	var rs []nft.Rule
	if len(floatingIPs(st, v)) > 0 {
		rs = append(rs, rule(nft.Jump(NAT.Name(chainFIPSNAT))))
	}
	if slices.Contains(st.MasqFamilies, v) {
		rs = append(rs, rule(nft.Jump(NAT.Name(chainNATOutgoing))))
	}
	for _, d := range vxlanDevices(st, v) {
		match := []nft.Expr{nft.OIFName(d.Name),
			nft.Not(nft.FibAddrType(nft.FibSAddr|nft.FibOIF, nft.AddrTypeLocal)), nft.FibAddrType(nft.FibSAddr, nft.AddrTypeLocal)}
		rs = append(rs,
			rule(slices.Concat(match, []nft.Expr{nft.L4Proto(nft.ProtoUDP), nft.Counter(),
				nft.MasqueradeToPorts(avoidPort(defaultNATPorts, cfg.VXLANPort), false)})...).
				WithComment("Masquerade host UDP into the tunnel, never onto the VXLAN port"),
			rule(slices.Concat(match, []nft.Expr{nft.Counter(), nft.Masquerade()})...).
				WithComment("Masquerade host traffic into the tunnel"))
	}
	return rs
}

// natChains renders the chains natPrerouting, natOutput and natPostrouting jump to in the
// table of version v.
func natChains(cfg *Config, st *Static, v nft.IPVersion) []*nft.Chain {
	var out []*nft.Chain
	if fips := floatingIPs(st, v); len(fips) > 0 {
		dnat, snat := floatingIPChains(fips)
		out = append(out, dnat, snat)
	}
	if slices.Contains(st.MasqFamilies, v) {
		out = append(out, natOutgoingChain(cfg, v, len(st.VXLAN) > 0))
	}
	return out
}

// floatingIPChains DNAT a floating IP to its workload and, when the workload talks to its own
// floating IP, SNAT the hairpinned packet to the floating IP so the reply comes back through
// the NAT.
func floatingIPChains(fips []FloatingIP) (dnat, snat *nft.Chain) {
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
		ext, in := host(f.Ext), host(f.Int)
		dnat.Rules = append(dnat.Rules, rule(nft.DAddr(ext), nft.Counter(), nft.DNAT(f.Int)))
		snat.Rules = append(snat.Rules, rule(nft.SAddr(in), nft.DAddr(in), nft.Counter(), nft.SNAT(f.Ext)))
	}
	return dnat, snat
}

// defaultNATPorts is the range the kernel picks a source port from when it must change one of
// 1024 or above and no range is given.
var defaultNATPorts = nft.Ports(1024, 65535)

// natOutgoingChain masquerades traffic from natOutgoing pools to anywhere outside the pools
// (or SNATs it to NATOutgoingAddress). TCP and UDP get their source ports from NATPortRange
// when it is set; with VXLAN on, UDP never gets the VXLAN port (a reply to it would look like
// VXLAN). No `return` follows a NAT rule, as it does in Calico's iptables rules: an nft NAT
// statement ends the chain.
func natOutgoingChain(cfg *Config, v nft.IPVersion, vxlan bool) *nft.Chain {
	c := &nft.Chain{Name: NAT.Name(chainNATOutgoing)}
	tcp, udp := cfg.NATPortRange, cfg.NATPortRange
	if vxlan {
		udp = avoidPort(cmp.Or(udp, defaultNATPorts), cfg.VXLANPort)
	}
	match := []nft.Expr{nft.SAddrInSet(v, SetName(v, SetMasqPools)), nft.Not(nft.DAddrInSet(v, SetName(v, SetAllPools)))}
	if cfg.NATExcludeHosts {
		match = append(match, nft.Not(nft.DAddrInSet(v, SetName(v, SetAllHosts))))
	}
	for _, pp := range []struct {
		proto uint8
		ports nft.PortRange
	}{{nft.ProtoTCP, tcp}, {nft.ProtoUDP, udp}} {
		if pp.ports != (nft.PortRange{}) {
			rs := slices.Concat(match, []nft.Expr{nft.L4Proto(pp.proto), nft.Counter(), natOutgoingStmt(cfg, v, pp.ports)})
			c.Rules = append(c.Rules, rule(rs...))
		}
	}
	c.Rules = append(c.Rules, rule(slices.Concat(match, []nft.Expr{nft.Counter(), natOutgoingStmt(cfg, v, nft.PortRange{})})...))
	return c
}

// natOutgoingStmt is the NAT statement of NAT outgoing for version v: SNAT to
// NATOutgoingAddress when it is of that family, else fully-random masquerade; to a port range
// when ports is not zero.
func natOutgoingStmt(cfg *Config, v nft.IPVersion, ports nft.PortRange) nft.Expr {
	a := cfg.NATOutgoingAddress
	switch {
	case a.IsValid() && versionOf(a) == v && ports.First != 0:
		return nft.SNATToPorts(a, ports)
	case a.IsValid() && versionOf(a) == v:
		return nft.SNAT(a)
	case ports.First != 0:
		return nft.MasqueradeToPorts(ports, true)
	}
	return nft.MasqueradeFullyRandom()
}

// avoidPort is the larger part of r on either side of port p, or r when p is outside it (or
// r is p alone). A single masquerade range cannot have a hole.
func avoidPort(r nft.PortRange, p uint16) nft.PortRange {
	if p < r.First || p > r.Last || r.First == r.Last {
		return r
	}
	below, above := int(p)-int(r.First), int(r.Last)-int(p)
	if above >= below {
		return nft.Ports(p+1, r.Last)
	}
	return nft.Ports(r.First, p-1)
}

// serviceLoopChain is Project Calico's service loop prevention (ServiceLoopPrevention): the
// last thing filter FORWARD does is drop (or reject) traffic to the service CIDRs of version v
// that BGP advertises, which no local rule handled and which the default route would send back
// to a router that routes it here again. nil when there is nothing to block (Calico's chain is
// then empty) or the prevention is Disabled.
func serviceLoopChain(cfg *Config, st *Static, v nft.IPVersion) *nft.Chain {
	if cfg.ServiceLoop == LoopDisabled {
		return nil
	}
	verdict := nft.Expr(nft.Drop())
	if cfg.ServiceLoop == LoopReject {
		verdict = nft.Reject()
	}
	c := &nft.Chain{Name: Filter.Name(chainCIDRBlock)}
	for _, p := range st.ServiceCIDRs {
		if fam, q := prefixFamily(p); fam == v {
			c.Rules = append(c.Rules, rule(nft.DAddr(q), verdict))
		}
	}
	if len(c.Rules) == 0 {
		return nil
	}
	return c
}
