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
func withProfiles(p ...string) wepOpt   { return func(w *calc.WorkloadEndpoint) { w.ProfileIDs = p } }
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
