package dataplane

import (
	"net/netip"
	"regexp"
	"time"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/rules"
	"github.com/calico-host/calico-host/pkg/nft"
)

// Config is what the dataplane needs from felix's configuration, built by NewConfig: the values
// felix's parameter table parsed, in their types, and the values derived from them. The
// dataplane takes them as they are (New refuses a Config that lacks what NewConfig sets).
type Config struct {
	Hostname          string
	InterfacePrefixes []string // e.g. ["cali", "tap"]
	// InterfaceExclude matches the interfaces that are never host endpoints.
	InterfaceExclude []*regexp.Regexp
	IPv6Support      bool

	DefaultEndpointToHostAction    rules.Action
	FailsafeInbound                []rules.ProtoPort
	FailsafeOutbound               []rules.ProtoPort
	DisableConntrackInvalidCheck   bool
	AllowVXLANPacketsFromWorkloads bool
	AllowIPIPPacketsFromWorkloads  bool
	FilterDenyReject               bool // NftablesFilterDenyAction REJECT
	LogPrefix                      string
	// FlowLogs puts NFLOG statements into the verdict rules and keeps their prefix table
	// (config.Config.FlowLogsOn; see WithFlowLogTables).
	FlowLogs bool
	MarkMask uint32

	NATOutgoingAddress netip.Addr
	NATPortRange       nft.PortRange // zero: the kernel's choice
	// NATOutgoingExcludeHosts (NATOutgoingExclusions IPPoolsAndHostIPs): NAT outgoing also leaves
	// traffic to any host's address alone.
	NATOutgoingExcludeHosts bool
	// ServiceLoopPrevention is what happens to forwarded traffic to the service CIDRs of
	// BGPConfiguration default.
	ServiceLoopPrevention rules.LoopAction

	// WorkloadSourceSpoofing (FelixConfiguration workloadSourceSpoofing: Any) lets workload
	// endpoints use allowSpoofedSourcePrefixes; without it such an endpoint is treated as missing.
	WorkloadSourceSpoofing bool
	// FloatingIPs (floatingIPs: Enabled) programs the ipNATs of every workload endpoint; without it
	// only those of OpenStack endpoints.
	FloatingIPs bool

	// OpenStack special cases (config.Config.OpenStack).
	OpenStack    bool
	MetadataAddr netip.Addr
	MetadataPort uint16

	NftablesRefreshInterval  time.Duration // full resync period
	RouteRefreshInterval     time.Duration
	InterfaceRefreshInterval time.Duration

	Routes RouteConfig

	VXLANEnabled   bool
	VXLANVNI       int
	VXLANPort      int
	VXLANMTU       int // 0 = host MTU - 50
	VXLANMTUV6     int // 0 = host MTU - 70
	VXLANTunnelMAC string

	// MTUIfacePattern selects the interfaces whose smallest MTU is the host MTU.
	MTUIfacePattern *regexp.Regexp
	// IPForwardingDisabled (IPForwarding: Disabled) leaves the host's forwarding sysctls alone.
	IPForwardingDisabled bool

	// IPIPEnabled forces tunl0 on or off; nil: on when an IPv4 pool has ipipMode Always or
	// CrossSubnet (Project Calico's IpInIpEnabled).
	IPIPEnabled    *bool
	IPIPMTU        int        // 0 = host MTU - 20
	IPIPTunnelAddr netip.Addr // overrides the Node's ipv4IPIPTunnelAddr
	MTUFile        string     // where the workload MTU is written (DefaultMTUFile)
	// RequireMTUFile: New fails when it cannot write MTUFile (Project Calico's RequireMTUFile).
	RequireMTUFile bool

	Wireguard WireguardConfig

	// TableName names the nftables tables (`ip` and `ip6`), DefaultTable.
	TableName string
	// NetNS, when set, is the path of a network namespace to program instead of the current one
	// (used by tests and by the demo).
	NetNS string

	// LiveMigrationRouteConvergenceTime is how long routes to a workload that has just migrated
	// here keep the elevated priority after the migration ends.
	LiveMigrationRouteConvergenceTime time.Duration
}

// WireguardConfig is felix's WireGuard settings (Project Calico's Wireguard* parameters).
type WireguardConfig struct {
	Enabled, EnabledV6             bool
	InterfaceName, InterfaceNameV6 string
	ListeningPort, ListeningPortV6 int
	MTU, MTUV6                     int // 0 = host MTU - 60 (IPv6: - 80)
	RoutingRulePriority            int
	RoutingTable, RoutingTableV6   int           // the first two of RouteTableRange(s), as Calico allocates them (-1: none left)
	PersistentKeepAlive            time.Duration // 0 = off
	KeyFile, KeyFileV6             string        // private keys (wireguard.DefaultKeyFile[V6])
	ThreadingEnabled               bool          // threaded NAPI on kernel devices (WireguardThreadingEnabled)
	HostEncryption                 bool          // WireguardHostEncryptionEnabled: host-to-host traffic too
}

// RouteConfig is felix's route settings (Project Calico's DeviceRoute*, RemoveExternalRoutes and
// *NormalRoutePriority parameters; see package routes for what they mean to ownership).
type RouteConfig struct {
	// DeviceProtocol is the protocol of routes to local workloads and through the VXLAN devices.
	// Other routes carry 80 while it is 3 (boot), else it too.
	DeviceProtocol int
	// SourceAddr, SourceAddrV6 are the src of every main-table route of their family (invalid: none).
	SourceAddr, SourceAddrV6 netip.Addr
	// SyncDisabled (RouteSyncDisabled): program no route and no host-side workload address, as
	// Project Calico's felix does then (policy only).
	SyncDisabled bool
	// KeepExternal (RemoveExternalRoutes false): routes through workload interfaces are ours
	// only when they carry one of our protocols.
	KeepExternal bool
	// NormalPriority, NormalPriorityV6 are the metrics of routes to local workloads.
	NormalPriority, NormalPriorityV6 int
	// ElevatedPriority, ElevatedPriorityV6 are the metrics of routes to a workload that has just
	// migrated here (live migration), for LiveMigrationRouteConvergenceTime.
	ElevatedPriority, ElevatedPriorityV6 int
	// ClusterRoutes (ProgramClusterRoutes) are the pools besides VXLAN ones whose cluster routes
	// felix programs (remote blocks, blackholes for local ones); BIRD is left the others.
	ClusterRoutes calc.ClusterRoutes
}

// DefaultTable is the name of felix's nftables tables, as Project Calico names them.
const DefaultTable = "calico"

// EndpointStatus is reported for each local endpoint after each apply that changed its status
// (or, for a workload, its interface name, MAC or addresses).
type EndpointStatus struct {
	Workload     *calc.WorkloadEndpointID // set for workload endpoints
	HostEndpoint string                   // set for host endpoints (object name)
	Status       string                   // "up", "down" or "error"; "" = gone (delete its status key)
	// Endpoint is the workload endpoint as programmed (nil for host endpoints and when gone).
	// Shared with the dataplane: read only.
	Endpoint *calc.WorkloadEndpoint
}
