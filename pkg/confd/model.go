package confd

import (
	"net/netip"
	"regexp"
)

// Model is what the templates render: the BGP configuration of one node, computed by Build from
// the datastore. Every value in it is typed and already checked (addresses and prefixes are
// net/netip values, names are Symbols, strings are Texts or escaped Comments, see syntax.go), so
// templates only lay it out.
type Model struct {
	NodeName Comment
	// NodeFound is false when this node has no Node object yet (nothing to peer with).
	NodeFound bool
	RouterID  netip.Addr
	ASNumber  ASN
	// ListenPort is the BGP port this node listens on (0: BIRD's default, 179).
	ListenPort uint16
	// LogSeverity is the effective BGPConfiguration logSeverityScreen, lower case ("info").
	LogSeverity string
	// Debug is BIRD's per-protocol debug setting: "all", "{ states }" or empty (off).
	Debug Syntax
	// LogClasses is what BIRD logs to stderr: "all" or a "{ ... }" list of classes.
	LogClasses Syntax
	// DirectInterfaces is the interface pattern list of protocol direct: the ignored interfaces,
	// workload (cali*) and kube-ipvs interfaces excluded.
	DirectInterfaces Syntax
	// ClusterID is this node's route reflector cluster ID (invalid if it is not a reflector).
	ClusterID netip.Addr
	// MeshEnabled reports whether the node-to-node mesh applies to this node.
	MeshEnabled bool
	// BIRDProgramsIPIP: BGPConfiguration programClusterRoutes makes BIRD program IPIP pools'
	// routes through tunl0 (Enabled, EnabledIPIPOnly); otherwise felix programs them, and routes
	// through tunl0 are felix's tunnel routes, never exported to iBGP peers.
	BIRDProgramsIPIP bool
	// StrictBind binds BGP sockets to the node address (BGPConfiguration bindMode NodeIP): each
	// session's listening socket is bound to its source address, which is then always set.
	StrictBind bool
	// Families are IPv4 then IPv6.
	Families []*Family
	// Vars are the [vars] of confd.toml (BGP timers, for example); see Var.
	Vars map[string]string
	// Warnings are problems with the datastore contents, rendered as comments and logged.
	Warnings []Comment
}

// Family is everything about one IP family. BIRD 2 runs both in one daemon: each family has its
// own table (master4, master6), kernel and static protocols, filters and BGP sessions.
type Family struct {
	Version int    // 4 or 6
	Channel string // "ipv4" or "ipv6"
	// Suffix names this family's symbols: calico_export_to_bgp_peers_v4.
	Suffix string
	// NodeIP is this node's BGP address in this family (invalid: no BGP sessions in this family).
	NodeIP netip.Addr
	// Blocks are this host's IPAM blocks (blackhole routes, aggregated on export).
	Blocks []Block
	// ServiceRanges are the service CIDRs of the global BGPConfiguration: BGP routes within
	// them never go into the kernel.
	ServiceRanges []netip.Prefix
	// StaticRoutes are the service CIDRs this node advertises (blackholes never programmed into
	// the kernel): ServiceRanges, unless the node is excluded from service advertisement.
	StaticRoutes []netip.Prefix
	// ReflectedServices are the service load balancer and external IP ranges whose routes a
	// route reflector passes on (whatever their length; empty unless this node is a reflector).
	ReflectedServices []netip.Prefix
	// Pools are the IP pools of this family.
	Pools []Pool
	// KernelPoolRules: the kernel filter has the pools' rules (see Build: not for IPv4 on a
	// node without an IPv4 address, as Project Calico's confd).
	KernelPoolRules bool
	// Communities are the BGP communities added to exported prefixes.
	Communities []CommunityRule
	// Filters are the BIRD functions of the BGPFilters that have rules for this family.
	Filters []FilterFunc
	// Peers are this node's BGP sessions in this family, sorted by name.
	Peers []Peer
	// PeerRoutes are the static routes to peers through their BGPPeer's reachableBy gateway.
	PeerRoutes []PeerRoute
	// WireguardPeers are the BGP addresses of the nodes felix reaches through WireGuard (when
	// this node runs it too): routes via them are not programmed by BIRD.
	WireguardPeers []netip.Addr
	// NormalRoutePriority is the kernel metric of a route at normal priority (BGPConfiguration
	// default's ipv4/ipv6NormalRoutePriority, 1024 unless set). BGP routes go into the kernel at
	// this metric (or the one their LOCAL_PREF carries), and routes of this host with a lower
	// metric (elevated: a live-migration target) escape their block's aggregation.
	NormalRoutePriority RoutePriority
	// ElevatedLocalPref is the LOCAL_PREF above which a learned route is better than normal
	// priority (2147483647 - NormalRoutePriority): BIRD prefers it over its other sources.
	ElevatedLocalPref int64
}

// RoutePriority is a kernel route metric in Project Calico's range of route priorities.
type RoutePriority int64

// maxRoutePriority is BIRD's largest integer: LOCAL_PREF = maxRoutePriority - metric.
const maxRoutePriority = 2147483647

// routePriority is v when it is a valid priority (1 to 2147483646), else Project Calico's
// normal priority 1024.
func routePriority(v *int) RoutePriority {
	if v == nil || *v < 1 || *v >= maxRoutePriority {
		return 1024
	}
	return RoutePriority(*v)
}

// PeerRoute is a static route to a BGP peer (programmed into the kernel, not exported).
type PeerRoute struct {
	Dest    netip.Prefix
	Via     netip.Addr
	Comment Comment
}

// Block is one of this host's IPAM blocks.
type Block struct {
	CIDR netip.Prefix
	// State is the affinity state: "confirmed" (also for affinities without a state) or
	// "pendingDeletion" (pending affinities are not this host's blocks yet).
	State AffinityState
	// Aggregate: export the block and nothing beneath it (confirmed affinities).
	Aggregate bool
	// Blackhole: install a blackhole route for it (everything but single addresses).
	Blackhole bool
}

// AffinityState is one of Project Calico's block affinity states.
type AffinityState string

// Pool is one IP pool.
type Pool struct {
	Name Comment
	CIDR netip.Prefix
	// Export: routes in the pool are exported to BGP peers (false: disableBGPExport).
	Export bool
	// ProgramKernel: BIRD programs routes in the pool into the kernel (false for VXLAN pools,
	// and for the others that programClusterRoutes leaves to felix).
	ProgramKernel bool
	// Tunnel is how BIRD programs the BGP routes of an IPIP pool: TunnelAlways (through tunl0),
	// TunnelCrossSubnet (through tunl0 unless the next hop is in LocalSubnet, this node's IPv4
	// network) or "" (directly).
	Tunnel      string
	LocalSubnet netip.Prefix
	// Reason explains the choices, for a comment.
	Reason Comment
}

// Tunnel modes of a pool whose IPIP routes BIRD programs.
const (
	TunnelAlways      = "always"
	TunnelCrossSubnet = "crossSubnet"
)

// CommunityRule adds communities to exported routes within CIDR.
type CommunityRule struct {
	CIDR        netip.Prefix
	Communities []Community
}

// FilterFunc is one BIRD function generated from a BGPFilter's rules for one direction.
type FilterFunc struct {
	Name      Symbol  // e.g. 'bgp_my-filter_importFilterV4'
	Filter    Comment // the BGPFilter's name
	Direction string  // "import" or "export"
	// PeerTyped: a rule matches on the peer type, so the function takes the argument
	// "bool is_same_as" (the peer's AS is this node's), as Project Calico's do.
	PeerTyped bool
	// Rules are the function's statements, one per rule.
	Rules []Syntax
	// filter is the BGPFilter's name, as peers name it.
	filter string
}

// Peer types, as they prefix BIRD protocol names.
const (
	PeerMesh   = "Mesh"
	PeerGlobal = "Global"
	PeerNode   = "Node"
)

// Next hop modes of a session.
const (
	NextHopSelf = "self"
	NextHopKeep = "keep"
)

// Peer is one BGP session.
type Peer struct {
	Name    Symbol // BIRD protocol name: Mesh_198_18_0_2, Global_198_18_0_254_port_1179, ...
	Type    string // PeerMesh, PeerGlobal, PeerNode or PeerLocalWorkload
	Comment Comment
	IP      netip.Addr
	Port    uint16 // 0: 179
	AS      ASN
	// LocalAS is the AS this node uses on this session (BGPPeer localASNumber; 0: the node's).
	LocalAS ASN
	// KeepaliveTime is in seconds (0: BIRD's default, a third of the hold time).
	KeepaliveTime uint32
	// ReachableBy is the gateway of a static route to the peer (invalid: none).
	ReachableBy netip.Addr
	// SourceAddress is the local address of the TCP session (invalid: the kernel chooses).
	SourceAddress netip.Addr
	// Passive: wait for the peer to connect (one side of a mesh or Calico-to-Calico peering).
	Passive bool
	// RRClient and RRClusterID make this node a route reflector for the peer.
	RRClient    bool
	RRClusterID netip.Addr
	Password    *Text
	// GracefulRestartTime is in seconds (0: BIRD's default).
	GracefulRestartTime uint32
	// NextHop is "", NextHopSelf or NextHopKeep.
	NextHop string
	// CapPriority: the LOCAL_PREF of the routes the peer sends is capped at the normal route
	// priority's (ElevatedLocalPref), before any BGPFilter: a local workload cannot outrank the
	// host's own routes (it could send 2147483647, metric 0, ahead of the host's DHCP default).
	CapPriority bool
	// Internal: iBGP (the peer's AS is the one this node uses on the session). Routes felix
	// programs through tunnels (*.cali, *.calico, tunl0) are never exported to such a peer.
	Internal bool
	// AllowLocalAS is BIRD's "allow local as N" (0: off).
	AllowLocalAS uint32
	// TTLSecurity is the hop count of GTSM (0: off).
	TTLSecurity uint8
	// ImportFilters and ExportFilters are calls of BGPFilter functions, in order, before the
	// defaults (import: accept; export: calico_export_to_bgp_peers, then reject).
	ImportFilters []Syntax
	ExportFilters []Syntax
	// ImportNone and ExportNone: a BGPFilter the peer names cannot be applied in that direction,
	// so the session imports (exports) nothing rather than more than the filter allows.
	ImportNone bool
	ExportNone bool
}

// safeVar is what a [vars] value may be: a number, a list of numbers or a word.
var safeVar = regexp.MustCompile(`^[A-Za-z0-9_.,:-]{1,64}$`)

// Var returns the confd.toml [vars] value name, or def when it is unset, empty or not a plain
// token (Config.Validate refuses those).
func (m *Model) Var(name, def string) string {
	if v := m.Vars[name]; safeVar.MatchString(v) {
		return v
	}
	return def
}
