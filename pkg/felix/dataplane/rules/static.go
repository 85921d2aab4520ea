package rules

import (
	"net/netip"

	"github.com/calico-host/calico-host/pkg/nft"
)

// Static is the state the static chains depend on besides the Config.
type Static struct {
	Hosts        HostDispatch
	MasqFamilies []nft.IPVersion // versions with natOutgoing pools
	FloatingIPs  []FloatingIP
	SpoofAllowed []SpoofAllowed
	VXLAN        []VXLANDevice // VXLAN devices in use
	IPIP         bool          // IPIP is on (IPv4 only): filter IP-in-IP by the hosts' addresses
	// ServiceCIDRs are the service CIDRs of BGPConfiguration default, both versions (see
	// serviceLoopChain).
	ServiceCIDRs []netip.Prefix
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

// VXLANDevice is a VXLAN tunnel device of one IP version.
type VXLANDevice struct {
	Name    string
	Version nft.IPVersion
}

// baseChain is one hook of the table and the static chain it jumps to.
type baseChain struct {
	layer    Layer
	name     string
	hook     nft.Hook
	typ      nft.ChainType
	priority int32
	target   string
}

// baseChains are the hooks, with Calico's priorities (felix/nftables/table.go). nat OUTPUT
// runs at dstnat so that host traffic is DNATed (floating IPs) before filter OUTPUT looks at
// `ct status dnat`.
var baseChains = []baseChain{
	{Raw, "PREROUTING", nft.HookPrerouting, nft.ChainFilter, nft.PriorityRaw, chainPrerouting},
	{Raw, "OUTPUT", nft.HookOutput, nft.ChainFilter, nft.PriorityRaw, chainOutput},
	{Mangle, "PREROUTING", nft.HookPrerouting, nft.ChainFilter, nft.PriorityMangle, chainPrerouting},
	{Mangle, "POSTROUTING", nft.HookPostrouting, nft.ChainFilter, nft.PriorityMangle, chainPostrouting},
	{NAT, "PREROUTING", nft.HookPrerouting, nft.ChainNAT, nft.PriorityDstNAT, chainPrerouting},
	{NAT, "OUTPUT", nft.HookOutput, nft.ChainNAT, nft.PriorityDstNAT, chainOutput},
	{NAT, "POSTROUTING", nft.HookPostrouting, nft.ChainNAT, nft.PrioritySrcNAT + 10, chainPostrouting},
	{Filter, "INPUT", nft.HookInput, nft.ChainFilter, nft.PriorityFilter, chainInput},
	{Filter, "FORWARD", nft.HookForward, nft.ChainFilter, nft.PriorityFilter, chainForward},
	{Filter, "OUTPUT", nft.HookOutput, nft.ChainFilter, nft.PriorityFilter, chainOutput},
}

// staticBuilder renders the rules of one static chain for the table of one IP version.
type staticBuilder func(cfg *Config, st *Static, v nft.IPVersion) []nft.Rule

// staticChain is a static chain and its builder.
type staticChain struct {
	layer Layer
	name  string
	build staticBuilder
}

// staticChains are always present: the base chains jump to them.
var staticChains = []staticChain{
	{Raw, chainPrerouting, rawPrerouting},
	{Raw, chainOutput, rawOutput},
	{Raw, chainWorkloadRPF, workloadRPF},
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

// StaticChains renders, for the table of version v, the base chains, the static chains they
// jump to, and the optional chains those refer to (workload dispatch, NAT, failsafes).
func StaticChains(cfg *Config, st *Static, v nft.IPVersion) []*nft.Chain {
	var out []*nft.Chain
	for _, b := range baseChains {
		out = append(out, baseChainOf(cfg, b))
	}
	for _, s := range staticChains {
		out = append(out, &nft.Chain{Name: s.layer.Name(s.name), Rules: s.build(cfg, st, v)})
	}
	out = append(out, workloadDispatchChains()...)
	out = append(out, natChains(cfg, st, v)...)
	if c := serviceLoopChain(cfg, st, v); c != nil {
		out = append(out, c)
	}
	if cfg.WireguardHostMark != 0 {
		out = append(out, wireguardIncomingMark(cfg))
	}
	for _, name := range st.Hosts.Failsafes {
		out = append(out, failsafeChain(cfg, v, name))
	}
	return out
}

// baseChainOf renders a base chain: a jump to its static chain (and, in filter FORWARD, the
// accept of what policy accepted).
func baseChainOf(cfg *Config, b baseChain) *nft.Chain {
	c := &nft.Chain{
		Name: b.layer.Name(b.name),
		Base: &nft.BaseChain{Type: b.typ, Hook: b.hook, Priority: b.priority},
	}
	c.Rules = append(c.Rules, rule(nft.Jump(b.layer.Name(b.target))))
	if b.layer == Filter && b.hook == nft.HookForward {
		// Accept what policy accepted; mark the rest as forwarded for mangle POSTROUTING.
		a := cfg.Marks.Accept
		c.Rules = append(c.Rules, rule(isSet(a), nft.Accept()), rule(setBits(a)))
	}
	return c
}

// prefixRules makes the rule that matches workload interfaces: iifname "cali*" <then>
// (oifname when out), or one lookup of all the prefixes, iifname { "cali*", "tap*" }.
func prefixRules(cfg *Config, out bool, then ...nft.Expr) []nft.Rule {
	return []nft.Rule{rule(append([]nft.Expr{workloadIface(cfg, out)}, then...)...)}
}

// workloadIface matches the input (output when out) interfaces with a workload prefix.
func workloadIface(cfg *Config, out bool) nft.Match {
	f := nft.FieldIIFName
	if out {
		f = nft.FieldOIFName
	}
	elems := make([]nft.Element, len(cfg.WorkloadPrefixes))
	for i, p := range cfg.WorkloadPrefixes {
		elems[i] = nft.IfnamePrefixElem(p)
	}
	if len(elems) == 1 {
		if out {
			return nft.OIFName(cfg.WorkloadPrefixes[0] + "*")
		}
		return nft.IIFName(cfg.WorkloadPrefixes[0] + "*")
	}
	return nft.InList([]nft.Field{f}, elems...)
}

func filterInput(cfg *Config, st *Static, v nft.IPVersion) []nft.Rule {
	a := cfg.Marks.Accept
	rs := []nft.Rule{rule(isSet(a), nft.Accept()).WithComment("Accepted by raw or mangle policy")}
	rs = append(rs, ipipInput(st, v)...)
	rs = append(rs, vxlanInput(cfg, st, v)...)
	rs = append(rs, wireguardRule(cfg, v, nft.FibDAddr, "Allow incoming WireGuard packets")...)
	rs = append(rs, prefixRules(cfg, false, nft.Goto(Filter.Name(chainWorkloadToHost)))...)
	rs = append(rs, rule(clearBits(cfg.Marks.all())))
	if st.Hosts.Normal {
		rs = append(rs, rule(nft.Jump(Filter.Name(chainFromHost))), rule(isSet(a), nft.Accept()))
	}
	return rs
}

func filterForward(cfg *Config, st *Static, v nft.IPVersion) []nft.Rule {
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
	if serviceLoopChain(cfg, st, v) != nil {
		rs = append(rs, rule(nft.Jump(Filter.Name(chainCIDRBlock))))
	}
	return rs
}

func filterOutput(cfg *Config, st *Static, v nft.IPVersion) []nft.Rule {
	a := cfg.Marks.Accept
	rs := []nft.Rule{rule(isSet(a), nft.Accept())}
	rs = append(rs, prefixRules(cfg, true, nft.Return())...)
	rs = append(rs, ipipOutput(st, v)...)
	rs = append(rs, vxlanOutput(cfg, st, v)...)
	rs = append(rs, wireguardRule(cfg, v, nft.FibSAddr, "Allow outgoing WireGuard packets")...)
	rs = append(rs, rule(clearBits(cfg.Marks.all())))
	if st.Hosts.Normal {
		rs = append(rs, rule(nft.Not(nft.CTStatusIn(nft.CTStatusDNAT)), nft.Jump(Filter.Name(chainToHost))), rule(isSet(a), nft.Accept()))
	}
	return rs
}

// ndpTypes are the ICMPv6 types a workload may always send to its host: multicast listener
// query, report and done, router solicitation, neighbour solicitation and advertisement.
var ndpTypes = []uint8{130, 131, 132, 133, 135, 136}

// workloadToHost handles traffic from workloads to the host itself: a few always-allowed
// protocols, then the workload's egress policy, then DefaultEndpointToHostAction.
func workloadToHost(cfg *Config, _ *Static, v nft.IPVersion) []nft.Rule {
	var rs []nft.Rule
	if v == nft.IPv6 {
		for _, t := range ndpTypes {
			rs = append(rs, rule(nft.ICMPType(nft.IPv6, t), nft.Accept()))
		}
	}
	rs = append(rs, openStackToHost(cfg, v)...)
	rs = append(rs, rule(nft.Jump(Filter.Name(chainFromWorkload))))
	var x []nft.Expr
	switch cfg.EndpointToHost {
	case ActionAccept:
		x = []nft.Expr{nft.Accept()}
	case ActionReturn:
		x = []nft.Expr{nft.Return()}
	default:
		x = []nft.Expr{nft.Counter(), nft.Drop()}
	}
	return append(rs, rule(x...).WithComment("Configured DefaultEndpointToHostAction"))
}

// rawPrerouting sends workload traffic to the anti-spoofing chain (with the scratch bit that
// says "from a workload" set, as Calico's RPF lookup sees it) and applies untracked policy to
// other traffic.
func rawPrerouting(cfg *Config, st *Static, _ nft.IPVersion) []nft.Rule {
	m := cfg.Marks
	rs := []nft.Rule{rule(clearBits(m.all()))}
	if cfg.WireguardHostMark != 0 {
		rs = append(rs, rule(nft.Jump(Raw.Name(chainWGIncomingMark))))
	}
	rs = append(rs, prefixRules(cfg, false, setBits(m.Scratch0), nft.Goto(Raw.Name(chainWorkloadRPF)))...)
	if st.Hosts.Untracked {
		rs = append(rs, rule(nft.Jump(Raw.Name(chainFromHost))))
	}
	return append(rs, rule(isSet(m.Accept), nft.Accept()))
}

// workloadRPF drops workload packets whose source address is not routed back through the
// interface they came from (strict RPF: anti-spoofing), except the source prefixes an endpoint
// may spoof (allowSpoofedSourcePrefixes: one set lookup of interface and address), OpenStack
// DHCP requests and IPv6 duplicate address detection.
func workloadRPF(cfg *Config, st *Static, v nft.IPVersion) []nft.Rule {
	var rs []nft.Rule
	var spoof []nft.Element
	for _, s := range st.SpoofAllowed {
		if fam, p := prefixFamily(s.Prefix); fam == v && p.IsValid() {
			spoof = append(spoof, nft.ConcatElem(nft.IfnameElem(s.Iface), nft.PrefixElem(p.Masked())))
		}
	}
	if len(spoof) > 0 {
		rs = append(rs, rule(nft.InList([]nft.Field{nft.FieldIIFName, nft.FieldSAddr(v)}, spoof...), nft.Accept()).
			WithComment("allowSpoofedSourcePrefixes"))
	}
	rs = append(rs, openStackRPFSkip(cfg, v)...)
	if v == nft.IPv6 {
		rs = append(rs, rule(nft.SAddr(netip.MustParsePrefix("::/128")), nft.ICMPType(nft.IPv6, 135), nft.Accept()).
			WithComment("Duplicate address detection"))
	}
	return append(rs, rule(nft.FibNoRoute(nft.FibSAddr|nft.FibMark|nft.FibIIF), nft.Counter(), nft.Drop()).
		WithComment("Drop workload packets with a spoofed source address"))
}

func rawOutput(cfg *Config, st *Static, _ nft.IPVersion) []nft.Rule {
	rs := []nft.Rule{rule(clearBits(cfg.Marks.all()))}
	if st.Hosts.Untracked {
		rs = append(rs, rule(nft.Jump(Raw.Name(chainToHost))))
	}
	return append(rs, rule(isSet(cfg.Marks.Accept), nft.Accept()))
}

func manglePrerouting(cfg *Config, st *Static, _ nft.IPVersion) []nft.Rule {
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
func manglePostrouting(cfg *Config, st *Static, _ nft.IPVersion) []nft.Rule {
	a := cfg.Marks.Accept
	rs := []nft.Rule{rule(isSet(a), nft.Return()), rule(clearBits(cfg.Marks.all()))}
	if st.Hosts.Normal {
		rs = append(rs, rule(nft.CTStatusIn(nft.CTStatusDNAT), nft.Jump(Mangle.Name(chainToHost))), rule(isSet(a), nft.Return()))
	}
	return rs
}

// vxlanDevices are the VXLAN devices of version v.
func vxlanDevices(st *Static, v nft.IPVersion) []VXLANDevice {
	var out []VXLANDevice
	for _, d := range st.VXLAN {
		if d.Version == v {
			out = append(out, d)
		}
	}
	return out
}

// vxlanInput accepts VXLAN from the other hosts' VTEPs and drops the rest addressed to us.
func vxlanInput(cfg *Config, st *Static, v nft.IPVersion) []nft.Rule {
	if len(vxlanDevices(st, v)) == 0 {
		return nil
	}
	port := nft.DPort(nft.ProtoUDP, nft.Port(cfg.VXLANPort))
	local := nft.FibAddrType(nft.FibDAddr, nft.AddrTypeLocal)
	return []nft.Rule{
		rule(port, nft.SAddrInSet(v, SetName(v, SetAllVXLAN)), local, nft.Accept()).
			WithComment("Allow VXLAN packets from known VTEPs"),
		rule(port, local, nft.Counter(), nft.Drop()).
			WithComment("Drop VXLAN packets from unknown sources"),
	}
}

// vxlanOutput lets the host send VXLAN to the other hosts' VTEPs whatever its host endpoint
// policy says.
func vxlanOutput(cfg *Config, st *Static, v nft.IPVersion) []nft.Rule {
	if len(vxlanDevices(st, v)) == 0 {
		return nil
	}
	return []nft.Rule{rule(nft.DPort(nft.ProtoUDP, nft.Port(cfg.VXLANPort)), nft.DAddrInSet(v, SetName(v, SetAllVXLAN)),
		nft.FibAddrType(nft.FibSAddr, nft.AddrTypeLocal), nft.Accept()).WithComment("Allow VXLAN packets to known VTEPs")}
}

// protoIPIPNum is IP-in-IP (ipencap), matched by number as Project Calico does.
const protoIPIPNum = 4

// ipipInput accepts IP-in-IP from the known hosts' addresses to a local address and drops the
// rest, as Project Calico's filter INPUT does when IPIP is on.
func ipipInput(st *Static, v nft.IPVersion) []nft.Rule {
	if !st.IPIP || v != nft.IPv4 {
		return nil
	}
	proto := nft.L4Proto(protoIPIPNum)
	return []nft.Rule{
		rule(proto, nft.SAddrInSet(v, SetName(v, SetAllHosts)), nft.FibAddrType(nft.FibDAddr, nft.AddrTypeLocal), nft.Accept()).
			WithComment("Allow IPIP packets from Calico hosts"),
		rule(proto, nft.Counter(), nft.Drop()).WithComment("Drop IPIP packets from non-Calico hosts"),
	}
}

// ipipOutput lets the host send IP-in-IP from a local address to the known hosts whatever its
// host endpoint policy says.
func ipipOutput(st *Static, v nft.IPVersion) []nft.Rule {
	if !st.IPIP || v != nft.IPv4 {
		return nil
	}
	return []nft.Rule{rule(nft.L4Proto(protoIPIPNum), nft.DAddrInSet(v, SetName(v, SetAllHosts)),
		nft.FibAddrType(nft.FibSAddr, nft.AddrTypeLocal), nft.Accept()).WithComment("Allow IPIP packets to other Calico hosts")}
}

// wireguardRule accepts WireGuard's UDP port to (FibDAddr, input) or from (FibSAddr, output)
// this host, before host endpoint policy and failsafes, as Calico does: a host policy cannot
// cut the tunnels; the device only accepts its peers' keys.
func wireguardRule(cfg *Config, v nft.IPVersion, dir nft.FibFlags, comment string) []nft.Rule {
	port := cfg.WireguardPortV4
	if v == nft.IPv6 {
		port = cfg.WireguardPortV6
	}
	if port == 0 {
		return nil
	}
	return []nft.Rule{rule(nft.DPort(nft.ProtoUDP, nft.Port(port)), nft.FibAddrType(dir, nft.AddrTypeLocal), nft.Accept()).WithComment(comment)}
}

// wireguardIncomingMark marks packets that arrive on host interfaces (not lo, the WireGuard
// devices or workloads) with the WireGuard mark (host encryption).
func wireguardIncomingMark(cfg *Config) *nft.Chain {
	rs := []nft.Rule{rule(nft.IIFName("lo"), nft.Return())}
	for _, name := range cfg.WireguardIfaces {
		rs = append(rs, rule(nft.IIFName(name), nft.Return()))
	}
	rs = append(rs, prefixRules(cfg, false, nft.Return())...)
	rs = append(rs, rule(setBits(cfg.WireguardHostMark)))
	return &nft.Chain{Name: Raw.Name(chainWGIncomingMark), Rules: rs}
}
