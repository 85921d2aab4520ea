package api

import (
	"encoding/json"
	"errors"
	"fmt"
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

func disabledPool(cidr string, block int) *IPPool {
	p := pool(cidr, block)
	p.Spec.Disabled = true
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
		{"bad CIDR", pool("10.65.0/16", 26), `invalid IPPool "p": spec.cidr: IPPool CIDR must be a valid subnet (10.65.0/16)`},
		{"host bits", pool("10.65.1.0/16", 26), `invalid IPPool "p": spec.cidr: IPPool CIDR is not strictly masked (10.65.0.0/16)`},
		{"v4 block too small", pool("10.65.0.0/16", 19), `invalid IPPool "p": spec.blockSize: block size 19 must be between 20 and 32 for an IPv4 pool`},
		{"v6 block", pool("fd5c::/48", 112), `invalid IPPool "p": spec.blockSize: block size 112 must be between 116 and 128 for an IPv6 pool`},
		{"block larger than pool", pool("10.65.0.0/28", 26), `invalid IPPool "p": spec.blockSize: IP pool size is too small for use with Calico IPAM. It must be equal to or greater than the block size.`},
		{"vxlan mode", func() Resource { p := pool("10.65.0.0/16", 26); p.Spec.VXLANMode = "Sometimes"; return p }(),
			`invalid IPPool "p": spec.vxlanMode: unsupported value "Sometimes": supported values: "Never", "Always", "CrossSubnet"`},
		{"pool selector", func() Resource { p := pool("10.65.0.0/16", 26); p.Spec.NodeSelector = "bad("; return p }(),
			`invalid IPPool "p": spec.nodeSelector: invalid selector "bad(": unexpected '('`},
		{"name", &Tier{ObjectMeta: ObjectMeta{Name: "Bad_Name"}}, `invalid Tier "Bad_Name": metadata.name: name "Bad_Name" must consist of lower case alphanumeric characters, '-' or '.', and start and end with an alphanumeric character`},
		{"missing name", &Profile{}, `invalid Profile "": metadata.name: name is required`},
		{"namespace required", &NetworkPolicy{ObjectMeta: ObjectMeta{Name: "x"}}, `invalid NetworkPolicy "x": metadata.namespace: namespace is required for NetworkPolicy`},
		{"action", gnp(GlobalNetworkPolicySpec{Ingress: []Rule{{Action: "Permit"}}}), `invalid GlobalNetworkPolicy "pol": spec.ingress[0].action: unsupported value "Permit": supported values: "Allow", "Deny", "Log", "Pass"`},
		{"protocol name", gnp(GlobalNetworkPolicySpec{Ingress: rule(func(r *Rule) { p := ProtocolFromString("TCPX"); r.Protocol = &p })}),
			`invalid GlobalNetworkPolicy "pol": spec.ingress[0].protocol: unknown protocol "TCPX" (use TCP, UDP, ICMP, ICMPv6, SCTP, UDPLite or a number 1-255)`},
		{"protocol zero", gnp(GlobalNetworkPolicySpec{Ingress: rule(func(r *Rule) { p := ProtocolFromInt(0); r.Protocol = &p })}),
			`invalid GlobalNetworkPolicy "pol": spec.ingress[0].protocol: protocol number must be between 1 and 255`},
		{"ports need protocol", gnp(GlobalNetworkPolicySpec{Ingress: rule(func(r *Rule) { r.Destination.Ports = []Port{SinglePort(80)} })}),
			`invalid GlobalNetworkPolicy "pol": spec.ingress[0].destination.ports: ports are only allowed with protocol TCP, UDP, SCTP or UDPLite`},
		{"port range", gnp(GlobalNetworkPolicySpec{Ingress: rule(func(r *Rule) { r.Protocol = &tcp; r.Destination.Ports = []Port{{MinPort: 90, MaxPort: 80}} })}),
			`invalid GlobalNetworkPolicy "pol": spec.ingress[0].destination.ports[0]: port range invalid (80)`},
		{"named port", gnp(GlobalNetworkPolicySpec{Ingress: rule(func(r *Rule) { r.Protocol = &tcp; r.Destination.Ports = []Port{NamedPort("-web")} })}),
			`invalid GlobalNetworkPolicy "pol": spec.ingress[0].destination.ports[0]: invalid named port "-web"`},
		{"icmp without protocol", gnp(GlobalNetworkPolicySpec{Ingress: rule(func(r *Rule) { r.ICMP = &ICMPFields{Type: Int(8)} })}),
			`invalid GlobalNetworkPolicy "pol": spec.ingress[0].icmp: ICMP fields require protocol ICMP or ICMPv6`},
		{"icmp type", gnp(GlobalNetworkPolicySpec{Ingress: rule(func(r *Rule) { r.Protocol = &icmp; r.ICMP = &ICMPFields{Type: Int(255)} })}),
			`invalid GlobalNetworkPolicy "pol": spec.ingress[0].icmp.type: ICMP type 255 must be between 0 and 254`},
		{"icmp code without type", gnp(GlobalNetworkPolicySpec{Ingress: rule(func(r *Rule) { r.Protocol = &icmp; r.ICMP = &ICMPFields{Code: Int(0)} })}),
			`invalid GlobalNetworkPolicy "pol": spec.ingress[0].icmp.code: ICMP code requires a type`},
		{"bad net", gnp(GlobalNetworkPolicySpec{Egress: rule(func(r *Rule) { r.Destination.NotNets = []string{"10.0.0.0/33"} })}),
			`invalid GlobalNetworkPolicy "pol": spec.egress[0].destination.notNets[0]: invalid CIDR "10.0.0.0/33"`},
		{"rule selector", gnp(GlobalNetworkPolicySpec{Egress: rule(func(r *Rule) { r.Destination.Selector = "bad(" })}),
			`invalid GlobalNetworkPolicy "pol": spec.egress[0].destination.selector: invalid selector "bad(": unexpected '('`},
		{"ipVersion", gnp(GlobalNetworkPolicySpec{Egress: rule(func(r *Rule) { r.IPVersion = Int(5) })}),
			`invalid GlobalNetworkPolicy "pol": spec.egress[0].ipVersion: ipVersion must be 4 or 6, not 5`},
		{"types", gnp(GlobalNetworkPolicySpec{Types: []string{"Inbound"}}), `invalid GlobalNetworkPolicy "pol": spec.types[0]: unsupported value "Inbound": supported values: "Ingress", "Egress"`},
		{"preDNAT egress", gnp(GlobalNetworkPolicySpec{PreDNAT: true, ApplyOnForward: true, Egress: []Rule{{Action: ActionAllow}}}),
			`invalid GlobalNetworkPolicy "pol": spec.egress: a preDNAT policy cannot have egress rules`},
		{"preDNAT forward", gnp(GlobalNetworkPolicySpec{PreDNAT: true}), `invalid GlobalNetworkPolicy "pol": spec.applyOnForward: applyOnForward must be true when preDNAT or doNotTrack is true`},
		{"peer node name", &BGPPeer{ObjectMeta: ObjectMeta{Name: "p"}, Spec: BGPPeerSpec{Node: "node 2", PeerIP: "198.18.0.1"}}, `invalid BGPPeer "p": spec.node: invalid node name "node 2"`},
		{"peer IP", &BGPPeer{ObjectMeta: ObjectMeta{Name: "p"}, Spec: BGPPeerSpec{PeerIP: "198.18.0.1:99999", ASNumber: asn(1)}}, `invalid BGPPeer "p": spec.peerIP: invalid peer IP "198.18.0.1:99999"`},
		{"community", &BGPConfiguration{ObjectMeta: ObjectMeta{Name: "default"}, Spec: BGPConfigurationSpec{Communities: []Community{{Name: "c", Value: "70000:1"}}}},
			`invalid BGPConfiguration "default": spec.communities[0].value: community "70000:1" has a part out of range`},
		{"filter version", &BGPFilter{ObjectMeta: ObjectMeta{Name: "f"}, Spec: BGPFilterSpec{ExportV6: []BGPFilterRule{{Action: "Accept", MatchOperator: "In", CIDR: "10.0.0.0/8"}}}},
			`invalid BGPFilter "f": spec.exportV6[0].cidr[0]: "10.0.0.0/8" is not an IPv6 network (ipVersion is 6)`},
		{"node address", &Node{ObjectMeta: ObjectMeta{Name: "n"}, Spec: NodeSpec{BGP: &NodeBGPSpec{IPv4Address: "fd00::1/64"}}},
			`invalid Node "n": spec.bgp.ipv4Address[0]: "fd00::1/64" is not an IPv4 network (ipVersion is 4)`},
		{"felix action", &FelixConfiguration{ObjectMeta: ObjectMeta{Name: "default"}, Spec: FelixConfigurationSpec{DefaultEndpointToHostAction: "Reject"}},
			`invalid FelixConfiguration "default": spec.defaultEndpointToHostAction: unsupported value "Reject": supported values: "Drop", "Return", "Accept"`},
		{"hep", &HostEndpoint{ObjectMeta: ObjectMeta{Name: "h"}, Spec: HostEndpointSpec{Node: "n"}}, `invalid HostEndpoint "h": spec.interfaceName: interfaceName or expectedIPs is required`},
		{"wep profile names", &WorkloadEndpoint{ObjectMeta: ObjectMeta{Name: "w", Namespace: "default"}, Spec: WorkloadEndpointSpec{Node: "n", Pod: "Web_0", Profiles: []string{"ok", "My_Net"}}},
			`invalid WorkloadEndpoint "w": spec.profiles[1]: profile name "My_Net" must consist of lower case alphanumeric characters, '-' or '.'`},
		{"wep nets", &WorkloadEndpoint{ObjectMeta: ObjectMeta{Name: "w", Namespace: "default"}, Spec: WorkloadEndpointSpec{Node: "n", IPNetworks: []string{"10.65.0.300/32"}}},
			`invalid WorkloadEndpoint "w": spec.ipNetworks[0]: invalid CIDR "10.65.0.300/32"`},
		{"label", &GlobalNetworkSet{ObjectMeta: ObjectMeta{Name: "s", Labels: map[string]string{"a b": "x"}}}, `invalid GlobalNetworkSet "s": metadata.labels: invalid label key "a b"`},

		// FelixConfiguration enums, ranges and formats.
		{"felix chainInsertMode", fc(`{"chainInsertMode":"Middle"}`), fcErr(`spec.chainInsertMode: unsupported value "Middle": supported values: "Insert", "Append"`)},
		{"felix iptablesBackend", fc(`{"iptablesBackend":"Nft2"}`), fcErr(`spec.iptablesBackend: unsupported value "Nft2": supported values: "Legacy", "NFT", "Auto"`)},
		{"felix iptablesFilterAllowAction", fc(`{"iptablesFilterAllowAction":"Drop"}`), fcErr(`spec.iptablesFilterAllowAction: unsupported value "Drop": supported values: "Accept", "Return"`)},
		{"felix iptablesMangleAllowAction", fc(`{"iptablesMangleAllowAction":"Drop"}`), fcErr(`spec.iptablesMangleAllowAction: unsupported value "Drop": supported values: "Accept", "Return"`)},
		{"felix iptablesFilterDenyAction", fc(`{"iptablesFilterDenyAction":"Accept"}`), fcErr(`spec.iptablesFilterDenyAction: unsupported value "Accept": supported values: "Drop", "Reject"`)},
		{"felix nftablesFilterAllowAction", fc(`{"nftablesFilterAllowAction":"Drop"}`), fcErr(`spec.nftablesFilterAllowAction: unsupported value "Drop": supported values: "Accept", "Return"`)},
		{"felix nftablesMangleAllowAction", fc(`{"nftablesMangleAllowAction":"Drop"}`), fcErr(`spec.nftablesMangleAllowAction: unsupported value "Drop": supported values: "Accept", "Return"`)},
		{"felix nftablesFilterDenyAction", fc(`{"nftablesFilterDenyAction":"Accept"}`), fcErr(`spec.nftablesFilterDenyAction: unsupported value "Accept": supported values: "Drop", "Reject"`)},
		{"felix routeSource", fc(`{"routeSource":"BGP"}`), fcErr(`spec.routeSource: unsupported value "BGP": supported values: "WorkloadIPs", "CalicoIPAM"`)},
		{"felix deviceRouteProtocol", fc(`{"deviceRouteProtocol":256}`), fcErr(`spec.deviceRouteProtocol: 256 is out of range 1-255`)},
		{"felix deviceRouteSourceAddress v6", fc(`{"deviceRouteSourceAddress":"fd00::1"}`), fcErr(`spec.deviceRouteSourceAddress: "fd00::1" must be a valid IPv4 address`)},
		{"felix deviceRouteSourceAddress junk", fc(`{"deviceRouteSourceAddress":"not-an-ip"}`), fcErr(`spec.deviceRouteSourceAddress: "not-an-ip" must be a valid IPv4 address`)},
		{"felix deviceRouteSourceAddressIPv6 v4", fc(`{"deviceRouteSourceAddressIPv6":"10.0.0.1"}`), fcErr(`spec.deviceRouteSourceAddressIPv6: "10.0.0.1" must be a valid IPv6 address`)},
		{"felix deviceRouteSourceAddressIPv6 junk", fc(`{"deviceRouteSourceAddressIPv6":"not-an-ip"}`), fcErr(`spec.deviceRouteSourceAddressIPv6: "not-an-ip" must be a valid IPv6 address`)},
		{"felix bpfLogLevel", fc(`{"bpfLogLevel":"Trace"}`), fcErr(`spec.bpfLogLevel: unsupported value "Trace": supported values: "Off", "Info", "Debug"`)},
		{"felix bpfExternalServiceMode", fc(`{"bpfExternalServiceMode":"Direct"}`), fcErr(`spec.bpfExternalServiceMode: unsupported value "Direct": supported values: "Tunnel", "DSR"`)},
		{"felix ipForwarding", fc(`{"ipForwarding":"On"}`), fcErr(`spec.ipForwarding: unsupported value "On": supported values: "Enabled", "Disabled"`)},
		{"felix floatingIPs", fc(`{"floatingIPs":"On"}`), fcErr(`spec.floatingIPs: unsupported value "On": supported values: "Enabled", "Disabled"`)},
		{"felix programClusterRoutes", fc(`{"programClusterRoutes":"On"}`), fcErr(`spec.programClusterRoutes: unsupported value "On": supported values: "Enabled", "Disabled", "EnabledIPIPOnly", "EnabledNoEncapOnly"`)},
		{"felix bpfEnforceRPF", fc(`{"bpfEnforceRPF":"Hard"}`), fcErr(`spec.bpfEnforceRPF: unsupported value "Hard": supported values: "Disabled", "Strict", "Loose"`)},
		{"felix bpfMapSizeConntrackScaling", fc(`{"bpfMapSizeConntrackScaling":"Triple"}`), fcErr(`spec.bpfMapSizeConntrackScaling: unsupported value "Triple": supported values: "Disabled", "DoubleIfFull"`)},
		{"felix bpfRedirectToPeer", fc(`{"bpfRedirectToPeer":"Always"}`), fcErr(`spec.bpfRedirectToPeer: unsupported value "Always": supported values: "Enabled", "Disabled", "L2Only"`)},
		{"felix flowLogsLocalReporter", fc(`{"flowLogsLocalReporter":"On"}`), fcErr(`spec.flowLogsLocalReporter: unsupported value "On": supported values: "Enabled", "Disabled"`)},
		{"felix flowLogsPolicyEvaluationMode", fc(`{"flowLogsPolicyEvaluationMode":"Sometimes"}`), fcErr(`spec.flowLogsPolicyEvaluationMode: unsupported value "Sometimes": supported values: "None", "Continuous"`)},
		{"felix istioAmbientMode", fc(`{"istioAmbientMode":"On"}`), fcErr(`spec.istioAmbientMode: unsupported value "On": supported values: "Enabled", "Disabled"`)},
		{"felix serviceLoopPrevention", fc(`{"serviceLoopPrevention":"Ignore"}`), fcErr(`spec.serviceLoopPrevention: unsupported value "Ignore": supported values: "Drop", "Reject", "Disabled"`)},
		{"felix workloadSourceSpoofing", fc(`{"workloadSourceSpoofing":"All"}`), fcErr(`spec.workloadSourceSpoofing: unsupported value "All": supported values: "Disabled", "Any"`)},
		{"felix natOutgoingExclusions", fc(`{"natOutgoingExclusions":"None"}`), fcErr(`spec.natOutgoingExclusions: unsupported value "None": supported values: "IPPoolsOnly", "IPPoolsAndHostIPs"`)},
		{"felix awsSrcDstCheck", fc(`{"awsSrcDstCheck":"Off"}`), fcErr(`spec.awsSrcDstCheck: unsupported value "Off": supported values: "DoNothing", "Enable", "Disable"`)},
		{"felix windowsManageFirewallRules", fc(`{"windowsManageFirewallRules":"On"}`), fcErr(`spec.windowsManageFirewallRules: unsupported value "On": supported values: "Enabled", "Disabled"`)},
		{"felix proxyARPEnabled", fc(`{"proxyARPEnabled":"On"}`), fcErr(`spec.proxyARPEnabled: unsupported value "On": supported values: "Enabled", "Disabled"`)},
		{"felix prometheusMetricsClientAuth", fc(`{"prometheusMetricsClientAuth":"Any"}`),
			fcErr(`spec.prometheusMetricsClientAuth: unsupported value "Any": supported values: "RequireAndVerifyClientCert", "RequireAnyClientCert", "VerifyClientCertIfGiven", "NoClientCert"`)},
		{"felix bpfConntrackLogLevel", fc(`{"bpfConntrackLogLevel":"Info"}`), fcErr(`spec.bpfConntrackLogLevel: unsupported value "Info": supported values: "Off", "Debug"`)},
		{"felix bpfConntrackMode", fc(`{"bpfConntrackMode":"Kernel"}`), fcErr(`spec.bpfConntrackMode: unsupported value "Kernel": supported values: "Auto", "Userspace", "BPFProgram"`)},
		{"felix bpfConnectTimeLoadBalancing", fc(`{"bpfConnectTimeLoadBalancing":"UDP"}`), fcErr(`spec.bpfConnectTimeLoadBalancing: unsupported value "UDP": supported values: "TCP", "Enabled", "Disabled"`)},
		{"felix bpfHostNetworkedNATWithoutCTLB", fc(`{"bpfHostNetworkedNATWithoutCTLB":"On"}`), fcErr(`spec.bpfHostNetworkedNATWithoutCTLB: unsupported value "On": supported values: "Enabled", "Disabled"`)},
		{"felix bpfJITHardening", fc(`{"bpfJITHardening":"Off"}`), fcErr(`spec.bpfJITHardening: unsupported value "Off": supported values: "Auto", "Strict"`)},
		{"felix bpfAttachType", fc(`{"bpfAttachType":"XDP"}`), fcErr(`spec.bpfAttachType: unsupported value "XDP": supported values: "TC", "TCX"`)},
		{"felix debugPort", fc(`{"debugPort":70000}`), fcErr(`spec.debugPort: 70000 is out of range 0-65535`)},
		{"felix bpfKubeProxyHealthzPort", fc(`{"bpfKubeProxyHealthzPort":-1}`), fcErr(`spec.bpfKubeProxyHealthzPort: -1 is out of range 0-65535`)},
		{"felix wireguardListeningPort", fc(`{"wireguardListeningPort":0}`), fcErr(`spec.wireguardListeningPort: 0 is out of range 1-65535`)},
		{"felix wireguardListeningPortV6", fc(`{"wireguardListeningPortV6":65536}`), fcErr(`spec.wireguardListeningPortV6: 65536 is out of range 1-65535`)},
		{"felix wireguardRoutingRulePriority", fc(`{"wireguardRoutingRulePriority":32766}`), fcErr(`spec.wireguardRoutingRulePriority: 32766 is out of range 1-32765`)},
		{"felix bpfExtToServiceConnmark", fc(`{"bpfExtToServiceConnmark":4294967296}`), fcErr(`spec.bpfExtToServiceConnmark: 4294967296 is out of range 0-4294967295`)},
		{"felix bpfMapSizeConntrackCleanupQueue", fc(`{"bpfMapSizeConntrackCleanupQueue":0}`), fcErr(`spec.bpfMapSizeConntrackCleanupQueue: 0 is out of range 1-2147483647`)},
		{"felix bpfMaglevMaxEndpointsPerService", fc(`{"bpfMaglevMaxEndpointsPerService":3001}`), fcErr(`spec.bpfMaglevMaxEndpointsPerService: 3001 is out of range 1-3000`)},
		{"felix bpfMaglevMaxServices", fc(`{"bpfMaglevMaxServices":0}`), fcErr(`spec.bpfMaglevMaxServices: 0 is out of range 1-3000`)},
		{"felix goGCThreshold", fc(`{"goGCThreshold":-2}`), fcErr(`spec.goGCThreshold: -2 is out of range -1-2147483647`)},
		{"felix goMemoryLimitMB", fc(`{"goMemoryLimitMB":-2}`), fcErr(`spec.goMemoryLimitMB: -2 is out of range -1-2147483647`)},
		{"felix goMaxProcs", fc(`{"goMaxProcs":-2}`), fcErr(`spec.goMaxProcs: -2 is out of range -1-2147483647`)},
		{"felix logActionRateLimitBurst", fc(`{"logActionRateLimitBurst":10000}`), fcErr(`spec.logActionRateLimitBurst: 10000 is out of range 0-9999`)},
		{"felix ipv4NormalRoutePriority", fc(`{"ipv4NormalRoutePriority":0}`), fcErr(`spec.ipv4NormalRoutePriority: 0 is out of range 1-2147483646`)},
		{"felix ipv4ElevatedRoutePriority", fc(`{"ipv4ElevatedRoutePriority":2147483647}`), fcErr(`spec.ipv4ElevatedRoutePriority: 2147483647 is out of range 1-2147483646`)},
		{"felix ipv6NormalRoutePriority", fc(`{"ipv6NormalRoutePriority":0}`), fcErr(`spec.ipv6NormalRoutePriority: 0 is out of range 1-2147483646`)},
		{"felix ipv6ElevatedRoutePriority", fc(`{"ipv6ElevatedRoutePriority":0}`), fcErr(`spec.ipv6ElevatedRoutePriority: 0 is out of range 1-2147483646`)},
		{"felix natPortRange named", fc(`{"natPortRange":"http"}`), fcErr(`spec.natPortRange: "http" must be a port number or a min:max range`)},
		{"felix kubeNodePortRanges", fc(`{"kubeNodePortRanges":["30000:32767","nodeports"]}`), fcErr(`spec.kubeNodePortRanges[1]: "nodeports" must be a port number or a min:max range`)},
		{"felix route table range and ranges", fc(`{"routeTableRange":{"min":1,"max":250},"routeTableRanges":[{"min":1,"max":250}]}`),
			fcErr(`spec.routeTableRange: routeTableRange and routeTableRanges cannot both be set`)},
		{"felix routeTableRange bounds", fc(`{"routeTableRange":{"min":0,"max":250}}`), fcErr(`spec.routeTableRange: range 0-250 must be ordered and within 1-250`)},
		{"felix routeTableRanges order", fc(`{"routeTableRanges":[{"min":300,"max":260}]}`), fcErr(`spec.routeTableRanges[0]: range 300-260 must be ordered and within 1-4294967295`)},
		{"felix routeTableRanges reserved", fc(`{"routeTableRanges":[{"min":1,"max":250},{"min":250,"max":260}]}`),
			fcErr(`spec.routeTableRanges[1]: range 250-260 includes the reserved tables 253-255`)},
		{"felix featureDetectOverride", fc(`{"featureDetectOverride":"SNATFullyRandom=maybe"}`),
			fcErr(`spec.featureDetectOverride: "SNATFullyRandom=maybe" must be a comma-separated list of name=true|false`)},
		{"felix featureGates", fc(`{"featureGates":"BPFConnectTimeLoadBalancingWorkaround"}`),
			fcErr(`spec.featureGates: "BPFConnectTimeLoadBalancingWorkaround" must be a comma-separated list of name=value`)},
		{"felix logActionRateLimit", fc(`{"logActionRateLimit":"10/week"}`),
			fcErr(`spec.logActionRateLimit: "10/week" must be N/second, N/minute, N/hour or N/day with N 1-9999`)},
		{"felix bpfDSROptoutCIDRs", fc(`{"bpfDSROptoutCIDRs":["10.0.0.0/33"]}`), fcErr(`spec.bpfDSROptoutCIDRs[0]: invalid CIDR "10.0.0.0/33"`)},
		{"felix bpfExcludeCIDRsFromNAT", fc(`{"bpfExcludeCIDRsFromNAT":["dns-cache"]}`), fcErr(`spec.bpfExcludeCIDRsFromNAT[0]: invalid CIDR "dns-cache"`)},
		{"felix istioDSCPMark name", fc(`{"istioDSCPMark":"AF99"}`), fcErr(`spec.istioDSCPMark: "AF99" is not a DSCP value (0-63, DF, EF, AF11-AF43 or CS0-CS6)`)},
		{"felix istioDSCPMark number", fc(`{"istioDSCPMark":64}`), fcErr(`spec.istioDSCPMark: "64" is not a DSCP value (0-63, DF, EF, AF11-AF43 or CS0-CS6)`)},

		// BGPConfiguration.
		{"bgp bindMode", obj("BGPConfiguration", "default", `{"bindMode":"All"}`), `invalid BGPConfiguration "default": spec.bindMode: unsupported value "All": supported values: "None", "NodeIP"`},
		{"bgp serviceLoadBalancerAggregation", obj("BGPConfiguration", "default", `{"serviceLoadBalancerAggregation":"On"}`),
			`invalid BGPConfiguration "default": spec.serviceLoadBalancerAggregation: unsupported value "On": supported values: "Enabled", "Disabled"`},
		{"bgp programClusterRoutes", obj("BGPConfiguration", "default", `{"programClusterRoutes":"On"}`),
			`invalid BGPConfiguration "default": spec.programClusterRoutes: unsupported value "On": supported values: "Enabled", "Disabled", "EnabledIPIPOnly", "EnabledNoEncapOnly"`},
		{"bgp ipv4NormalRoutePriority", obj("BGPConfiguration", "default", `{"ipv4NormalRoutePriority":0}`),
			`invalid BGPConfiguration "default": spec.ipv4NormalRoutePriority: 0 is out of range 1-2147483646`},
		{"bgp ipv6NormalRoutePriority", obj("BGPConfiguration", "default", `{"ipv6NormalRoutePriority":-5}`),
			`invalid BGPConfiguration "default": spec.ipv6NormalRoutePriority: -5 is out of range 1-2147483646`},
		{"bgp localWorkloadPeeringIPV4", obj("BGPConfiguration", "default", `{"localWorkloadPeeringIPV4":"fe80::1"}`),
			`invalid BGPConfiguration "default": spec.localWorkloadPeeringIPV4: "fe80::1" is not an IPv4 address`},
		{"bgp localWorkloadPeeringIPV6", obj("BGPConfiguration", "default", `{"localWorkloadPeeringIPV6":"169.254.0.1"}`),
			`invalid BGPConfiguration "default": spec.localWorkloadPeeringIPV6: "169.254.0.1" is not an IPv6 address`},
		{"bgp ignoredInterfaces", obj("BGPConfiguration", "default", `{"ignoredInterfaces":["eth0","*"]}`),
			`invalid BGPConfiguration "default": spec.ignoredInterfaces[1]: invalid interface pattern "*"`},
		{"bgp ignoredInterfaces quote", obj("BGPConfiguration", "default", `{"ignoredInterfaces":["a\"b"]}`),
			`invalid BGPConfiguration "default": spec.ignoredInterfaces[0]: invalid interface pattern "a\"b"`},
		{"bgp mesh password secret name", obj("BGPConfiguration", "default", `{"nodeMeshPassword":{"secretKeyRef":{"name":"Secrets","key":"k"}}}`),
			`invalid BGPConfiguration "default": spec.nodeMeshPassword.secretKeyRef.name: invalid secret name "Secrets": it must be a DNS-1123 subdomain`},
		{"bgp mesh password without mesh", obj("BGPConfiguration", "default", `{"nodeToNodeMeshEnabled":false,"nodeMeshPassword":{"secretKeyRef":{"name":"s","key":"k"}}}`),
			`invalid BGPConfiguration "default": spec.nodeMeshPassword: nodeMeshPassword cannot be set when nodeToNodeMeshEnabled is false`},
		{"bgp mesh restart time without mesh", obj("BGPConfiguration", "default", `{"nodeToNodeMeshEnabled":false,"nodeMeshMaxRestartTime":"2m"}`),
			`invalid BGPConfiguration "default": spec.nodeMeshMaxRestartTime: nodeMeshMaxRestartTime cannot be set when nodeToNodeMeshEnabled is false`},

		// BGPPeer.
		{"peer nextHopMode", obj("BGPPeer", "p", `{"peerIP":"198.18.0.1","asNumber":64512,"nextHopMode":"Next"}`),
			`invalid BGPPeer "p": spec.nextHopMode: unsupported value "Next": supported values: "Auto", "Self", "Keep"`},
		{"peer reversePeering", obj("BGPPeer", "p", `{"peerSelector":"all()","reversePeering":"Both"}`),
			`invalid BGPPeer "p": spec.reversePeering: unsupported value "Both": supported values: "Auto", "Manual"`},
		{"peer keepOriginalNextHop and nextHopMode", obj("BGPPeer", "p", `{"peerIP":"198.18.0.1","asNumber":64512,"keepOriginalNextHop":true,"nextHopMode":"Keep"}`),
			`invalid BGPPeer "p": spec.nextHopMode: keepOriginalNextHop and nextHopMode cannot both be set; keepOriginalNextHop is deprecated`},
		{"peer ttlSecurity", obj("BGPPeer", "p", `{"peerIP":"198.18.0.1","asNumber":64512,"ttlSecurity":256}`),
			`invalid BGPPeer "p": spec.ttlSecurity: 256 is out of range 0-255`},
		{"peer reachableBy needs peerIP", obj("BGPPeer", "p", `{"peerSelector":"all()","reachableBy":"198.18.0.254"}`),
			`invalid BGPPeer "p": spec.reachableBy: reachableBy requires peerIP`},
		{"peer reachableBy address", obj("BGPPeer", "p", `{"peerIP":"198.18.0.1","asNumber":64512,"reachableBy":"gw"}`),
			`invalid BGPPeer "p": spec.reachableBy: invalid IP address "gw"`},
		{"peer asNumber with peerSelector", obj("BGPPeer", "p", `{"peerSelector":"all()","asNumber":64512}`),
			`invalid BGPPeer "p": spec.asNumber: asNumber must be empty with peerSelector (the peer nodes' AS numbers are used)`},
		{"peer localWorkloadSelector with peerSelector", obj("BGPPeer", "p", `{"localWorkloadSelector":"all()","peerSelector":"all()","asNumber":64512}`),
			`invalid BGPPeer "p": spec.localWorkloadSelector: peerIP and peerSelector must be empty when localWorkloadSelector is set`},
		{"peer localWorkloadSelector needs asNumber", obj("BGPPeer", "p", `{"localWorkloadSelector":"all()"}`),
			`invalid BGPPeer "p": spec.asNumber: asNumber is required with localWorkloadSelector`},
		{"peer localWorkloadSelector syntax", obj("BGPPeer", "p", `{"localWorkloadSelector":"bad(","asNumber":64512}`),
			`invalid BGPPeer "p": spec.localWorkloadSelector: invalid selector "bad(": unexpected '('`},

		{"peer secret name with a line break", obj("BGPPeer", "p", `{"peerIP":"198.18.0.1","asNumber":64512,"password":{"secretKeyRef":{"name":"x\nprotocol bgp evil {}","key":"k"}}}`),
			`invalid BGPPeer "p": spec.password.secretKeyRef.name: invalid secret name "x\nprotocol bgp evil {}": it must be a DNS-1123 subdomain`},
		{"peer secret name with a slash", obj("BGPPeer", "p", `{"peerIP":"198.18.0.1","asNumber":64512,"password":{"secretKeyRef":{"name":"../etc","key":"passwd"}}}`),
			`invalid BGPPeer "p": spec.password.secretKeyRef.name: invalid secret name "../etc": it must be a DNS-1123 subdomain`},
		{"peer secret name too long", obj("BGPPeer", "p", `{"peerIP":"198.18.0.1","asNumber":64512,"password":{"secretKeyRef":{"name":"`+strings.Repeat("a", 254)+`","key":"k"}}}`),
			`invalid BGPPeer "p": spec.password.secretKeyRef.name: invalid secret name "` + strings.Repeat("a", 254) + `": it must be a DNS-1123 subdomain`},
		{"peer secret key missing", obj("BGPPeer", "p", `{"peerIP":"198.18.0.1","asNumber":64512,"password":{"secretKeyRef":{"name":"s"}}}`),
			`invalid BGPPeer "p": spec.password.secretKeyRef.key: key is required`},
		{"peer secret key with a line break", obj("BGPPeer", "p", `{"peerIP":"198.18.0.1","asNumber":64512,"password":{"secretKeyRef":{"name":"s","key":"k\n}"}}}`),
			`invalid BGPPeer "p": spec.password.secretKeyRef.key: invalid secret key "k\n}": letters, digits, '-', '_' and '.' (not "." and not starting with "..")`},
		{"peer secret key dot-dot", obj("BGPPeer", "p", `{"peerIP":"198.18.0.1","asNumber":64512,"password":{"secretKeyRef":{"name":"s","key":"..data"}}}`),
			`invalid BGPPeer "p": spec.password.secretKeyRef.key: invalid secret key "..data": letters, digits, '-', '_' and '.' (not "." and not starting with "..")`},

		// BGPFilter.
		{"filter peerType", filter(`{"exportV4":[{"action":"Accept","peerType":"external"}]}`), filterErr(`spec.exportV4[0].peerType: unsupported value "external": supported values: "eBGP", "iBGP"`)},
		{"filter priority", filter(`{"exportV4":[{"action":"Accept","priority":0}]}`), filterErr(`spec.exportV4[0].priority: 0 is out of range 1-2147483646`)},
		{"filter communities count", filter(`{"importV4":[{"action":"Accept","communities":{"values":["1:1","1:2"]}}]}`),
			filterErr(`spec.importV4[0].communities.values: exactly one community value is required, not 2`)},
		{"filter community value", filter(`{"importV6":[{"action":"Accept","communities":{"values":["1:2:3:4"]}}]}`),
			filterErr(`spec.importV6[0].communities.values[0]: invalid community "1:2:3:4" (want aa:nn or aa:nn:mm)`)},
		{"filter source", filter(`{"exportV4":[{"action":"Reject","source":"Local"}]}`), filterErr(`spec.exportV4[0].source: unsupported value "Local": supported values: "RemotePeers"`)},
		{"filter interface", filter(`{"exportV4":[{"action":"Reject","interface":"eth0\"; }"}]}`), filterErr(`spec.exportV4[0].interface: invalid interface pattern "eth0\"; }"`)},
		{"filter interface length", filter(`{"exportV4":[{"action":"Reject","interface":"interface-name-16"}]}`),
			filterErr(`spec.exportV4[0].interface: invalid interface pattern "interface-name-16"`)},
		{"filter prefixLength needs cidr", filter(`{"exportV4":[{"action":"Accept","prefixLength":{"min":24}}]}`), filterErr(`spec.exportV4[0].prefixLength: prefixLength requires cidr`)},
		{"filter prefixLength v4 bits", filter(`{"exportV4":[{"action":"Accept","cidr":"10.0.0.0/8","matchOperator":"In","prefixLength":{"max":33}}]}`),
			filterErr(`spec.exportV4[0].prefixLength.max: 33 is out of range 0-32`)},
		{"filter prefixLength v6 bits", filter(`{"exportV6":[{"action":"Accept","cidr":"fd5c::/16","matchOperator":"In","prefixLength":{"min":129}}]}`),
			filterErr(`spec.exportV6[0].prefixLength.min: 129 is out of range 0-128`)},
		{"filter operations with Reject", filter(`{"exportV4":[{"action":"Reject","operations":[{"setPriority":{"value":10}}]}]}`),
			filterErr(`spec.exportV4[0].operations: operations may only be used with action Accept`)},
		{"filter too many operations", filter(`{"exportV4":[{"action":"Accept","operations":[` + strings.Repeat(`{"setPriority":{"value":10}},`, 10) + `{"setPriority":{"value":10}}]}]}`),
			filterErr(`spec.exportV4[0].operations: at most 10 operations are allowed, not 11`)},
		{"filter operation with two fields", filter(`{"exportV4":[{"action":"Accept","operations":[{"setPriority":{"value":10},"prependASPath":{"prefix":[64512]}}]}]}`),
			filterErr(`spec.exportV4[0].operations[0]: exactly one operation must be set, not 2`)},
		{"filter empty operation", filter(`{"exportV4":[{"action":"Accept","operations":[{}]}]}`), filterErr(`spec.exportV4[0].operations[0]: exactly one operation must be set, not 0`)},
		{"filter prependASPath length", filter(`{"exportV4":[{"action":"Accept","operations":[{"prependASPath":{"prefix":[]}}]}]}`),
			filterErr(`spec.exportV4[0].operations[0].prependASPath.prefix: 1 to 10 AS numbers are required, not 0`)},
		{"filter setPriority value", filter(`{"exportV6":[{"action":"Accept","operations":[{"setPriority":{"value":0}}]}]}`),
			filterErr(`spec.exportV6[0].operations[0].setPriority.value: 0 is out of range 1-2147483646`)},
		{"filter addCommunity value", filter(`{"exportV4":[{"action":"Accept","operations":[{"addCommunity":{"value":"70000:1"}}]}]}`),
			filterErr(`spec.exportV4[0].operations[0].addCommunity.value: community "70000:1" has a part out of range`)},

		// IPPool, IPReservation, IPAMConfiguration.
		{"pool IPv4 link-local", pool("169.254.0.0/16", 26), `invalid IPPool "p": spec.cidr: 169.254.0.0/16 overlaps with the IPv4 link-local range 169.254.0.0/16`},
		{"pool containing IPv4 link-local", pool("169.0.0.0/8", 26), `invalid IPPool "p": spec.cidr: 169.0.0.0/8 overlaps with the IPv4 link-local range 169.254.0.0/16`},
		{"pool IPv6 link-local", pool("fe80:0:0:1::/64", 122), `invalid IPPool "p": spec.cidr: fe80:0:0:1::/64 overlaps with the IPv6 link-local range fe80::/10`},
		{"pool namespaceSelector", func() Resource { p := pool("10.65.0.0/16", 26); p.Spec.NamespaceSelector = "bad("; return p }(),
			`invalid IPPool "p": spec.namespaceSelector: invalid selector "bad(": unexpected '('`},
		{"reservation CIDR", obj("IPReservation", "r", `{"reservedCIDRs":["10.65.0.1/32","10.65.0.256"]}`), `invalid IPReservation "r": spec.reservedCIDRs[1]: invalid CIDR "10.65.0.256"`},
		{"ipam maxBlocksPerHost", obj("IPAMConfiguration", "default", `{"maxBlocksPerHost":1000001}`),
			`invalid IPAMConfiguration "default": spec.maxBlocksPerHost: 1000001 is out of range 0-1000000`},
		{"ipam minIPReclaimAgeSeconds", obj("IPAMConfiguration", "default", `{"minIPReclaimAgeSeconds":-1}`),
			`invalid IPAMConfiguration "default": spec.minIPReclaimAgeSeconds: must not be negative`},
		{"ipam kubeVirtVMAddressPersistence", obj("IPAMConfiguration", "default", `{"kubeVirtVMAddressPersistence":"On"}`),
			`invalid IPAMConfiguration "default": spec.kubeVirtVMAddressPersistence: unsupported value "On": supported values: "Enabled", "Disabled"`},

		// KubeControllersConfiguration.
		{"kcc name", obj("KubeControllersConfiguration", "kcc", `{"controllers":{}}`), `invalid KubeControllersConfiguration "kcc": metadata.name: KubeControllersConfiguration must be named "default"`},
		{"kcc logSeverityScreen", kcc(`{"logSeverityScreen":"Trace","controllers":{}}`), kccErr(`spec.logSeverityScreen: unsupported value "Trace": supported values: "None", "Debug", "Info", "Warning", "Error", "Fatal", "Panic"`)},
		{"kcc healthChecks", kcc(`{"healthChecks":"On","controllers":{}}`), kccErr(`spec.healthChecks: unsupported value "On": supported values: "Enabled", "Disabled"`)},
		{"kcc syncLabels", kcc(`{"controllers":{"node":{"syncLabels":"On"}}}`), kccErr(`spec.controllers.node.syncLabels: unsupported value "On": supported values: "Enabled", "Disabled"`)},
		{"kcc autoCreate", kcc(`{"controllers":{"node":{"hostEndpoint":{"autoCreate":"On"}}}}`), kccErr(`spec.controllers.node.hostEndpoint.autoCreate: unsupported value "On": supported values: "Enabled", "Disabled"`)},
		{"kcc createDefaultHostEndpoint", kcc(`{"controllers":{"node":{"hostEndpoint":{"createDefaultHostEndpoint":"On"}}}}`),
			kccErr(`spec.controllers.node.hostEndpoint.createDefaultHostEndpoint: unsupported value "On": supported values: "Enabled", "Disabled"`)},
		{"kcc assignIPs", kcc(`{"controllers":{"loadBalancer":{"assignIPs":"Some"}}}`), kccErr(`spec.controllers.loadBalancer.assignIPs: unsupported value "Some": supported values: "AllServices", "RequestedServicesOnly"`)},
		{"kcc migration", kcc(`{"controllers":{"migration":{"policyNameMigrator":"On"}}}`), kccErr(`spec.controllers.migration.policyNameMigrator: unsupported value "On": supported values: "Enabled", "Disabled"`)},
		{"kcc prometheusMetricsPort", kcc(`{"prometheusMetricsPort":65536,"controllers":{}}`), kccErr(`spec.prometheusMetricsPort: 65536 is out of range 0-65535`)},
		{"kcc debugProfilePort", kcc(`{"debugProfilePort":-1,"controllers":{}}`), kccErr(`spec.debugProfilePort: -1 is out of range 0-65535`)},

		// Tiers and workload endpoints.
		{"kube-admin tier action", &Tier{ObjectMeta: ObjectMeta{Name: "kube-admin"}, Spec: TierSpec{DefaultAction: ActionDeny, Order: Float(1000)}},
			`invalid Tier "kube-admin": spec.defaultAction: the "kube-admin" tier must have default action "Pass"`},
		{"default tier action", &Tier{ObjectMeta: ObjectMeta{Name: "default"}, Spec: TierSpec{DefaultAction: ActionPass, Order: Float(1e6)}},
			`invalid Tier "default": spec.defaultAction: the "default" tier must have default action "Deny"`},
		{"wep dscp", &WorkloadEndpoint{ObjectMeta: ObjectMeta{Name: "w", Namespace: "default"}, Spec: WorkloadEndpointSpec{Node: "n", QoSControls: &QoSControls{DSCP: &DSCP{Name: "XF1"}}}},
			`invalid WorkloadEndpoint "w": spec.qosControls.dscp: "XF1" is not a DSCP value (0-63, DF, EF, AF11-AF43 or CS0-CS6)`},
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

// obj decodes a v3 object of the given kind and name from its spec JSON, strictly.
func obj(kind, name, spec string) Resource {
	k, ok := LookupKind(kind)
	if !ok {
		panic("unknown kind " + kind)
	}
	r := k.New()
	r.GetObjectMeta().Name = name
	if k.Namespaced {
		r.GetObjectMeta().Namespace = "default"
	}
	dec := json.NewDecoder(strings.NewReader(`{"spec":` + spec + `}`))
	dec.DisallowUnknownFields()
	if err := dec.Decode(r); err != nil {
		panic(fmt.Sprintf("%s %s: %v", kind, spec, err))
	}
	return r
}

func fc(spec string) Resource     { return obj("FelixConfiguration", "default", spec) }
func fcErr(msg string) string     { return `invalid FelixConfiguration "default": ` + msg }
func filter(spec string) Resource { return obj("BGPFilter", "f", spec) }
func filterErr(msg string) string { return `invalid BGPFilter "f": ` + msg }
func kcc(spec string) Resource    { return obj("KubeControllersConfiguration", "default", spec) }
func kccErr(msg string) string    { return `invalid KubeControllersConfiguration "default": ` + msg }

var tcpProto = ProtocolFromString("TCP")

func asn(n uint32) *ASNumber { a := ASNumber(n); return &a }

func TestValidObjectsPass(t *testing.T) {
	tcp := ProtocolFromInt(6)
	for _, r := range []Resource{
		pool("10.65.0.0/16", 26), pool("fd5c:1:2::/48", 122),
		disabledPool("10.65.0.0/28", 26), // Project Calico's CRD: a disabled pool may be smaller than a block
		gnp(GlobalNetworkPolicySpec{Ingress: rule(func(r *Rule) { r.Protocol = &tcp; r.Destination.Ports = []Port{SinglePort(22), NamedPort("http-alt")} })}),
		&BGPPeer{ObjectMeta: ObjectMeta{Name: "p"}, Spec: BGPPeerSpec{PeerIP: "[fd00::1]:1179", ASNumber: asn(64512)}},
		// Values Project Calico matches case-insensitively, defaults it fills in, and new fields.
		fc(`{"chainInsertMode":"append","iptablesBackend":"nft","nftablesFilterDenyAction":"reject","failsafeInboundHostPorts":[{"port":22}],
			"routeTableRanges":[{"min":1,"max":250},{"min":256,"max":1000}],"istioDSCPMark":"af11","featureGates":"A=b,C=d",
			"featureDetectOverride":"SNATFullyRandom=true,MASQFullyRandom=","logActionRateLimit":"100/hour","goMaxProcs":-1,"bpfLogLevel":""}`),
		obj("BGPConfiguration", "default", `{"bindMode":"NodeIP","nodeToNodeMeshEnabled":true,"nodeMeshMaxRestartTime":"2m","localWorkloadPeeringIPV4":"169.254.0.179"}`),
		obj("BGPPeer", "workloads", `{"localWorkloadSelector":"color == 'red'","asNumber":65001,"nextHopMode":"Self","keepaliveTime":"20s","localASNumber":64513}`),
		obj("BGPPeer", "tor", `{"peerIP":"198.18.1.254","asNumber":64600,"reachableBy":"198.18.1.1","ttlSecurity":1,"reversePeering":"Manual"}`),
		obj("BGPPeer", "secret", `{"peerIP":"198.18.1.254","asNumber":64600,"password":{"secretKeyRef":{"name":"bgp-secrets.v1","key":"tor_1.key-A"}}}`),
		// Project Calico's CRD requires no target and no asNumber with a peerIP.
		obj("BGPPeer", "no-as", `{"peerIP":"198.18.1.254","reachableBy":"198.18.1.1"}`),
		obj("BGPPeer", "gtsm", `{"node":"host-a","ttlSecurity":1}`),
		obj("BGPPeer", "secret-no-name", `{"peerIP":"198.18.1.254","asNumber":64600,"password":{"secretKeyRef":{"key":"k"}}}`),
		// As in Project Calico: a peerIP without asNumber (a node's: that node's AS), with
		// reachableBy too, and a BGPPeer that names no peer.
		obj("BGPPeer", "node-by-ip", `{"peerIP":"fd5c:ff::2"}`),
		obj("BGPPeer", "node-by-ip-via", `{"peerIP":"198.18.1.2","reachableBy":"198.18.1.1"}`),
		obj("BGPPeer", "no-peer", `{"node":"host-a","ttlSecurity":1}`),
		obj("BGPConfiguration", "node.a", `{"ignoredInterfaces":["eth*","docker0"]}`),
		obj("BGPConfiguration", "default", `{"nodeMeshPassword":{"secretKeyRef":{"name":"s","key":"k"}}}`),
		obj("BGPConfiguration", "any-name", `{"logSeverityScreen":"Debug"}`),
		obj("BGPConfiguration", "default", `{"serviceClusterIPs":[{"cidr":"10.101.0.0/16"},{}],"serviceLoadBalancerIPs":[{}],"serviceExternalIPs":[{}]}`),
		obj("FelixConfiguration", "any-name", `{"logSeverityScreen":"Debug"}`),
		filter(`{"importV4":[{"action":"Reject","source":"RemotePeers","interface":"*"}],"exportV6":[{"action":"Accept","interface":"eth0.100"}]}`),
		filter(`{"exportV4":[{"action":"Accept","cidr":"10.65.0.0/16","matchOperator":"In","prefixLength":{"min":16,"max":26},"peerType":"eBGP",
			"communities":{"values":["64512:100"]},"asPathPrefix":[64600],"priority":512,
			"operations":[{"addCommunity":{"value":"64512:200:1"}},{"prependASPath":{"prefix":[64512,64512]}},{"setPriority":{"value":1024}}]}]}`),
		obj("IPReservation", "r", `{"reservedCIDRs":["10.65.0.0/30","10.65.0.9","fd5c::/126"]}`),
		kcc(`{"controllers":{"node":{"syncLabels":"Enabled","hostEndpoint":{"autoCreate":"Enabled"}},"loadBalancer":{"assignIPs":"RequestedServicesOnly"}}}`),
		&Tier{ObjectMeta: ObjectMeta{Name: "kube-baseline"}, Spec: TierSpec{DefaultAction: ActionPass}},
	} {
		if err := testValidator.Validate(r); err != nil {
			t.Errorf("%v", err)
		}
	}
}

// TestUnsupported: settings valid for Project Calico that calico-host cannot enforce as written
// are reported by Unsupported (calicoctl refuses to write them), and nothing else is.
func TestUnsupported(t *testing.T) {
	f := filter(`{"exportV4":[{"action":"Accept","priority":512},{"action":"Accept","cidr":"10.65.0.0/16","matchOperator":"In","prefixLength":{"max":24}}],
		"importV6":[{"action":"Accept","cidr":"fd5c::/16","matchOperator":"NotEqual","prefixLength":{"max":64}},
		{"action":"Accept","operations":[{"addCommunity":{"value":"1:1"}},{"setPriority":{"value":10}}]}]}`)
	if err := testValidator.Validate(f); err != nil {
		t.Fatalf("valid for Project Calico, so valid on read: %v", err)
	}
	want := `invalid BGPFilter "f": spec.importV6[0].prefixLength: a prefix length range cannot be applied with matchOperator NotEqual (not supported by calico-host)`
	if err := Unsupported(f); err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
	supported := filter(`{"exportV4":[{"action":"Accept","cidr":"10.65.0.0/16","matchOperator":"Equal","peerType":"iBGP","communities":{"values":["1:2"]},
		"asPathPrefix":[65000],"priority":512,"operations":[{"addCommunity":{"value":"1:2:3"}},{"prependASPath":{"prefix":[65000]}},{"setPriority":{"value":1024}}]}]}`)
	for _, r := range []Resource{supported, pool("10.65.0.0/16", 26)} {
		if err := Unsupported(r); err != nil {
			t.Errorf("%v", err)
		}
	}
}

func TestPoolOverlap(t *testing.T) {
	a, b, c := pool("10.65.0.0/16", 26), pool("10.65.128.0/17", 26), pool("10.66.0.0/16", 26)
	a.Name, b.Name, c.Name = "a", "b", "c"
	err := PoolOverlapError(b, []*IPPool{a, c})
	want := `invalid IPPool "b": spec.cidr: IPPool(b) CIDR overlaps with IPPool(a) CIDR 10.65.0.0/16 (10.65.128.0/17)`
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
	a.Spec.Disabled = true
	if err := PoolOverlapError(b, []*IPPool{a, c}); err != nil {
		t.Errorf("disabled pools may overlap: %v", err)
	}
}

// TestReadersAcceptWhatOnlyWritersRefuse: Project Calico's write-time rules (policy names,
// repeated types, default-only BGP fields, rule consistency) are not applied by readers, so an
// object another tool wrote keeps working as in Project Calico; ValidateWrite refuses them.
func TestReadersAcceptWhatOnlyWritersRefuse(t *testing.T) {
	for _, r := range []Resource{
		&GlobalNetworkPolicy{ObjectMeta: ObjectMeta{Name: "a.b.c"}},
		gnp(GlobalNetworkPolicySpec{Types: []string{"Ingress", "Ingress"}}),
		&BGPConfiguration{ObjectMeta: ObjectMeta{Name: "host-a"}, Spec: BGPConfigurationSpec{NodeToNodeMeshEnabled: Bool(true)}},
		gnp(GlobalNetworkPolicySpec{Ingress: []Rule{{Action: ActionAllow, Source: EntityRule{Nets: []string{"10.0.0.0/8"}}, Destination: EntityRule{Nets: []string{"fd5c::/16"}}}}}),
		gnp(GlobalNetworkPolicySpec{Ingress: []Rule{{Action: ActionDeny, Protocol: &tcpProto, Destination: EntityRule{Ports: []Port{SinglePort(0)}}}}}),
	} {
		if err := testValidator.Validate(r); err != nil {
			t.Errorf("Validate: %v", err)
		}
		if err := testValidator.ValidateWrite(r); err == nil {
			t.Errorf("ValidateWrite accepted %s %q", r.GetTypeMeta().Kind, r.GetObjectMeta().Name)
		}
	}
}

// TestWriteValidationMessages: the rules only writers apply (ValidateWrite).
func TestWriteValidationMessages(t *testing.T) {
	for _, c := range []struct {
		name string
		obj  Resource
		want string
	}{
		{"policy name with two dots", &GlobalNetworkPolicy{ObjectMeta: ObjectMeta{Name: "a.b.c"}},
			`invalid GlobalNetworkPolicy "a.b.c": metadata.name: policy name "a.b.c" must consist of lower case alphanumeric characters or '-', with at most one '.'`},
		{"repeated type", gnp(GlobalNetworkPolicySpec{Types: []string{"Ingress", "Ingress"}}), `invalid GlobalNetworkPolicy "pol": spec.types: 'Ingress' type specified more than once`},
		{"bgp default-only field", &BGPConfiguration{ObjectMeta: ObjectMeta{Name: "host-a"}, Spec: BGPConfigurationSpec{NodeToNodeMeshEnabled: Bool(true)}},
			`invalid BGPConfiguration "host-a": spec.nodeToNodeMeshEnabled: Cannot set nodeToNodeMeshEnabled on a non default BGP Configuration.`},
		{"port 0", gnp(GlobalNetworkPolicySpec{Egress: []Rule{{Action: ActionAllow, Protocol: &tcpProto, Source: EntityRule{Ports: []Port{SinglePort(10), SinglePort(0)}}}}}),
			`invalid GlobalNetworkPolicy "pol": spec.egress[0].source.ports[1]: port range invalid, port number must be between 1 and 65535 (0)`},
		{"port range from 0", gnp(GlobalNetworkPolicySpec{Ingress: []Rule{{Action: ActionAllow, Protocol: &tcpProto, Destination: EntityRule{NotPorts: []Port{{MinPort: 0, MaxPort: 1024}}}}}}),
			`invalid GlobalNetworkPolicy "pol": spec.ingress[0].destination.notPorts[0]: port range invalid, port number must be between 1 and 65535 (0)`},
		{"default tier order", &Tier{ObjectMeta: ObjectMeta{Name: "default"}, Spec: TierSpec{DefaultAction: ActionDeny, Order: Float(5)}},
			`invalid Tier "default": spec.order: the "default" tier must have order 1000000`},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := testValidator.ValidateWrite(c.obj)
			if err == nil || err.Error() != c.want {
				t.Errorf("got  %v\nwant %s", err, c.want)
			}
		})
	}
}

// TestWorkloadIdentityNamesAtWrite: Project Calico's name rules for a workload endpoint's
// identity fields apply when it is written (calicoctl, CNI), not when a daemon reads it, since
// Project Calico's felix enforces an endpoint whatever its node or container ID look like.
func TestWorkloadIdentityNamesAtWrite(t *testing.T) {
	for _, c := range []struct {
		spec WorkloadEndpointSpec
		want string
	}{
		{WorkloadEndpointSpec{Node: "n", ContainerID: "abc_def"},
			`spec.containerID: "abc_def" must consist of alphanumeric characters or '-', and start and end with an alphanumeric character`},
		{WorkloadEndpointSpec{Node: "Compute-1", Pod: "Web_0"},
			`spec.node: "Compute-1" must consist of lower case alphanumeric characters, '-' or '.', and start and end with an alphanumeric character`},
	} {
		w := &WorkloadEndpoint{ObjectMeta: ObjectMeta{Name: "w", Namespace: "default"}, Spec: c.spec}
		if err := testValidator.Validate(w); err != nil {
			t.Errorf("%+v: read validation refused it: %v", c.spec, err)
		}
		if err := testValidator.ValidateWrite(w); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: write validation: %v, want %s", c.spec, err, c.want)
		}
	}
}

// TestRuleVersionAtWrite: a rule whose ICMP protocol or nets contradict its ipVersion is
// refused when written, but a reader keeps the policy (the rule matches nothing; refusing the
// whole policy would let through what its other rules deny).
func TestRuleVersionAtWrite(t *testing.T) {
	icmp := ProtocolFromString("ICMP")
	for _, c := range []struct {
		name string
		obj  Resource
		want string
	}{
		{"icmp version", gnp(GlobalNetworkPolicySpec{Ingress: rule(func(r *Rule) { r.Protocol = &icmp; r.IPVersion = Int(6); r.ICMP = &ICMPFields{Type: Int(8)} })}),
			`invalid GlobalNetworkPolicy "pol": spec.ingress[0].icmp: protocol ICMP does not match ipVersion 6`},
		{"nets version", gnp(GlobalNetworkPolicySpec{Ingress: rule(func(r *Rule) { r.IPVersion = Int(4); r.Source.Nets = []string{"fd5c::/64"} })}),
			`invalid GlobalNetworkPolicy "pol": spec.ingress[0].source.nets[0]: "fd5c::/64" is not an IPv4 network (ipVersion is 4)`},
	} {
		if err := testValidator.Validate(c.obj); err != nil {
			t.Errorf("%s: read validation refused it: %v", c.name, err)
		}
		if err := testValidator.ValidateWrite(c.obj); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: write validation: %v, want %s", c.name, err, c.want)
		}
	}
}

// TestFieldErrorValues: the failures Project Calico reports with the field's value (and, for some,
// its own name for the field) carry both, so calicoctl can word them as Project Calico does.
func TestFieldErrorValues(t *testing.T) {
	icmp := ProtocolFromString("ICMP")
	for _, c := range []struct {
		name        string
		obj         Resource
		field, want string // want: Project Calico's name for the field
		value       any
	}{
		{"peer IP", &BGPPeer{ObjectMeta: ObjectMeta{Name: "p"}, Spec: BGPPeerSpec{PeerIP: "198.18.0.256"}}, "spec.peerIP", "", "198.18.0.256"},
		{"peer node", &BGPPeer{ObjectMeta: ObjectMeta{Name: "p"}, Spec: BGPPeerSpec{Node: "host a"}}, "spec.node", "", "host a"},
		{"interface", &HostEndpoint{ObjectMeta: ObjectMeta{Name: "h"}, Spec: HostEndpointSpec{Node: "n", InterfaceName: "a-very-long-interface"}}, "spec.interfaceName", "", "a-very-long-interface"},
		{"icmp type", gnp(GlobalNetworkPolicySpec{Ingress: rule(func(r *Rule) { r.Protocol = &icmp; r.ICMP = &ICMPFields{Type: Int(300)} })}), "spec.ingress[0].icmp.type", "", 300},
		{"port 0", gnp(GlobalNetworkPolicySpec{Ingress: rule(func(r *Rule) { r.Protocol = &tcpProto; r.Destination.Ports = []Port{SinglePort(0)} })}), "spec.ingress[0].destination.ports[0]", "Port", uint16(0)},
		{"pool CIDR", pool("10.65.0.300/16", 26), "spec.cidr", "IPPool.Spec.CIDR", "10.65.0.300/16"},
		{"pool mask", pool("10.65.7.0/16", 26), "spec.cidr", "IPPool.Spec.CIDR", "10.65.0.0/16"},
		{"pool without CIDR", pool("", 26), "spec.cidr", "IPPool.Spec.CIDR", nil},
		{"pool size", pool("10.65.0.0/28", 26), "spec.blockSize", "spec", nil},
		{"default-only", &BGPConfiguration{ObjectMeta: ObjectMeta{Name: "n"}, Spec: BGPConfigurationSpec{ASNumber: asn(64512)}}, "spec.asNumber", "BGPConfiguration.Spec.ASNumber", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := testValidator.ValidateWrite(c.obj)
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("got %v, want a ValidationError", err)
			}
			for _, fe := range ve.Errors {
				if fe.Field == c.field {
					if fe.Name != c.want || fe.Value != c.value {
						t.Errorf("name %q value %#v, want %q %#v", fe.Name, fe.Value, c.want, c.value)
					}
					return
				}
			}
			t.Errorf("no error for %s in %v", c.field, err)
		})
	}
}
