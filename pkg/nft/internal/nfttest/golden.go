package nfttest

import (
	"net"
	"net/netip"

	"github.com/calico-host/calico-host/pkg/nft"
)

var (
	mac  = net.HardwareAddr{0x00, 0x11, 0x22, 0x33, 0x44, 0x55}
	p4   = netip.MustParsePrefix
	a4   = netip.MustParseAddr
	port = nft.Port
)

func must(err error) {
	if err != nil {
		panic(err)
	}
}

func base(typ nft.ChainType, hook nft.Hook, prio int32) *nft.BaseChain {
	return &nft.BaseChain{Type: typ, Hook: hook, Priority: prio}
}

// Golden returns six tables (ip, ip6, inet, arp, bridge and netdev, all
// named "calico") that together use every expression, datatype and set
// flavour.
func Golden() []*nft.Table {
	return []*nft.Table{goldenIP(), goldenIP6(), goldenInet(), goldenARP(), goldenBridge(), goldenNetdev()}
}

func goldenBridge() *nft.Table {
	t := nft.NewTable(nft.FamilyBridge, "calico")
	must(t.PutChain(&nft.Chain{Name: "forward", Base: base(nft.ChainFilter, nft.HookForward, -200), Rules: []nft.Rule{
		nft.NewRule(nft.EtherSAddr(mac), nft.Drop()),
		nft.NewRule(nft.SAddr(p4("10.0.0.0/8")), nft.Accept()),
		nft.NewRule(nft.DAddr(nft.Host(a4("fd5c::1"))), nft.DPort(nft.ProtoTCP, port(80)), nft.Accept()),
		nft.NewRule(nft.L4Proto(nft.ProtoTCP), nft.IIFName("veth*"), nft.Accept()),
	}}))
	return t
}

func goldenNetdev() *nft.Table {
	t := nft.NewTable(nft.FamilyNetdev, "calico")
	must(t.PutChain(&nft.Chain{Name: "ingress", Base: &nft.BaseChain{Type: nft.ChainFilter, Hook: nft.HookIngress, Device: "lo"}, Rules: []nft.Rule{
		nft.NewRule(nft.SAddr(p4("10.0.0.0/8")), nft.Drop()),
		nft.NewRule(nft.EtherSAddr(mac), nft.Drop()),
	}}))
	return t
}

// GoldenIPSets adds the sets and maps of the ip table.
func goldenIPSets(t *nft.Table) {
	ipProtoPort := nft.Concat(nft.TypeIPv4Addr, nft.TypeInetProto, nft.TypeInetService)
	for _, s := range []*nft.Set{
		{Name: "s4", Type: nft.TypeIPv4Addr, Interval: true, Elements: []nft.Element{
			nft.PrefixElem(p4("10.65.0.0/16")), nft.AddrElem(a4("198.18.0.1")),
			nft.RangeElem(nft.AddrKey(a4("198.18.1.10")), nft.AddrKey(a4("198.18.1.20"))),
		}},
		{Name: "hosts", Type: nft.TypeIPv4Addr, Elements: []nft.Element{nft.AddrElem(a4("198.18.0.2")), nft.AddrElem(a4("198.18.0.3"))}},
		{Name: "c3", Type: ipProtoPort, Elements: []nft.Element{
			nft.ConcatElem(nft.AddrElem(a4("10.65.1.5")), nft.ProtoKey(nft.ProtoTCP).Elem(), nft.PortElem(80)),
		}},
		{Name: "c3i", Type: ipProtoPort, Interval: true, Elements: []nft.Element{
			nft.ConcatElem(nft.PrefixElem(p4("10.65.0.0/16")), nft.ProtoKey(nft.ProtoUDP).Elem(), nft.PortRangeElem(1000, 2000)),
			nft.ConcatElem(nft.AddrElem(a4("10.66.0.1")), nft.ProtoKey(nft.ProtoTCP).Elem(), nft.PortElem(443)),
		}},
		{Name: "ifs", Type: nft.TypeIfname, Elements: []nft.Element{nft.IfnameElem("cali1"), nft.IfnameElem("tap0")}},
		{Name: "marks", Type: nft.TypeMark, Elements: []nft.Element{nft.MarkKey(0x10).Elem()}},
		{Name: "macs", Type: nft.TypeEtherAddr, Elements: []nft.Element{nft.EtherKey(mac).Elem()}},
		{Name: "ports", Type: nft.TypeInetService, Interval: true, Elements: []nft.Element{nft.PortElem(22), nft.PortRangeElem(8000, 8080)}},
		{Name: "protos", Type: nft.TypeInetProto, Elements: []nft.Element{nft.ProtoKey(nft.ProtoSCTP).Elem(), nft.ProtoKey(47).Elem()}},
	} {
		must(t.PutSet(s))
	}
	must(t.PutMap(&nft.Map{Name: "wl", Type: nft.TypeIfname, Elements: map[nft.Key]nft.Verdict{
		nft.IfnameKey("cali1"): nft.Goto("wl-cali1"), nft.IfnameKey("cali2"): nft.Jump("wl-cali1"),
		nft.IfnameKey("cali3"): nft.Drop(), nft.IfnameKey("cali4"): nft.Accept(), nft.IfnameKey("cali5"): nft.Return(),
	}}))
	must(t.PutMap(&nft.Map{Name: "svc", Type: nft.Concat(nft.TypeIPv4Addr, nft.TypeInetService), Elements: map[nft.Key]nft.Verdict{
		nft.ConcatKey(nft.AddrKey(a4("10.96.0.10")), nft.PortKey(53)): nft.Goto("wl-cali1"),
	}}))
}

func goldenIP() *nft.Table {
	t := nft.NewTable(nft.FamilyIP, "calico")
	goldenIPSets(t)
	must(t.PutChain(&nft.Chain{Name: "wl-cali1", Rules: []nft.Rule{
		nft.NewRule(nft.Counter(), nft.Return()).WithComment("end of workload chain"),
	}}))
	must(t.PutChain(&nft.Chain{Name: "filter-INPUT", Base: base(nft.ChainFilter, nft.HookInput, nft.PriorityFilter), Rules: ipFilterRules()}))
	must(t.PutChain(&nft.Chain{Name: "filter-FORWARD", Base: &nft.BaseChain{Type: nft.ChainFilter, Hook: nft.HookForward, Priority: 5, Policy: nft.PolicyDrop}, Rules: []nft.Rule{
		nft.NewRule(nft.IIFName("cali*"), nft.IIFNameVmap("wl")),
		nft.NewRule(nft.OIFName("cali*"), nft.OIFNameVmap("wl")),
		nft.NewRule(nft.Vmap("svc", nft.FieldDAddr(nft.IPv4), nft.FieldDPort(nft.ProtoTCP))),
		nft.NewRule(nft.FibNoRoute(nft.FibSAddr|nft.FibMark|nft.FibIIF), nft.Drop()),
		nft.NewRule(nft.Jump("wl-cali1")),
		nft.NewRule(nft.Goto("wl-cali1")),
	}}))
	must(t.PutChain(&nft.Chain{Name: "nat-POSTROUTING", Base: base(nft.ChainNAT, nft.HookPostrouting, nft.PrioritySrcNAT+10), Rules: []nft.Rule{
		nft.NewRule(nft.OIFName("eth0"), nft.Masquerade()),
		nft.NewRule(nft.MasqueradeFullyRandom()),
		nft.NewRule(nft.L4Proto(nft.ProtoUDP), nft.MasqueradeToPorts(nft.Ports(20000, 20009), false)),
		nft.NewRule(nft.L4Proto(nft.ProtoTCP), nft.MasqueradeToPorts(nft.Ports(20000, 20009), true)),
		nft.NewRule(nft.SNAT(a4("198.18.0.1"))),
		nft.NewRule(nft.L4Proto(nft.ProtoTCP), nft.SNATToPorts(a4("198.18.0.1"), nft.Ports(1000, 2000))),
	}}))
	must(t.PutChain(&nft.Chain{Name: "nat-PREROUTING", Base: base(nft.ChainNAT, nft.HookPrerouting, nft.PriorityDstNAT), Rules: []nft.Rule{
		nft.NewRule(nft.L4Proto(nft.ProtoTCP), nft.DAddr(nft.Host(a4("10.96.0.1"))), nft.DPort(nft.ProtoTCP, port(443)), nft.DNATToPort(a4("10.65.0.1"), 6443)),
		nft.NewRule(nft.DAddr(nft.Host(a4("10.96.0.2"))), nft.DNAT(a4("10.65.0.2"))),
	}}))
	must(t.PutChain(&nft.Chain{Name: "raw-PREROUTING", Base: base(nft.ChainFilter, nft.HookPrerouting, nft.PriorityRaw), Rules: []nft.Rule{
		nft.NewRule(nft.IIFName("lo"), nft.Notrack()),
		nft.NewRule(nft.FibAddrType(nft.FibDAddr, nft.AddrTypeLocal), nft.Not(nft.FibAddrType(nft.FibSAddr, nft.AddrTypeLocal)), nft.Accept()),
	}}))
	must(t.PutChain(&nft.Chain{Name: "mangle-OUTPUT", Base: &nft.BaseChain{Type: nft.ChainRoute, Hook: nft.HookOutput, Priority: nft.PriorityMangle}, Rules: []nft.Rule{
		nft.NewRule(nft.SetMark(7)),
		nft.NewRule(nft.OrMark(0x10)),
		nft.NewRule(nft.AndMark(^uint32(0x10))),
		nft.NewRule(nft.SetMarkBits(0xffff0000, 0x10)),
		nft.NewRule(nft.FibAddrType(nft.FibSAddr|nft.FibOIF, nft.AddrTypeLocal), nft.Accept()),
	}}))
	return t
}

func ipFilterRules() []nft.Rule {
	ip := nft.IPv4
	return []nft.Rule{
		nft.NewRule(nft.L4Proto(nft.ProtoTCP), nft.Accept()),
		nft.NewRule(nft.Not(nft.L4Proto(nft.ProtoUDP)), nft.Accept()),
		nft.NewRule(nft.DPort(nft.ProtoTCP, port(80)), nft.Accept()),
		nft.NewRule(nft.SPort(nft.ProtoUDP, nft.Ports(1000, 2000)), nft.Accept()),
		nft.NewRule(nft.DPort(0, port(53)), nft.Accept()),
		nft.NewRule(nft.Not(nft.DPort(nft.ProtoTCP, nft.Ports(1000, 2000))), nft.Accept()),
		nft.NewRule(nft.DPort(nft.ProtoTCP, port(22), port(80), nft.Ports(1000, 2000)), nft.Accept()),
		nft.NewRule(nft.Not(nft.DPort(nft.ProtoUDP, port(53), port(123))), nft.Accept()),
		nft.NewRule(nft.DPort(nft.ProtoSCTP, port(9)), nft.SPort(nft.ProtoSCTP, port(10)), nft.Accept()),
		nft.NewRule(nft.SAddr(p4("10.0.0.0/8")), nft.DAddr(nft.Host(a4("10.1.2.3"))), nft.Drop()),
		nft.NewRule(nft.SAddr(p4("10.64.0.0/10")), nft.Drop()),
		nft.NewRule(nft.Not(nft.SAddr(p4("10.0.0.0/8"))), nft.Not(nft.DAddr(p4("10.64.0.0/10"))), nft.Drop()),
		nft.NewRule(nft.SAddrIn(p4("10.0.0.0/8"), p4("192.168.1.1/32")), nft.Drop()),
		nft.NewRule(nft.Not(nft.DAddrIn(p4("10.0.0.0/8"), p4("172.16.0.0/12"))), nft.Drop()),
		nft.NewRule(nft.SAddrInSet(ip, "s4"), nft.Not(nft.DAddrInSet(ip, "hosts")), nft.Accept()),
		nft.NewRule(nft.InSet("c3", nft.FieldDAddr(ip), nft.FieldL4Proto, nft.FieldDPort(0)), nft.Accept()),
		nft.NewRule(nft.Not(nft.InSet("c3i", nft.FieldSAddr(ip), nft.FieldL4Proto, nft.FieldSPort(0))), nft.Accept()),
		nft.NewRule(nft.InSet("ports", nft.FieldDPort(nft.ProtoTCP)), nft.InSet("protos", nft.FieldL4Proto), nft.Accept()),
		nft.NewRule(nft.InSet("marks", nft.FieldMark), nft.InSet("macs", nft.FieldEtherSAddr), nft.Accept()),
		nft.NewRule(nft.IIFNameInSet("ifs"), nft.OIFName("eth0"), nft.Not(nft.OIFName("lo")), nft.Accept()),
		nft.NewRule(nft.IIFName("cali*"), nft.Not(nft.IIFName("tap*")), nft.Accept()),
		nft.NewRule(nft.InList([]nft.Field{nft.FieldIIFName}, nft.IfnamePrefixElem("cali"), nft.IfnamePrefixElem("tap"),
			nft.IfnameElem("eth0")), nft.Accept()),
		nft.NewRule(nft.ICMPType(ip, 8), nft.Accept()),
		nft.NewRule(nft.ICMPType(ip, 3), nft.ICMPCode(ip, 3), nft.Accept()),
		nft.NewRule(nft.CTStateIn(nft.CTStateEstablished|nft.CTStateRelated), nft.Accept()),
		nft.NewRule(nft.Not(nft.CTStateIn(nft.CTStateInvalid)), nft.CTStatusIn(nft.CTStatusDNAT), nft.Accept()),
		nft.NewRule(nft.Not(nft.CTStatusIn(nft.CTStatusDNAT|nft.CTStatusSNAT)), nft.Accept()),
		nft.NewRule(nft.Mark(5), nft.Accept()),
		nft.NewRule(nft.MarkMasked(0x10, 0x10), nft.Not(nft.MarkMasked(0x20, 0)), nft.Accept()),
		nft.NewRule(nft.InList([]nft.Field{nft.FieldSAddr(ip), nft.FieldDPort(nft.ProtoTCP)},
			nft.ConcatElem(nft.AddrElem(a4("10.65.0.1")), nft.PortElem(80)),
			nft.ConcatElem(nft.AddrElem(a4("10.65.0.2")), nft.PortElem(443))), nft.Accept()),
		nft.NewRule(nft.FibAddrType(nft.FibDAddr, nft.AddrTypeLocal), nft.Accept()),
		nft.NewRule(nft.Counter(), nft.Log("calico-drop: "), nft.Drop()),
		nft.NewRule(nft.LogAt("calico-info", nft.LogInfo), nft.Accept()),
		nft.NewRule(nft.Mark(6), nft.LogGroup("API0|gnp/web", 1, 80), nft.Counter(), nft.Accept()),
		nft.NewRule(nft.Mark(7), nft.LogGroup("DRI", 2, 0), nft.Drop()),
		nft.NewRule(nft.EtherSAddr(mac), nft.Drop()),
		nft.NewRule(nft.Reject()).WithComment("reject the rest"),
	}
}

func goldenIP6() *nft.Table {
	t := nft.NewTable(nft.FamilyIP6, "calico")
	ip := nft.IPv6
	must(t.PutSet(&nft.Set{Name: "s6", Type: nft.TypeIPv6Addr, Interval: true, Elements: []nft.Element{
		nft.PrefixElem(p4("fd5c::/16")), nft.AddrElem(a4("fd5d::1")),
	}}))
	must(t.PutChain(&nft.Chain{Name: "filter-INPUT", Base: base(nft.ChainFilter, nft.HookInput, 10), Rules: []nft.Rule{
		nft.NewRule(nft.SAddr(p4("fd5c::/16")), nft.DPort(nft.ProtoTCP, port(80)), nft.Accept()),
		nft.NewRule(nft.SAddr(p4("fd5c:1234::/33")), nft.Accept()),
		nft.NewRule(nft.DAddr(nft.Host(a4("fd5c::1"))), nft.Not(nft.SAddrInSet(ip, "s6")), nft.Drop()),
		nft.NewRule(nft.SAddrIn(p4("fd5c::/16"), p4("fd5e::/16")), nft.Accept()),
		nft.NewRule(nft.ICMPType(ip, 128), nft.Accept()),
		nft.NewRule(nft.ICMPType(ip, 135), nft.ICMPCode(ip, 0), nft.Accept()),
		nft.NewRule(nft.Reject()),
	}}))
	must(t.PutChain(&nft.Chain{Name: "nat-POSTROUTING", Base: base(nft.ChainNAT, nft.HookPostrouting, nft.PrioritySrcNAT), Rules: []nft.Rule{
		nft.NewRule(nft.L4Proto(nft.ProtoTCP), nft.SNATToPorts(a4("fd5c::1"), nft.Ports(1000, 2000))),
		nft.NewRule(nft.SNAT(a4("fd5c::1"))),
		nft.NewRule(nft.Masquerade()),
	}}))
	return t
}

func goldenInet() *nft.Table {
	t := nft.NewTable(nft.FamilyInet, "calico")
	must(t.PutChain(&nft.Chain{Name: "filter-FORWARD", Base: base(nft.ChainFilter, nft.HookForward, nft.PriorityFilter), Rules: []nft.Rule{
		nft.NewRule(nft.NFProto(nft.IPv4), nft.Accept()),
		nft.NewRule(nft.NFProto(nft.IPv6), nft.SAddr(p4("fd5c::/16")), nft.Accept()),
		nft.NewRule(nft.SAddr(nft.Host(a4("10.0.0.1"))), nft.Accept()),
		nft.NewRule(nft.DAddr(nft.Host(a4("fd5c::1"))), nft.DPort(nft.ProtoTCP, port(80)), nft.Accept()),
		nft.NewRule(nft.ICMPType(nft.IPv6, 128), nft.Accept()),
		nft.NewRule(nft.ICMPType(nft.IPv4, 8), nft.Accept()),
		nft.NewRule(nft.SAddr(p4("10.64.0.0/10")), nft.DPort(nft.ProtoTCP, port(80)), nft.Accept()),
		nft.NewRule(nft.EtherSAddr(mac), nft.Drop()),
		nft.NewRule(nft.Reject()),
	}}))
	must(t.PutChain(&nft.Chain{Name: "nat-POSTROUTING", Base: base(nft.ChainNAT, nft.HookPostrouting, nft.PrioritySrcNAT), Rules: []nft.Rule{
		nft.NewRule(nft.NFProto(nft.IPv4), nft.SNAT(a4("198.18.0.1"))),
		nft.NewRule(nft.L4Proto(nft.ProtoTCP), nft.SNATToPorts(a4("fd5c::1"), nft.Ports(1000, 2000))),
	}}))
	must(t.PutChain(&nft.Chain{Name: "nat-PREROUTING", Base: base(nft.ChainNAT, nft.HookPrerouting, nft.PriorityDstNAT-5), Rules: []nft.Rule{
		nft.NewRule(nft.L4Proto(nft.ProtoTCP), nft.DNATToPort(a4("10.65.0.1"), 80)),
		nft.NewRule(nft.DNAT(a4("fd5c::2"))),
	}}))
	return t
}

func goldenARP() *nft.Table {
	t := nft.NewTable(nft.FamilyARP, "calico")
	must(t.PutChain(&nft.Chain{Name: "input", Base: base(nft.ChainFilter, nft.HookInput, nft.PriorityFilter), Rules: []nft.Rule{
		nft.NewRule(nft.ARPOp(nft.ARPRequest), nft.Accept()),
		nft.NewRule(nft.ARPOp(nft.ARPReply), nft.ARPSAddrIP(a4("198.18.0.1")), nft.Accept()),
		nft.NewRule(nft.ARPDAddrIP(a4("10.65.0.1")), nft.Drop()),
		nft.NewRule(nft.EtherSAddr(mac), nft.Drop()),
		nft.NewRule(nft.ARPSAddrEther(mac), nft.IIFName("cali*"), nft.Drop()),
	}}))
	must(t.PutChain(&nft.Chain{Name: "output", Base: base(nft.ChainFilter, nft.HookOutput, nft.PriorityFilter)}))
	return t
}
