package dataplane

import (
	"net/netip"

	"github.com/calico-host/calico-host/pkg/felix/calc"
)

// Builders of calc updates for tests. Addresses: 10.65.0.0/16 and fd5c::/16 for workloads,
// 198.18.0.0/15 for hosts.

func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }
func addr(s string) netip.Addr  { return netip.MustParseAddr(s) }

func members(prefixes ...string) []calc.IPSetMember {
	out := make([]calc.IPSetMember, len(prefixes))
	for i, p := range prefixes {
		out[i] = calc.IPSetMember{Prefix: pfx(p)}
	}
	return out
}

func ipset(id string, prefixes ...string) calc.IPSetUpdate {
	return calc.IPSetUpdate{ID: id, Type: calc.IPSetNet, Members: members(prefixes...)}
}

func namedPortSet(id string, proto uint8, port uint16, ips ...string) calc.IPSetUpdate {
	u := calc.IPSetUpdate{ID: id, Type: calc.IPSetNamedPort}
	for _, ip := range ips {
		u.Members = append(u.Members, calc.IPSetMember{Prefix: pfx(ip), Protocol: proto, Port: port})
	}
	return u
}

func gnpID(name string) calc.PolicyID { return calc.PolicyID{Tier: "default", Kind: "gnp", Name: name} }

func tierPolicyID(tier, name string) calc.PolicyID {
	return calc.PolicyID{Tier: tier, Kind: "gnp", Name: tier + "." + name}
}

func policy(id calc.PolicyID, in, out []calc.Rule) calc.ActivePolicyUpdate {
	return calc.ActivePolicyUpdate{ID: id, Policy: &calc.Policy{InboundRules: in, OutboundRules: out}}
}

func profile(name string, in, out []calc.Rule) calc.ActiveProfileUpdate {
	return calc.ActiveProfileUpdate{Name: name, Profile: &calc.Profile{InboundRules: in, OutboundRules: out}}
}

func allow() calc.Rule { return calc.Rule{Action: calc.RuleAllow} }

func wepID(name string) calc.WorkloadEndpointID {
	return calc.WorkloadEndpointID{OrchestratorID: "cni", WorkloadID: "default/" + name, EndpointID: "eth0"}
}

type wepOpt func(*calc.WorkloadEndpoint)

func withTiers(t ...calc.TierInfo) wepOpt { return func(w *calc.WorkloadEndpoint) { w.Tiers = t } }
func withProfiles(p ...string) wepOpt     { return func(w *calc.WorkloadEndpoint) { w.ProfileIDs = p } }
func withV6(nets ...string) wepOpt {
	return func(w *calc.WorkloadEndpoint) {
		for _, n := range nets {
			w.IPv6Nets = append(w.IPv6Nets, pfx(n))
		}
	}
}

// wep is a workload endpoint on interface iface with IPv4 addresses ips.
func wep(name, iface string, ips []string, opts ...wepOpt) calc.WorkloadEndpointUpdate {
	ep := &calc.WorkloadEndpoint{Name: iface, Namespace: "default"}
	for _, ip := range ips {
		ep.IPv4Nets = append(ep.IPv4Nets, pfx(ip))
	}
	for _, o := range opts {
		o(ep)
	}
	return calc.WorkloadEndpointUpdate{ID: wepID(name), Endpoint: ep}
}

func tier(name string, ingress, egress []calc.PolicyID) calc.TierInfo {
	return calc.TierInfo{Name: name, DefaultAction: "Deny", IngressPolicies: ingress, EgressPolicies: egress}
}

func ids(p ...calc.PolicyID) []calc.PolicyID { return p }

// example19 is felix-facts §1.9: one workload, the CNI's profile, one ingress policy.
func example19() []calc.Update {
	return []calc.Update{
		ipset("s:fe", "10.65.0.9/32"),
		ipset("s:net1", "10.65.0.5/32"),
		policy(gnpID("allow-web"), []calc.Rule{{Action: calc.RuleAllow, Protocol: 6, SrcIPSetIDs: []string{"s:fe"},
			DstPorts: []calc.PortRange{{First: 80, Last: 80}}}}, nil),
		profile("net1", []calc.Rule{{Action: calc.RuleAllow, SrcIPSetIDs: []string{"s:net1"}}}, []calc.Rule{allow()}),
		wep("w1", "cali1a2b3c4d5e6", []string{"10.65.0.5/32"},
			withTiers(tier("default", ids(gnpID("allow-web")), nil)), withProfiles("net1")),
	}
}

func u8(v uint8) *uint8 { return &v }

func ports(p ...uint16) []calc.PortRange {
	out := make([]calc.PortRange, len(p))
	for i, x := range p {
		out[i] = calc.PortRange{First: x, Last: x}
	}
	return out
}

// tieredPolicies: two tiers; the first passes web traffic to the second, whose default action
// is Pass, so the profile decides what the second tier does not.
func tieredPolicies() []calc.Update {
	sec, app := tierPolicyID("security", "pass-web"), tierPolicyID("security", "deny-all")
	logp, appAllow := tierPolicyID("app", "log"), tierPolicyID("app", "allow-dns")
	return []calc.Update{
		policy(sec, []calc.Rule{{Action: calc.RulePass, Protocol: 6, DstPorts: ports(80, 443)}}, nil),
		policy(app, []calc.Rule{{Action: calc.RuleDeny}}, []calc.Rule{{Action: calc.RuleDeny}}),
		policy(logp, nil, []calc.Rule{{Action: calc.RuleLog, Protocol: 17}}),
		policy(appAllow, nil, []calc.Rule{{Action: calc.RuleAllow, Protocol: 17, DstPorts: ports(53)}}),
		profile("p1", []calc.Rule{allow()}, []calc.Rule{allow()}),
		wep("w1", "cali11111111111", []string{"10.65.0.1/32"}, withProfiles("p1"), withTiers(
			calc.TierInfo{Name: "security", DefaultAction: "Deny", IngressPolicies: ids(sec, app), EgressPolicies: ids(app)},
			calc.TierInfo{Name: "app", DefaultAction: "Pass", EgressPolicies: ids(logp, appAllow)},
		)),
	}
}

// ruleFeatures: one policy using every kind of match.
func ruleFeatures() []calc.Update {
	id := gnpID("features")
	in := []calc.Rule{
		{Action: calc.RuleAllow, SrcNets: []netip.Prefix{pfx("10.65.1.0/24"), pfx("198.18.0.1/32"), pfx("fd5c:1::/64")}},
		{Action: calc.RuleDeny, Protocol: 6, NotSrcNets: []netip.Prefix{pfx("10.65.0.0/16")}, NotDstPorts: ports(22)},
		{Action: calc.RuleAllow, Protocol: 17, SrcPorts: []calc.PortRange{{First: 1000, Last: 2000}, {First: 53, Last: 53}}, DstIPSetIDs: []string{"s:a", "s:b"}},
		{Action: calc.RuleAllow, DstNamedPortIPSetIDs: []string{"n:http"}},
		{Action: calc.RuleAllow, SrcIPSetIDs: []string{"s:a"}, DstNamedPortIPSetIDs: []string{"n:http", "n:dns"}},
		{Action: calc.RuleAllow, Protocol: 1, ICMP: &calc.ICMPMatch{Type: 8, Code: u8(0)}},
		{Action: calc.RuleAllow, Protocol: 58, IPVersion: 6, ICMP: &calc.ICMPMatch{Type: 128}},
		{Action: calc.RuleDeny, Protocol: 1, NotICMP: &calc.ICMPMatch{Type: 0}},
		{Action: calc.RuleLog, NotProtocol: 6, NotSrcIPSetIDs: []string{"s:b"}},
		{Action: calc.RulePass, IPVersion: 4, Protocol: 132, DstPorts: ports(9000)},
		{Action: calc.RuleAllow, Protocol: 47, DstPorts: ports(1)},                            // ports without a port protocol: fail closed, a drop
		{Action: calc.RuleAllow, Protocol: 1, NotICMP: &calc.ICMPMatch{Type: 3, Code: u8(1)}}, // not (type 3 and code 1): two rules
		{Action: calc.RuleDeny, IPVersion: 6, Invalid: "calc could not interpret it"},         // fail closed, IPv6 only
		{Action: calc.RuleAllow, SrcNets: []netip.Prefix{pfx("fd5c:2::/64")}, IPVersion: 6},
	}
	return []calc.Update{
		ipset("s:a", "10.65.0.0/24", "10.65.2.7/32", "fd5c::7/128"),
		ipset("s:b", "10.65.3.0/24"),
		namedPortSet("n:http", 6, 8080, "10.65.0.10/32", "fd5c::10/128"),
		namedPortSet("n:dns", 17, 53, "10.65.0.11/32"),
		policy(id, in, nil),
		wep("w1", "cali11111111111", []string{"10.65.0.1/32"}, withV6("fd5c::1/128"), withTiers(tier("default", ids(id), nil))),
	}
}

// hostEndpoints: eth0 by name with normal, applyOnForward, preDNAT and doNotTrack policies; a
// HEP found by its expected IP; a "*" HEP with a profile only.
func hostEndpoints() []calc.Update {
	norm, fwd, pre, untr := gnpID("host-ssh"), gnpID("fwd"), gnpID("pre"), gnpID("untracked")
	return []calc.Update{
		ipset("s:admin", "198.18.5.0/24"),
		policy(norm, []calc.Rule{{Action: calc.RuleAllow, Protocol: 6, DstPorts: ports(22), SrcIPSetIDs: []string{"s:admin"}}}, []calc.Rule{allow()}),
		policy(fwd, []calc.Rule{{Action: calc.RuleDeny, Protocol: 6, DstPorts: ports(25)}}, nil),
		policy(pre, []calc.Rule{{Action: calc.RuleDeny, SrcNets: []netip.Prefix{pfx("198.18.66.0/24")}}}, nil),
		policy(untr, []calc.Rule{{Action: calc.RuleAllow, Protocol: 17, DstPorts: ports(123)}}, []calc.Rule{{Action: calc.RuleAllow, Protocol: 17, SrcPorts: ports(123)}}),
		profile("hostprof", []calc.Rule{allow()}, []calc.Rule{allow()}),
		calc.HostEndpointUpdate{Endpoint: &calc.HostEndpoint{Name: "host1-eth0", InterfaceName: "eth0",
			Tiers:          []calc.TierInfo{tier("default", ids(norm), ids(norm))},
			ForwardTiers:   []calc.TierInfo{tier("default", ids(fwd), nil)},
			PreDNATTiers:   []calc.TierInfo{tier("default", ids(pre), nil)},
			UntrackedTiers: []calc.TierInfo{tier("default", ids(untr), ids(untr))},
		}},
		calc.HostEndpointUpdate{Endpoint: &calc.HostEndpoint{Name: "host1-byip", ExpectedIPv4Addrs: []netip.Addr{addr("198.18.1.1")}}},
		calc.HostEndpointUpdate{Endpoint: &calc.HostEndpoint{Name: "host1-all", InterfaceName: "*", ProfileIDs: []string{"hostprof"}}},
	}
}

// natAndFloatingIPs: NAT outgoing for both families (IPv4 SNAT to a fixed address), a pool
// without NAT, and a workload with a floating IP.
func natAndFloatingIPs() []calc.Update {
	w := wep("w1", "cali11111111111", []string{"10.65.0.1/32"}, withProfiles("p1"), withV6("fd5c::1/128"))
	w.Endpoint.IPv4NAT = []calc.NATInfo{{ExtIP: addr("198.18.100.1"), IntIP: addr("10.65.0.1")}}
	return []calc.Update{
		profile("p1", []calc.Rule{allow()}, []calc.Rule{allow()}),
		calc.IPPoolUpdate{Pool: &calc.IPPool{Name: "p4", CIDR: pfx("10.65.0.0/16"), NATOutgoing: true}},
		calc.IPPoolUpdate{Pool: &calc.IPPool{Name: "p4b", CIDR: pfx("10.66.0.0/16")}},
		calc.IPPoolUpdate{Pool: &calc.IPPool{Name: "p6", CIDR: pfx("fd5c::/48"), NATOutgoing: true}},
		w,
	}
}

// openStack: a VM (orchestrator openstack) on a tap interface with a floating IP and a
// spoofing exception.
func openStack() []calc.Update {
	w := wep("vm1", "tap12345678-ab", []string{"10.65.0.2/32"}, withTiers(tier("default", ids(gnpID("ossg.default.sg1")), ids(gnpID("ossg.default.sg1")))))
	w.ID.OrchestratorID = "openstack"
	w.Endpoint.MAC = "00:11:22:33:44:55"
	w.Endpoint.AllowSpoofedSourcePrefixes = []netip.Prefix{pfx("10.65.9.0/24")}
	w.Endpoint.IPv4NAT = []calc.NATInfo{{ExtIP: addr("198.18.100.2"), IntIP: addr("10.65.0.2")}}
	return []calc.Update{
		policy(gnpID("ossg.default.sg1"), []calc.Rule{{Action: calc.RuleAllow, Protocol: 6, DstPorts: ports(22)}}, []calc.Rule{allow()}),
		w,
	}
}

// gatedEndpoints: with Project Calico's defaults (WorkloadSourceSpoofing Disabled, FloatingIPs
// Disabled) a workload asking for a spoofing exception is treated as missing, and the floating
// IP of a non-OpenStack workload is not programmed, while an OpenStack workload's is.
func gatedEndpoints() []calc.Update {
	spoofer := wep("spoofer", "cali22222222222", []string{"10.65.0.2/32"}, withProfiles("p1"))
	spoofer.Endpoint.AllowSpoofedSourcePrefixes = []netip.Prefix{pfx("10.65.9.0/24")}
	vm := wep("vm1", "tap12345678-ab", []string{"10.65.0.3/32"}, withProfiles("p1"))
	vm.ID.OrchestratorID = "openstack"
	vm.Endpoint.IPv4NAT = []calc.NATInfo{{ExtIP: addr("198.18.100.3"), IntIP: addr("10.65.0.3")}}
	return append(natAndFloatingIPs(), spoofer, vm)
}

// natOutgoingVXLAN: vxlanHosts with NAT outgoing on the VXLAN pool.
func natOutgoingVXLAN() []calc.Update {
	return append(vxlanHosts(), calc.IPPoolUpdate{Pool: &calc.IPPool{Name: "vx", CIDR: pfx("10.65.0.0/16"), VXLANMode: "CrossSubnet", NATOutgoing: true}})
}

// vxlanHosts: a VXLAN pool, this host's tunnel address, two remote VTEPs and their blocks.
func vxlanHosts() []calc.Update {
	route := func(dst, node, nodeIP string, typ calc.RouteType, mode string, same bool) calc.Update {
		return calc.RouteUpdate{Route: &calc.Route{Dst: pfx(dst), Type: typ, DstNode: node, DstNodeIP: addr(nodeIP),
			PoolName: "vx", PoolType: calc.PoolVXLAN, VXLANMode: mode, SameSubnet: same}}
	}
	return []calc.Update{
		calc.ConfigUpdate{HostIPv4: pfx("198.18.0.1/24"), VXLANTunnelAddrV4: addr("10.65.0.1"), VXLANTunnelMAC: "66:00:00:00:00:01"},
		calc.IPPoolUpdate{Pool: &calc.IPPool{Name: "vx", CIDR: pfx("10.65.0.0/16"), VXLANMode: "CrossSubnet"}},
		calc.VTEPUpdate{VTEP: &calc.VTEP{Node: "host2", MAC: "66:00:00:00:00:02", TunnelAddr: addr("10.65.1.1"), ParentDeviceAddr: addr("198.18.1.2")}},
		calc.VTEPUpdate{VTEP: &calc.VTEP{Node: "host3", MAC: "66:00:00:00:00:03", TunnelAddr: addr("10.65.2.1"), ParentDeviceAddr: addr("198.18.0.3")}},
		route("10.65.0.0/26", "host1", "198.18.0.1", calc.RouteLocalWorkload, "CrossSubnet", true),
		route("10.65.1.0/26", "host2", "198.18.1.2", calc.RouteRemoteWorkload, "CrossSubnet", false),
		route("10.65.2.0/26", "host3", "198.18.0.3", calc.RouteRemoteWorkload, "CrossSubnet", true),
		route("10.65.3.0/26", "host4", "198.18.1.4", calc.RouteRemoteWorkload, "CrossSubnet", false),
	}
}

// policySel is a policy with a selector (policies with the same selector form groups).
func policySel(id calc.PolicyID, sel string, in, out []calc.Rule) calc.ActivePolicyUpdate {
	u := policy(id, in, out)
	u.Policy.Selector = sel
	return u
}
