package api

import (
	"errors"
	"strings"
	"testing"
)

// okSelector accepts everything except the literal "bad(" (api does not import the selector package).
var testValidator = Validator{CheckSelector: func(s string) error {
	if strings.Contains(s, "bad(") {
		return errors.New("unexpected '('")
	}
	return nil
}}

func pool(cidr string, block int) *IPPool {
	p := &IPPool{ObjectMeta: ObjectMeta{Name: "p"}, Spec: IPPoolSpec{CIDR: cidr, BlockSize: block}}
	SetDefaults(p)
	return p
}

func gnp(spec GlobalNetworkPolicySpec) *GlobalNetworkPolicy {
	return &GlobalNetworkPolicy{ObjectMeta: ObjectMeta{Name: "pol"}, Spec: spec}
}

func rule(mod func(*Rule)) []Rule {
	r := Rule{Action: ActionAllow}
	mod(&r)
	return []Rule{r}
}

func TestValidationMessages(t *testing.T) {
	tcp := ProtocolFromString("TCP")
	icmp := ProtocolFromString("ICMP")
	cases := []struct {
		name string
		obj  Resource
		want string // exact Error()
	}{
		{"bad CIDR", pool("10.65.0/16", 26), `invalid IPPool "p": spec.cidr: invalid CIDR "10.65.0/16"`},
		{"host bits", pool("10.65.1.0/16", 26), `invalid IPPool "p": spec.cidr: "10.65.1.0/16" is not a network address (did you mean 10.65.0.0/16?)`},
		{"v4 block too small", pool("10.65.0.0/16", 19), `invalid IPPool "p": spec.blockSize: block size 19 must be between 20 and 32 for an IPv4 pool`},
		{"v6 block", pool("fd5c::/48", 112), `invalid IPPool "p": spec.blockSize: block size 112 must be between 116 and 128 for an IPv6 pool`},
		{"block larger than pool", pool("10.65.0.0/28", 26), `invalid IPPool "p": spec.blockSize: block size 26 is larger than the pool (/28)`},
		{"vxlan mode", func() Resource { p := pool("10.65.0.0/16", 26); p.Spec.VXLANMode = "Sometimes"; return p }(),
			`invalid IPPool "p": spec.vxlanMode: "Sometimes" is not one of Never, Always, CrossSubnet`},
		{"pool selector", func() Resource { p := pool("10.65.0.0/16", 26); p.Spec.NodeSelector = "bad("; return p }(),
			`invalid IPPool "p": spec.nodeSelector: invalid selector "bad(": unexpected '('`},
		{"name", &Tier{ObjectMeta: ObjectMeta{Name: "Bad_Name"}}, `invalid Tier "Bad_Name": metadata.name: name "Bad_Name" must consist of lower case alphanumeric characters, '-' or '.', and start and end with an alphanumeric character`},
		{"missing name", &Profile{}, `invalid Profile "": metadata.name: name is required`},
		{"namespace required", &NetworkPolicy{ObjectMeta: ObjectMeta{Name: "x"}}, `invalid NetworkPolicy "x": metadata.namespace: namespace is required for NetworkPolicy`},
		{"tier prefix", gnp(GlobalNetworkPolicySpec{Tier: "security"}), `invalid GlobalNetworkPolicy "pol": metadata.name: policy name "pol" must start with the tier prefix "security."`},
		{"action", gnp(GlobalNetworkPolicySpec{Ingress: []Rule{{Action: "Permit"}}}), `invalid GlobalNetworkPolicy "pol": spec.ingress[0].action: "Permit" is not one of Allow, Deny, Log, Pass`},
		{"protocol name", gnp(GlobalNetworkPolicySpec{Ingress: rule(func(r *Rule) { p := ProtocolFromString("TCPX"); r.Protocol = &p })}),
			`invalid GlobalNetworkPolicy "pol": spec.ingress[0].protocol: unknown protocol "TCPX" (use TCP, UDP, ICMP, ICMPv6, SCTP, UDPLite or a number 1-255)`},
		{"protocol zero", gnp(GlobalNetworkPolicySpec{Ingress: rule(func(r *Rule) { p := ProtocolFromInt(0); r.Protocol = &p })}),
			`invalid GlobalNetworkPolicy "pol": spec.ingress[0].protocol: protocol number must be between 1 and 255`},
		{"ports need protocol", gnp(GlobalNetworkPolicySpec{Ingress: rule(func(r *Rule) { r.Destination.Ports = []Port{SinglePort(80)} })}),
			`invalid GlobalNetworkPolicy "pol": spec.ingress[0].destination.ports: ports are only allowed with protocol TCP, UDP, SCTP or UDPLite`},
		{"port range", gnp(GlobalNetworkPolicySpec{Ingress: rule(func(r *Rule) { r.Protocol = &tcp; r.Destination.Ports = []Port{{MinPort: 90, MaxPort: 80}} })}),
			`invalid GlobalNetworkPolicy "pol": spec.ingress[0].destination.ports[0]: port range 90:80 has min greater than max`},
		{"named port", gnp(GlobalNetworkPolicySpec{Ingress: rule(func(r *Rule) { r.Protocol = &tcp; r.Destination.Ports = []Port{NamedPort("-web")} })}),
			`invalid GlobalNetworkPolicy "pol": spec.ingress[0].destination.ports[0]: invalid named port "-web"`},
		{"icmp without protocol", gnp(GlobalNetworkPolicySpec{Ingress: rule(func(r *Rule) { r.ICMP = &ICMPFields{Type: Int(8)} })}),
			`invalid GlobalNetworkPolicy "pol": spec.ingress[0].icmp: ICMP fields require protocol ICMP or ICMPv6`},
		{"icmp type", gnp(GlobalNetworkPolicySpec{Ingress: rule(func(r *Rule) { r.Protocol = &icmp; r.ICMP = &ICMPFields{Type: Int(255)} })}),
			`invalid GlobalNetworkPolicy "pol": spec.ingress[0].icmp.type: ICMP type 255 must be between 0 and 254`},
		{"icmp code without type", gnp(GlobalNetworkPolicySpec{Ingress: rule(func(r *Rule) { r.Protocol = &icmp; r.ICMP = &ICMPFields{Code: Int(0)} })}),
			`invalid GlobalNetworkPolicy "pol": spec.ingress[0].icmp.code: ICMP code requires a type`},
		{"icmp version", gnp(GlobalNetworkPolicySpec{Ingress: rule(func(r *Rule) { r.Protocol = &icmp; r.IPVersion = Int(6); r.ICMP = &ICMPFields{Type: Int(8)} })}),
			`invalid GlobalNetworkPolicy "pol": spec.ingress[0].icmp: protocol ICMP does not match ipVersion 6`},
		{"nets version", gnp(GlobalNetworkPolicySpec{Ingress: rule(func(r *Rule) { r.IPVersion = Int(4); r.Source.Nets = []string{"fd5c::/64"} })}),
			`invalid GlobalNetworkPolicy "pol": spec.ingress[0].source.nets[0]: "fd5c::/64" is not an IPv4 network (ipVersion is 4)`},
		{"bad net", gnp(GlobalNetworkPolicySpec{Egress: rule(func(r *Rule) { r.Destination.NotNets = []string{"10.0.0.0/33"} })}),
			`invalid GlobalNetworkPolicy "pol": spec.egress[0].destination.notNets[0]: invalid CIDR "10.0.0.0/33"`},
		{"rule selector", gnp(GlobalNetworkPolicySpec{Egress: rule(func(r *Rule) { r.Destination.Selector = "bad(" })}),
			`invalid GlobalNetworkPolicy "pol": spec.egress[0].destination.selector: invalid selector "bad(": unexpected '('`},
		{"ipVersion", gnp(GlobalNetworkPolicySpec{Egress: rule(func(r *Rule) { r.IPVersion = Int(5) })}),
			`invalid GlobalNetworkPolicy "pol": spec.egress[0].ipVersion: ipVersion must be 4 or 6, not 5`},
		{"types", gnp(GlobalNetworkPolicySpec{Types: []string{"Inbound"}}), `invalid GlobalNetworkPolicy "pol": spec.types[0]: "Inbound" is not one of Ingress, Egress`},
		{"preDNAT egress", gnp(GlobalNetworkPolicySpec{PreDNAT: true, ApplyOnForward: true, Egress: []Rule{{Action: ActionAllow}}}),
			`invalid GlobalNetworkPolicy "pol": spec.egress: a preDNAT policy cannot have egress rules`},
		{"preDNAT forward", gnp(GlobalNetworkPolicySpec{PreDNAT: true}), `invalid GlobalNetworkPolicy "pol": spec.applyOnForward: applyOnForward must be true when preDNAT or doNotTrack is true`},
		{"AS number peer", &BGPPeer{ObjectMeta: ObjectMeta{Name: "p"}, Spec: BGPPeerSpec{PeerIP: "198.18.0.1"}}, `invalid BGPPeer "p": spec.asNumber: asNumber is required with peerIP`},
		{"peer IP", &BGPPeer{ObjectMeta: ObjectMeta{Name: "p"}, Spec: BGPPeerSpec{PeerIP: "198.18.0.1:99999", ASNumber: asn(1)}}, `invalid BGPPeer "p": spec.peerIP: invalid peer IP "198.18.0.1:99999"`},
		{"community", &BGPConfiguration{ObjectMeta: ObjectMeta{Name: "default"}, Spec: BGPConfigurationSpec{Communities: []Community{{Name: "c", Value: "70000:1"}}}},
			`invalid BGPConfiguration "default": spec.communities[0].value: community "70000:1" has a part out of range`},
		{"filter version", &BGPFilter{ObjectMeta: ObjectMeta{Name: "f"}, Spec: BGPFilterSpec{ExportV6: []BGPFilterRule{{Action: "Accept", MatchOperator: "In", CIDR: "10.0.0.0/8"}}}},
			`invalid BGPFilter "f": spec.exportV6[0].cidr[0]: "10.0.0.0/8" is not an IPv6 network (ipVersion is 6)`},
		{"node address", &Node{ObjectMeta: ObjectMeta{Name: "n"}, Spec: NodeSpec{BGP: &NodeBGPSpec{IPv4Address: "fd00::1/64"}}},
			`invalid Node "n": spec.bgp.ipv4Address[0]: "fd00::1/64" is not an IPv4 network (ipVersion is 4)`},
		{"felix action", &FelixConfiguration{ObjectMeta: ObjectMeta{Name: "default"}, Spec: FelixConfigurationSpec{DefaultEndpointToHostAction: "Reject"}},
			`invalid FelixConfiguration "default": spec.defaultEndpointToHostAction: "Reject" is not one of Drop, Return, Accept`},
		{"felix name", &FelixConfiguration{ObjectMeta: ObjectMeta{Name: "host-a"}}, `invalid FelixConfiguration "host-a": metadata.name: name "host-a" must be "default" or "node.<nodename>"`},
		{"hep", &HostEndpoint{ObjectMeta: ObjectMeta{Name: "h"}, Spec: HostEndpointSpec{Node: "n"}}, `invalid HostEndpoint "h": spec.interfaceName: interfaceName or expectedIPs is required`},
		{"wep nets", &WorkloadEndpoint{ObjectMeta: ObjectMeta{Name: "w", Namespace: "default"}, Spec: WorkloadEndpointSpec{Node: "n", IPNetworks: []string{"10.65.0.300/32"}}},
			`invalid WorkloadEndpoint "w": spec.ipNetworks[0]: invalid CIDR "10.65.0.300/32"`},
		{"label", &GlobalNetworkSet{ObjectMeta: ObjectMeta{Name: "s", Labels: map[string]string{"a b": "x"}}}, `invalid GlobalNetworkSet "s": metadata.labels: invalid label key "a b"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := testValidator.Validate(c.obj)
			if err == nil {
				t.Fatalf("no error; want %s", c.want)
			}
			if err.Error() != c.want {
				t.Errorf("got  %s\nwant %s", err, c.want)
			}
		})
	}
}

func asn(n uint32) *ASNumber { a := ASNumber(n); return &a }

func TestValidObjectsPass(t *testing.T) {
	tcp := ProtocolFromInt(6)
	for _, r := range []Resource{
		pool("10.65.0.0/16", 26), pool("fd5c:1:2::/48", 122),
		gnp(GlobalNetworkPolicySpec{Ingress: rule(func(r *Rule) { r.Protocol = &tcp; r.Destination.Ports = []Port{SinglePort(22), NamedPort("http-alt")} })}),
		&BGPPeer{ObjectMeta: ObjectMeta{Name: "p"}, Spec: BGPPeerSpec{PeerIP: "[fd00::1]:1179", ASNumber: asn(64512)}},
	} {
		if err := testValidator.Validate(r); err != nil {
			t.Errorf("%v", err)
		}
	}
}

func TestPoolOverlap(t *testing.T) {
	a, b, c := pool("10.65.0.0/16", 26), pool("10.65.128.0/17", 26), pool("10.66.0.0/16", 26)
	a.Name, b.Name, c.Name = "a", "b", "c"
	err := PoolOverlapError(b, []*IPPool{a, c})
	want := `invalid IPPool "b": spec.cidr: 10.65.128.0/17 overlaps with enabled IPPool "a" (10.65.0.0/16)`
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
	a.Spec.Disabled = true
	if err := PoolOverlapError(b, []*IPPool{a, c}); err != nil {
		t.Errorf("disabled pools may overlap: %v", err)
	}
}
