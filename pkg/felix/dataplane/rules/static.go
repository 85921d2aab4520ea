package rules

import (
	"net/netip"

	"github.com/calico-host/calico-host/pkg/felix/dataplane/nft"
)

// Static is the state the static chains depend on besides the Config.
type Static struct {
	Hosts        HostDispatch
	MasqFamilies []nft.Family // families with natOutgoing pools
	FloatingIPs  []FloatingIP
	SpoofAllowed []SpoofAllowed
	VXLAN        []VXLANDevice // VXLAN devices in use
}

// FloatingIP is a 1:1 NAT of an external address to a workload's address.
type FloatingIP struct {
	Ext, Int netip.Addr
}

// SpoofAllowed lets a workload interface send from a prefix that is not its own.
type SpoofAllowed struct {
	Iface  string
	Prefix netip.Prefix
}

// VXLANDevice is a VXLAN tunnel device of one family.
type VXLANDevice struct {
	Name   string
	Family nft.Family
}

// baseChain is one hook of the table and the static chain it jumps to.
type baseChain struct {
	layer    Layer
	name     string
	hook     nft.Hook
	typ      nft.ChainType
	priority int
	target   string
}

// baseChains are the hooks, with Calico's priorities (felix/nftables/table.go). nat OUTPUT
// runs at dstnat so that host traffic is DNATed (floating IPs) before filter OUTPUT looks at
// `ct status dnat`.
var baseChains = []baseChain{
	{Raw, "PREROUTING", nft.HookPrerouting, nft.TypeFilter, nft.PriorityRaw, chainPrerouting},
	{Raw, "OUTPUT", nft.HookOutput, nft.TypeFilter, nft.PriorityRaw, chainOutput},
	{Mangle, "PREROUTING", nft.HookPrerouting, nft.TypeFilter, nft.PriorityMangle, chainPrerouting},
	{Mangle, "POSTROUTING", nft.HookPostrouting, nft.TypeFilter, nft.PriorityMangle, chainPostrouting},
	{NAT, "PREROUTING", nft.HookPrerouting, nft.TypeNAT, nft.PriorityDstNAT, chainPrerouting},
	{NAT, "OUTPUT", nft.HookOutput, nft.TypeNAT, nft.PriorityDstNAT, chainOutput},
	{NAT, "POSTROUTING", nft.HookPostrouting, nft.TypeNAT, nft.PrioritySrcNAT + 10, chainPostrouting},
	{Filter, "INPUT", nft.HookInput, nft.TypeFilter, nft.PriorityFilter, chainInput},
	{Filter, "FORWARD", nft.HookForward, nft.TypeFilter, nft.PriorityFilter, chainForward},
	{Filter, "OUTPUT", nft.HookOutput, nft.TypeFilter, nft.PriorityFilter, chainOutput},
}

// staticChain is a static chain and its builder.
type staticChain struct {
	layer Layer
	name  string
	build func(*Config, *Static) []nft.Rule
}

// staticChains are always present: the base chains jump to them.
var staticChains = []staticChain{
	{Raw, chainPrerouting, rawPrerouting},
	{Raw, chainOutput, rawOutput},
	{Mangle, chainPrerouting, manglePrerouting},
	{Mangle, chainPostrouting, manglePostrouting},
	{NAT, chainPrerouting, natPrerouting},
	{NAT, chainOutput, natOutput},
	{NAT, chainPostrouting, natPostrouting},
	{Filter, chainInput, filterInput},
	{Filter, chainForward, filterForward},
	{Filter, chainOutput, filterOutput},
	{Filter, chainWorkloadToHost, workloadToHost},
}

// StaticChains renders the base chains, the static chains they jump to, and the optional
// chains those refer to (dispatch, anti-spoofing exceptions, NAT).
func StaticChains(cfg *Config, st *Static) []*nft.Chain {
	var out []*nft.Chain
	for _, b := range baseChains {
		out = append(out, baseChainOf(cfg, b))
	}
	for _, s := range staticChains {
		out = append(out, &nft.Chain{Name: s.layer.Name(s.name), Rules: s.build(cfg, st)})
	}
	out = append(out, workloadDispatchChains()...)
	out = append(out, natChains(cfg, st)...)
	if len(st.SpoofAllowed) > 0 || cfg.OpenStack {
		out = append(out, rpfSkipChain(cfg, st))
	}
	return out
}

// baseChainOf renders a base chain. With IPv6Support false, IPv6 packets leave every base chain
// at once: Project Calico then programs no ip6 table at all, so IPv6 is neither policed nor
// NATed nor marked (accept in a base chain only ends this table's verdict; other tables still
// see the packet).
func baseChainOf(cfg *Config, b baseChain) *nft.Chain {
	c := &nft.Chain{
		Name: b.layer.Name(b.name),
		Base: &nft.BaseChain{Type: b.typ, Hook: b.hook, Priority: b.priority},
	}
	if !cfg.IPv6 {
		c.Rules = append(c.Rules, rule(nft.NFProto(nft.IPv6), nft.Accept()).WithComment("IPv6Support is false: IPv6 is not policed"))
	}
	c.Rules = append(c.Rules, rule(nft.Jump(b.layer.Name(b.target))))
	if b.layer == Filter && b.hook == nft.HookForward {
		// Accept what policy accepted; mark the rest as forwarded for mangle POSTROUTING.
		a := cfg.Marks.Accept
		c.Rules = append(c.Rules, rule(isSet(a), nft.Accept()), rule(setBits(a)))
	}
	return c
}

// prefixRules makes one rule per workload interface prefix: iifname "cali*" <then> (oifname
// when out).
func prefixRules(cfg *Config, out bool, then ...nft.Expr) []nft.Rule {
	rs := make([]nft.Rule, len(cfg.WorkloadPrefixes))
	for i, p := range cfg.WorkloadPrefixes {
		m := nft.IIFName(p + "*")
		if out {
			m = nft.OIFName(p + "*")
		}
		rs[i] = rule(append([]nft.Expr{m}, then...)...)
	}
	return rs
}

func filterInput(cfg *Config, st *Static) []nft.Rule {
	a := cfg.Marks.Accept
	rs := []nft.Rule{rule(isSet(a), nft.Accept()).WithComment("Accepted by raw or mangle policy")}
	rs = append(rs, vxlanInput(cfg, st)...)
	rs = append(rs, prefixRules(cfg, false, nft.Goto(Filter.Name(chainWorkloadToHost)))...)
	rs = append(rs, rule(clearBits(cfg.Marks.all())))
	if st.Hosts.Normal {
		rs = append(rs, rule(nft.Jump(Filter.Name(chainFromHost))), rule(isSet(a), nft.Accept()))
	}
	return rs
}

func filterForward(cfg *Config, st *Static) []nft.Rule {
	a := cfg.Marks.Accept
	rs := []nft.Rule{rule(clearBits(cfg.Marks.all() &^ a))}
	if st.Hosts.Forward {
		rs = append(rs, rule(isClear(a), nft.Jump(Filter.Name(chainFromHostFwd))))
	}
	rs = append(rs, prefixRules(cfg, false, nft.Jump(Filter.Name(chainFromWorkload)))...)
	rs = append(rs, prefixRules(cfg, true, nft.Jump(Filter.Name(chainToWorkload)))...)
	if st.Hosts.Forward {
		rs = append(rs, rule(nft.Jump(Filter.Name(chainToHostFwd))))
	}
	return rs
}

func filterOutput(cfg *Config, st *Static) []nft.Rule {
	a := cfg.Marks.Accept
	rs := []nft.Rule{rule(isSet(a), nft.Accept())}
	rs = append(rs, prefixRules(cfg, true, nft.Return())...)
	rs = append(rs, vxlanOutput(cfg, st)...)
	rs = append(rs, rule(clearBits(cfg.Marks.all())))
	if st.Hosts.Normal {
		rs = append(rs, rule(nft.Not(nft.CTStatusDNAT()), nft.Jump(Filter.Name(chainToHost))), rule(isSet(a), nft.Accept()))
	}
	return rs
}

// workloadToHost handles traffic from workloads to the host itself: a few always-allowed
// protocols, then the workload's egress policy, then DefaultEndpointToHostAction.
func workloadToHost(cfg *Config, _ *Static) []nft.Rule {
	var rs []nft.Rule
	if cfg.IPv6 {
		for _, t := range []uint8{130, 131, 132, 133, 135, 136} {
			rs = append(rs, rule(nft.ICMPType(nft.IPv6, t), nft.Accept()))
		}
	}
	rs = append(rs, openStackToHost(cfg)...)
	rs = append(rs, rule(nft.Jump(Filter.Name(chainFromWorkload))))
	var v []nft.Expr
	switch cfg.EndpointToHost {
	case ActionAccept:
		v = []nft.Expr{nft.Accept()}
	case ActionReturn:
		v = []nft.Expr{nft.Return()}
	default:
		v = []nft.Expr{nft.Counter(), nft.Drop()}
	}
	return append(rs, rule(v...).WithComment("Configured DefaultEndpointToHostAction"))
}

// rawPrerouting marks workload traffic, drops workload packets whose source address is not
// routed back through the interface they came from (strict RPF: anti-spoofing), and applies
// untracked policy to other traffic.
func rawPrerouting(cfg *Config, st *Static) []nft.Rule {
	m := cfg.Marks
	rs := []nft.Rule{rule(clearBits(m.all()))}
	rs = append(rs, prefixRules(cfg, false, setBits(m.Scratch0))...)
	if len(st.SpoofAllowed) > 0 || cfg.OpenStack {
		rs = append(rs, rule(isSet(m.Scratch0), nft.Jump(Raw.Name(chainRPFSkip))))
	}
	if cfg.IPv6 {
		rs = append(rs, rule(isSet(m.Scratch0), nft.SAddr(netip.MustParsePrefix("::/128")),
			nft.ICMPType(nft.IPv6, 135), nft.Accept()).WithComment("Duplicate address detection"))
	}
	rs = append(rs, rule(isSet(m.Scratch0), nft.FibNoRoute(nft.FibSAddr|nft.FibMark|nft.FibIIF), nft.Counter(), nft.Drop()).
		WithComment("Drop workload packets with a spoofed source address"))
	if st.Hosts.Untracked {
		rs = append(rs, rule(isClear(m.Scratch0), nft.Jump(Raw.Name(chainFromHost))))
	}
	return append(rs, rule(isSet(m.Accept), nft.Accept()))
}

func rawOutput(cfg *Config, st *Static) []nft.Rule {
	rs := []nft.Rule{rule(clearBits(cfg.Marks.all()))}
	if st.Hosts.Untracked {
		rs = append(rs, rule(nft.Jump(Raw.Name(chainToHost))))
	}
	return append(rs, rule(isSet(cfg.Marks.Accept), nft.Accept()))
}

// rpfSkipChain accepts workload packets that may use a source address the RPF check would
// refuse: allowSpoofedSourcePrefixes, and DHCP requests of OpenStack VMs.
func rpfSkipChain(cfg *Config, st *Static) *nft.Chain {
	var rs []nft.Rule
	for _, s := range st.SpoofAllowed {
		if familyOf(s.Prefix.Addr()) == nft.IPv6 && !cfg.IPv6 {
			continue
		}
		rs = append(rs, rule(nft.IIFName(s.Iface), nft.SAddr(s.Prefix), nft.Accept()))
	}
	rs = append(rs, openStackRPFSkip(cfg)...)
	return &nft.Chain{Name: Raw.Name(chainRPFSkip), Rules: rs}
}

func manglePrerouting(cfg *Config, st *Static) []nft.Rule {
	a := cfg.Marks.Accept
	rs := []nft.Rule{
		rule(nft.CTStateIn(nft.CTStateEstablished|nft.CTStateRelated), nft.Accept()),
		rule(isSet(a), nft.Accept()),
	}
	if st.Hosts.PreDNAT {
		rs = append(rs, rule(nft.Jump(Mangle.Name(chainFromHost))), rule(isSet(a), nft.Accept()))
	}
	return rs
}

// manglePostrouting applies host endpoint egress policy to DNATed host traffic, once the
// output interface is known. Forwarded traffic carries the ACCEPT bit from filter FORWARD.
func manglePostrouting(cfg *Config, st *Static) []nft.Rule {
	a := cfg.Marks.Accept
	rs := []nft.Rule{rule(isSet(a), nft.Return()), rule(clearBits(cfg.Marks.all()))}
	if st.Hosts.Normal {
		rs = append(rs, rule(nft.CTStatusDNAT(), nft.Jump(Mangle.Name(chainToHost))), rule(isSet(a), nft.Return()))
	}
	return rs
}

// vxlanInput accepts VXLAN from the other hosts' VTEPs and drops the rest addressed to us.
func vxlanInput(cfg *Config, st *Static) []nft.Rule {
	var rs []nft.Rule
	for _, d := range st.VXLAN {
		port := nft.DPort(nft.ProtoUDP, nft.Port(cfg.VXLANPort))
		local := nft.FibAddrType(nft.FibDAddr, nft.AddrTypeLocal)
		rs = append(rs,
			rule(nft.L4Proto(nft.ProtoUDP), port, nft.SAddrInSet(d.Family, SetName(d.Family, SetAllVXLAN)), local, nft.Accept()).
				WithComment("Allow VXLAN packets from known VTEPs"),
			rule(nft.NFProto(d.Family), nft.L4Proto(nft.ProtoUDP), port, local, nft.Counter(), nft.Drop()).
				WithComment("Drop VXLAN packets from unknown sources"))
	}
	return rs
}

// vxlanOutput lets the host send VXLAN to the other hosts' VTEPs whatever its host endpoint
// policy says.
func vxlanOutput(cfg *Config, st *Static) []nft.Rule {
	var rs []nft.Rule
	for _, d := range st.VXLAN {
		rs = append(rs, rule(nft.L4Proto(nft.ProtoUDP), nft.DPort(nft.ProtoUDP, nft.Port(cfg.VXLANPort)),
			nft.DAddrInSet(d.Family, SetName(d.Family, SetAllVXLAN)), nft.FibAddrType(nft.FibSAddr, nft.AddrTypeLocal), nft.Accept()).
			WithComment("Allow VXLAN packets to known VTEPs"))
	}
	return rs
}
