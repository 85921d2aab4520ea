package calc

import (
	"cmp"
	"net/netip"
)

// Update is one change for the dataplane.
type Update interface{ isUpdate() }

// ConfigUpdate carries this host's facts from its Node that the dataplane needs: its addresses and
// its VXLAN tunnel addresses and MACs. It is sent whenever any of it changes, and always in the
// first batch. VXLANTunnelMAC(V6) is the Node's stored MAC, else the one Calico computes from the
// host name (as for VTEPs). (Felix's own configuration is not part of the dataplane's input: see
// Facts.)
type ConfigUpdate struct {
	HostIPv4, HostIPv6 netip.Prefix // bgp.ipv4Address / ipv6Address (address with its subnet)
	VXLANTunnelAddrV4  netip.Addr
	IPIPTunnelAddr     netip.Addr // bgp.ipv4IPIPTunnelAddr
	VXLANTunnelAddrV6  netip.Addr
	VXLANTunnelMAC     string
	VXLANTunnelMACV6   string
}

// IPSetType says what an IP set holds.
type IPSetType int

// IP set types.
const (
	IPSetNet       IPSetType = iota // addresses and CIDRs (endpoint IPs, network set nets)
	IPSetNamedPort                  // (address, protocol, port) triples for named ports
)

// IPSetMember is one member. Protocol and Port are set only in named-port sets. A set may hold
// both IPv4 and IPv6 members; the dataplane splits them per family.
type IPSetMember struct {
	Prefix   netip.Prefix
	Protocol uint8
	Port     uint16
}

// IPSetUpdate gives the full contents of a set (a new set, or after a resync). It may also come
// for a set the dataplane already has (removed and re-created within one batch): the contents
// are replaced.
type IPSetUpdate struct {
	ID      string // "s:<hash>" for selector sets, "n:<hash>" for named-port sets (Calico's IDs)
	Type    IPSetType
	Members []IPSetMember
}

// IPSetDelta changes the members of a set the dataplane already has.
type IPSetDelta struct {
	ID      string
	Added   []IPSetMember
	Removed []IPSetMember
}

// IPSetRemove removes a set no active rule uses any more.
type IPSetRemove struct{ ID string }

// PolicyID identifies a policy. Kind is "gnp" (GlobalNetworkPolicy) or "np" (NetworkPolicy);
// Namespace is empty for gnp. Name is the stored name (including a non-default tier prefix).
type PolicyID struct {
	Tier      string
	Kind      string
	Namespace string
	Name      string
}

// Policy is an active policy with its rules resolved to IP sets.
type Policy struct {
	Namespace string
	// Selector is the canonical text of the policy's full selector (namespace, namespace and
	// service account selectors included). The dataplane groups consecutive policies of a tier
	// with the same selector, as Project Calico does: they always apply to the same endpoints.
	Selector       string
	InboundRules   []Rule
	OutboundRules  []Rule
	Untracked      bool // doNotTrack
	PreDNAT        bool
	ApplyOnForward bool
}

// ActivePolicyUpdate adds or changes a policy that matches at least one local endpoint.
type ActivePolicyUpdate struct {
	ID     PolicyID
	Policy *Policy
}

// ActivePolicyRemove removes a policy that no longer matches any local endpoint (or was deleted).
type ActivePolicyRemove struct{ ID PolicyID }

// Profile is an active profile's rules.
type Profile struct {
	InboundRules  []Rule
	OutboundRules []Rule
}

// ActiveProfileUpdate adds or changes a profile referenced by a local endpoint. A profile that an
// endpoint names but that does not exist, or that failed validation, is sent with a single deny
// rule in each direction (as Project Calico's felix does): it drops what reaches it.
type ActiveProfileUpdate struct {
	Name    string
	Profile *Profile
}

// ActiveProfileRemove removes a profile no local endpoint references any more.
type ActiveProfileRemove struct{ Name string }

// Rule actions (lower case, as in Project Calico's dataplane protocol).
const (
	RuleAllow = "allow"
	RuleDeny  = "deny"
	RulePass  = "pass"
	RuleLog   = "log"
)

// PortRange is an inclusive port range (First == Last for a single port).
type PortRange struct{ First, Last uint16 }

// ICMPMatch matches an ICMP type and optionally a code.
type ICMPMatch struct {
	Type uint8
	Code *uint8
}

// Rule is one rule with every selector resolved to IP set IDs. All non-empty fields must match
// (AND); within a list, any entry may match (OR), except the Not* IP set lists, where the packet
// must be in none of the sets, and the positive IP set lists, where it must be in all of them.
// A v3 rule that mixes numeric and named ports becomes several Rules (one per alternative), so a
// Rule holds either Ports or NamedPortIPSetIDs on each side, never both. IPVersion 0 means both
// families; a rule whose nets are all of one family has that family's IPVersion.
type Rule struct {
	Action      string
	IPVersion   int
	Protocol    uint8 // 0 = any
	NotProtocol uint8 // 0 = none

	SrcNets, NotSrcNets []netip.Prefix
	DstNets, NotDstNets []netip.Prefix

	SrcPorts, NotSrcPorts []PortRange
	DstPorts, NotDstPorts []PortRange

	SrcIPSetIDs, NotSrcIPSetIDs []string
	DstIPSetIDs, NotDstIPSetIDs []string

	SrcNamedPortIPSetIDs, NotSrcNamedPortIPSetIDs []string
	DstNamedPortIPSetIDs, NotDstNamedPortIPSetIDs []string

	ICMP    *ICMPMatch
	NotICMP *ICMPMatch

	// RuleID is a stable short hash of the source rule (for comments and logs).
	RuleID string
	// Index is the source rule's position in its policy's or profile's rules of this direction
	// (what flow logs and traces name as the rule index; Rules left out or split keep it).
	Index int

	// Invalid, when not empty, says why calc could not interpret the source rule (data that
	// validation refuses). Such a rule carries no matches; it cannot be enforced, so the
	// dataplane fails closed at its position: every packet that reaches it is dropped.
	Invalid string
}

// TierInfo lists, for one tier, the policies that apply to an endpoint in each direction, in
// evaluation order. Tiers appear in evaluation order; a tier with no policy for an endpoint is left out.
type TierInfo struct {
	Name            string
	DefaultAction   string // "Deny" or "Pass"
	IngressPolicies []PolicyID
	EgressPolicies  []PolicyID
}

// WorkloadEndpointID identifies a workload endpoint as Project Calico does (and as felix's status
// keys need it): WorkloadID is "<namespace>/<workload>".
type WorkloadEndpointID struct {
	OrchestratorID string
	WorkloadID     string
	EndpointID     string
}

// Compare orders IDs by orchestrator, workload, then endpoint.
func (a WorkloadEndpointID) Compare(b WorkloadEndpointID) int {
	return cmp.Or(cmp.Compare(a.OrchestratorID, b.OrchestratorID), cmp.Compare(a.WorkloadID, b.WorkloadID),
		cmp.Compare(a.EndpointID, b.EndpointID))
}

// NATInfo is a 1:1 NAT (OpenStack floating IP).
type NATInfo struct {
	ExtIP netip.Addr
	IntIP netip.Addr
}

// WorkloadEndpoint is a local workload endpoint with its resolved policy.
type WorkloadEndpoint struct {
	Name                       string // host-side interface name
	Namespace                  string
	MAC                        string
	IPv4Nets, IPv6Nets         []netip.Prefix
	IPv4NAT, IPv6NAT           []NATInfo
	AllowSpoofedSourcePrefixes []netip.Prefix
	Tiers                      []TierInfo
	ProfileIDs                 []string
	// LiveMigration is the endpoint's part in a live migration (LiveMigration objects naming it).
	LiveMigration MigrationRole
	// LocalBGPPeer names the BGPPeer whose localWorkloadSelector selects the endpoint ("":
	// none); LocalBGPPeerAddrs are then the host-side addresses of its interface
	// (BGPConfiguration default's localWorkloadPeeringIPV4/IPV6, validated, IPv4 first).
	LocalBGPPeer      string
	LocalBGPPeerAddrs []netip.Addr
}

// MigrationRole is a local workload endpoint's part in a live migration, as Project Calico's
// LiveMigrationRole: the dataplane holds a target's routes back until the workload announces
// itself, then routes to it at the elevated priority for a while.
type MigrationRole uint8

// The roles; a target role wins over a source role.
const (
	MigrationNone MigrationRole = iota
	MigrationSource
	MigrationTarget
)

func (r MigrationRole) String() string {
	switch r {
	case MigrationSource:
		return "source"
	case MigrationTarget:
		return "target"
	}
	return "none"
}

// WorkloadEndpointUpdate adds or changes a local workload endpoint.
type WorkloadEndpointUpdate struct {
	ID       WorkloadEndpointID
	Endpoint *WorkloadEndpoint
}

// WorkloadEndpointRemove removes a local workload endpoint.
type WorkloadEndpointRemove struct{ ID WorkloadEndpointID }

// HostEndpoint is one of this host's endpoints with its resolved policy, per kind of policy.
type HostEndpoint struct {
	Name              string // the HostEndpoint object's name
	InterfaceName     string // "" when matched by expected IPs only; "*" for all interfaces
	ExpectedIPv4Addrs []netip.Addr
	ExpectedIPv6Addrs []netip.Addr
	ProfileIDs        []string
	Tiers             []TierInfo // normal policies
	UntrackedTiers    []TierInfo // doNotTrack policies
	PreDNATTiers      []TierInfo // preDNAT policies (ingress only: EgressPolicies is always empty)
	ForwardTiers      []TierInfo // applyOnForward policies
}

// HostEndpointUpdate adds or changes one of this host's endpoints.
type HostEndpointUpdate struct{ Endpoint *HostEndpoint }

// HostEndpointRemove removes one of this host's endpoints (by object name).
type HostEndpointRemove struct{ Name string }

// IPPool is a pool as the dataplane needs it (NAT outgoing, encapsulation, the all-pools set).
type IPPool struct {
	Name             string
	CIDR             netip.Prefix
	NATOutgoing      bool
	VXLANMode        string // Never, Always, CrossSubnet
	IPIPMode         string // Never, Always, CrossSubnet
	Type             PoolType
	Disabled         bool
	DisableBGPExport bool
}

// IPPoolUpdate adds or changes a pool.
type IPPoolUpdate struct{ Pool *IPPool }

// IPPoolRemove removes a pool (by name).
type IPPoolRemove struct{ Name string }

// HostMetadata is another (or this) host's addresses, for the all-hosts set and same-subnet checks.
type HostMetadata struct {
	Hostname string
	IPv4Addr netip.Prefix // bgp.ipv4Address with its subnet
	IPv6Addr netip.Prefix
	Labels   map[string]string
	// WireGuard: the public keys the host published (status.wireguardPublicKey, ...V6; "" = none)
	// and its tunnel addresses (spec.wireguard.interfaceIPv4Address, ...IPv6Address).
	WireguardPublicKey, WireguardPublicKeyV6 string
	WireguardAddrV4, WireguardAddrV6         netip.Addr
}

// HostMetadataUpdate adds or changes a host.
type HostMetadataUpdate struct{ Host *HostMetadata }

// HostMetadataRemove removes a host.
type HostMetadataRemove struct{ Hostname string }

// RouteType says where a routed prefix lives.
type RouteType int

// Route types.
const (
	RouteRemoteWorkload RouteType = iota // a block affine to another host (or an IP borrowed by one)
	RouteLocalWorkload                   // a block affine to this host
	RouteRemoteTunnel                    // another host's tunnel address
)

// Route is a prefix felix may need to program, marked with the type of its pool as Project
// Calico's route resolver marks it: the dataplane routes those of the pool types it programs
// (ClusterRoutes; VXLAN pools' always) and leaves the others to BIRD.
type Route struct {
	Dst         netip.Prefix
	Type        RouteType
	DstNode     string
	DstNodeIP   netip.Addr // the owning host's address (bgp.ipv4Address / ipv6Address)
	PoolName    string     // "" when no pool contains Dst
	PoolType    PoolType   // of the pool containing Dst (PoolNone without a pool)
	VXLANMode   string     // of the pool containing Dst: Never, Always, CrossSubnet ("" without a pool)
	IPIPMode    string     // likewise
	NATOutgoing bool
	SameSubnet  bool // the owning host is in one of this host's subnets (for CrossSubnet)
}

// RouteUpdate adds or changes a route.
type RouteUpdate struct{ Route *Route }

// RouteRemove removes a route.
type RouteRemove struct{ Dst netip.Prefix }

// VTEP is another host's VXLAN tunnel endpoint. It is sent for each host (other than this one)
// whose Node has a tunnel address of the family and a bgp address of the same family.
type VTEP struct {
	Node             string
	MAC              string
	TunnelAddr       netip.Addr // ipv4VXLANTunnelAddr (or ipv6VXLANTunnelAddr)
	ParentDeviceAddr netip.Addr // the host's underlay address
}

// VTEPUpdate adds or changes a remote VTEP (IPv4 and IPv6 VTEPs are separate updates).
type VTEPUpdate struct{ VTEP *VTEP }

// VTEPRemove removes a remote VTEP of one family.
type VTEPRemove struct {
	Node string
	IPv6 bool
}

// ServiceCIDRsUpdate carries the service CIDRs of BGPConfiguration default (serviceClusterIPs,
// serviceExternalIPs, serviceLoadBalancerIPs, in that order, as written) whenever they change:
// felix's service loop prevention blocks forwarded traffic to them.
type ServiceCIDRsUpdate struct{ CIDRs []string }

// InSync is sent once, in the first batch after the syncer's initial snapshot was processed.
type InSync struct{}

func (ConfigUpdate) isUpdate()           {}
func (IPSetUpdate) isUpdate()            {}
func (IPSetDelta) isUpdate()             {}
func (IPSetRemove) isUpdate()            {}
func (ActivePolicyUpdate) isUpdate()     {}
func (ActivePolicyRemove) isUpdate()     {}
func (ActiveProfileUpdate) isUpdate()    {}
func (ActiveProfileRemove) isUpdate()    {}
func (WorkloadEndpointUpdate) isUpdate() {}
func (WorkloadEndpointRemove) isUpdate() {}
func (HostEndpointUpdate) isUpdate()     {}
func (HostEndpointRemove) isUpdate()     {}
func (IPPoolUpdate) isUpdate()           {}
func (IPPoolRemove) isUpdate()           {}
func (HostMetadataUpdate) isUpdate()     {}
func (HostMetadataRemove) isUpdate()     {}
func (RouteUpdate) isUpdate()            {}
func (RouteRemove) isUpdate()            {}
func (VTEPUpdate) isUpdate()             {}
func (VTEPRemove) isUpdate()             {}
func (InSync) isUpdate()                 {}
func (ServiceCIDRsUpdate) isUpdate()     {}
