package confd

// Model is what the templates render: the BGP configuration of one node, computed by Build from
// the datastore. Everything in it is already validated and canonical (CIDRs masked, names safe
// for BIRD), so templates only lay it out.
type Model struct {
	NodeName string
	// NodeFound is false when this node has no Node object yet (nothing to peer with).
	NodeFound bool
	RouterID  string
	ASNumber  string
	// ListenPort is the BGP port this node listens on (0: BIRD's default, 179).
	ListenPort uint16
	// LogSeverity is the effective BGPConfiguration logSeverityScreen, lower case ("info").
	LogSeverity string
	// Debug is BIRD's per-protocol debug setting: "all", "{ states }" or "" (off).
	Debug string
	// LogClasses is what BIRD logs to stderr: "all" or a "{ ... }" list of classes.
	LogClasses string
	// DirectInterfaces is the interface pattern list of protocol direct.
	DirectInterfaces string
	// ClusterID is this node's route reflector cluster ID ("" if it is not a route reflector).
	ClusterID string
	// MeshEnabled reports whether the node-to-node mesh applies to this node.
	MeshEnabled bool
	// StrictBind binds BGP sockets to the node address (BGPConfiguration bindMode NodeIP).
	StrictBind bool
	// Families are IPv4 then IPv6.
	Families []*Family
	// Vars are the [vars] of confd.toml (BGP timers, for example).
	Vars map[string]string
	// Warnings are problems with the datastore contents, rendered as comments and logged.
	Warnings []string
}

// Family is everything about one IP family. BIRD 2 runs both in one daemon: each family has its
// own table (master4, master6), kernel and static protocols, filters and BGP sessions.
type Family struct {
	Version int    // 4 or 6
	Channel string // "ipv4" or "ipv6"
	// Suffix names this family's symbols: calico_export_to_bgp_peers_v4.
	Suffix string
	// FilterSuffix names BGPFilter functions as Project Calico does: 'bgp_<name>_importFilterV4'.
	FilterSuffix string
	// NodeIP is this node's BGP address in this family ("" = no BGP sessions in this family).
	NodeIP string
	// Blocks are this host's IPAM blocks (blackhole routes, aggregated on export).
	Blocks []Block
	// StaticRoutes are service CIDRs to advertise (blackholes never programmed into the kernel).
	StaticRoutes []string
	// Pools are the IP pools of this family.
	Pools []Pool
	// Communities are the BGP communities added to exported prefixes.
	Communities []CommunityRule
	// Filters are the BIRD functions of the BGPFilters that have rules for this family.
	Filters []FilterFunc
	// Peers are this node's BGP sessions in this family, sorted by name.
	Peers []Peer
}

// Block is one of this host's IPAM blocks.
type Block struct {
	CIDR  string
	State string // affinity state: confirmed, pending, pendingDeletion
	// Aggregate: export the block and nothing beneath it (confirmed affinities).
	Aggregate bool
	// Blackhole: install a blackhole route for it (everything but single addresses).
	Blackhole bool
}

// Pool is one IP pool.
type Pool struct {
	Name string
	CIDR string
	// Export: routes in the pool are exported to BGP peers (false: disableBGPExport).
	Export bool
	// ProgramKernel: BIRD programs routes in the pool into the kernel (false for VXLAN and IPIP
	// pools, whose routes felix programs).
	ProgramKernel bool
	// Reason explains the choices, for a comment.
	Reason string
}

// CommunityRule adds communities to exported routes within CIDR.
type CommunityRule struct {
	CIDR        string
	Communities []Community
}

// Community is one community value.
type Community struct {
	Large bool   // aa:nn:mm (bgp_large_community) rather than aa:nn (bgp_community)
	Tuple string // "(64512, 120)" or "(64512, 300, 100)"
}

// FilterFunc is one BIRD function generated from a BGPFilter's rules for one direction.
type FilterFunc struct {
	Name      string // the quoted BIRD symbol, e.g. 'bgp_my-filter_importFilterV4'
	Filter    string // the BGPFilter's name
	Direction string // "import" or "export"
	Rules     []FilterRule
}

// FilterRule is one rule: "if (Condition) then { Action; }", or just "Action;" with no condition.
type FilterRule struct {
	Condition string
	Action    string // "accept" or "reject"
}

// Peer types, as they prefix BIRD protocol names.
const (
	PeerMesh   = "Mesh"
	PeerGlobal = "Global"
	PeerNode   = "Node"
)

// Peer is one BGP session.
type Peer struct {
	Name    string // BIRD protocol name: Mesh_198_18_0_2, Global_198_18_0_254_port_1179, ...
	Type    string // PeerMesh, PeerGlobal or PeerNode
	Comment string // where it comes from
	IP      string
	Port    uint16 // 0: 179
	AS      string
	// SourceAddress is the local address of the TCP session ("" = let the kernel choose).
	SourceAddress string
	// Passive: wait for the peer to connect (one side of a mesh or Calico-to-Calico peering).
	Passive bool
	// RRClient and RRClusterID make this node a route reflector for the peer.
	RRClient    bool
	RRClusterID string
	Password    string
	// GracefulRestartTime is in seconds (0: BIRD's default).
	GracefulRestartTime int
	// NextHop is "", "self" or "keep".
	NextHop string
	// AllowLocalAS is BIRD's "allow local as N" (0: off).
	AllowLocalAS int
	// TTLSecurity is the hop count of GTSM (0: off).
	TTLSecurity int
	// ImportFilters and ExportFilters are BGPFilter functions called in order before the
	// defaults (import: accept; export: calico_export_to_bgp_peers, then reject).
	ImportFilters []string
	ExportFilters []string
}

// Var returns the confd.toml [vars] value name, or def when it is unset or empty.
func (m *Model) Var(name, def string) string {
	if v := m.Vars[name]; v != "" {
		return v
	}
	return def
}
