package config

import "strings"

// Kind is the type of a parameter's value.
type Kind int

// Kinds. The Config field of a parameter has the Go type noted here.
const (
	KindBool         Kind = iota // bool: true/false, 1/0, yes/no, y/n, t/f
	KindOptBool                  // *bool: unset (nil) means "decide automatically"
	KindInt                      // int, within Min..Max
	KindUint32                   // uint32, decimal or 0x hex
	KindString                   // string; "none" means empty
	KindOneOf                    // one of Choices (case-insensitive): the Go value of the choice
	KindSeconds                  // time.Duration: "30s", "1m" or plain seconds "30", "0.5"
	KindList                     // []string: comma-separated; "none" means empty
	KindPorts                    // []rules.ProtoPort: "tcp:22,udp:68,tcp:10.0.0.0/8:80,[fd00::/8]..."
	KindAddr                     // netip.Addr; "none" means unset
	KindPortRange                // nft.PortRange: "min:max" or a single port; unset is the zero range
	KindTableRanges              // []TableRange: "n-m[,n-m...]"; Max bounds the indices
	KindRegexp                   // *regexp.Regexp
	KindIfaceRegexps             // []*regexp.Regexp: comma-separated interface names (matched whole) or /regex/
)

var kindNames = map[Kind]string{
	KindBool: "bool", KindOptBool: "bool", KindInt: "int", KindUint32: "uint32", KindString: "string",
	KindOneOf: "one of", KindSeconds: "seconds", KindList: "list", KindPorts: "ports", KindAddr: "IP address",
	KindPortRange: "port range", KindTableRanges: "route table ranges", KindRegexp: "regular expression",
	KindIfaceRegexps: "interface names or /regex/",
}

func (k Kind) String() string { return kindNames[k] }

// Param describes one parameter. Its name is Project Calico's, and also the name of its field in
// Config unless Field says otherwise.
type Param struct {
	Name string
	// Field is the name of the Config field when it differs from Name.
	Field string
	// V3 is the FelixConfiguration JSON field when it is not Name with its first letter
	// lower-cased (Project Calico's confignamev1 renames and acronyms); see V3Field.
	V3      string
	Kind    Kind
	Default string // in the same syntax as the environment variable; "" = zero value
	// Restart means a change while running makes felix exit with ExitRestart so that systemd
	// restarts it with the new value; otherwise the change applies live.
	Restart bool
	// LocalOnly parameters are only read from the environment and the config file.
	LocalOnly bool
	// Main parameters are listed in --help and documented in the default felix.toml.
	Main bool
	// Choices are the legal values of a KindOneOf parameter, the Go value of each in its Config
	// field (one type for all).
	Choices []Choice
	// Min and Max bound KindInt values; Min (seconds) bounds KindSeconds values too.
	Min, Max int
	// Check, if set, validates a KindString value.
	Check func(string) error
	Doc   string
}

// FieldName is the name of the parameter's Config field.
func (p *Param) FieldName() string {
	if p.Field != "" {
		return p.Field
	}
	return p.Name
}

// V3Field is the parameter's FelixConfiguration JSON field ("" for local-only parameters).
func (p *Param) V3Field() string {
	switch {
	case p.LocalOnly:
		return ""
	case p.V3 != "":
		return p.V3
	}
	return strings.ToLower(p.Name[:1]) + p.Name[1:]
}

// EnvName is the parameter's environment variable (FELIX_ + the upper-cased name).
func (p *Param) EnvName() string { return envPrefix + upper(p.Name) }

const (
	defaultFailsafeIn  = "tcp:22,udp:68,tcp:179,tcp:2379,tcp:2380,tcp:5473,tcp:6443,tcp:6666,tcp:6667"
	defaultFailsafeOut = "udp:53,udp:67,tcp:179,tcp:2379,tcp:2380,tcp:5473,tcp:6443,tcp:6666,tcp:6667"
)

// Params is the parameter table, grouped by concern.
var Params = []Param{
	// Datastore connection and identity (local only).
	{Name: "DatastoreType", Kind: KindOneOf, Choices: texts("etcdv3"), Default: "etcdv3", Restart: true, LocalOnly: true,
		Doc: "Datastore type; calico-host supports only etcdv3."},
	{Name: "EtcdEndpoints", Kind: KindList, Restart: true, LocalOnly: true, Main: true,
		Doc: "Comma-separated etcd URLs. Overrides /etc/calico/datastore.toml and ETCD_ENDPOINTS."},
	{Name: "EtcdAddr", Kind: KindString, Default: "127.0.0.1:2379", Restart: true, LocalOnly: true,
		Doc: "host:port of etcd, used with EtcdScheme when EtcdEndpoints is not set and EtcdAddr is."},
	{Name: "EtcdScheme", Kind: KindOneOf, Choices: texts("http", "https"), Default: "http", Restart: true, LocalOnly: true,
		Doc: "Scheme used with EtcdAddr."},
	{Name: "EtcdCaFile", Kind: KindString, Restart: true, LocalOnly: true, Main: true, Doc: "CA certificate for etcd TLS."},
	{Name: "EtcdCertFile", Kind: KindString, Restart: true, LocalOnly: true, Main: true, Doc: "Client certificate for etcd TLS."},
	{Name: "EtcdKeyFile", Kind: KindString, Restart: true, LocalOnly: true, Main: true, Doc: "Client key for etcd TLS."},
	{Name: "FelixHostname", Kind: KindString, Restart: true, LocalOnly: true, Main: true, Check: checkHostname,
		Doc: "This host's node name (default: the OS hostname, lower-cased). Must match the Node and the workloads' node."},

	// Logging.
	{Name: "LogSeverityScreen", Kind: KindOneOf, Choices: logSeverities, Default: "Info", Main: true, Doc: "Log level of the messages felix writes to stderr (the journal)."},

	// Status reporting.
	{Name: "ReportingIntervalSecs", V3: "reportingInterval", Field: "ReportingInterval", Kind: KindSeconds, Default: "30", Main: true,
		Doc: "How often felix rewrites its agent status key in etcd; 0 disables status reporting."},
	{Name: "ReportingTTLSecs", V3: "reportingTTL", Field: "ReportingTTL", Kind: KindSeconds, Default: "90",
		Doc: "TTL of the lease on the agent status key: it disappears this long after felix dies."},
	{Name: "EndpointReportingEnabled", Kind: KindBool, Default: "false", Restart: true, Main: true,
		Doc: "Write per-endpoint status keys (up/down) to etcd; networking-calico turns this on."},
	{Name: "EndpointReportingDelaySecs", V3: "endpointReportingDelay", Field: "EndpointReportingDelay", Kind: KindSeconds, Default: "1",
		Doc: "Minimum time between two batches of endpoint status writes."},
	{Name: "EndpointStatusPathPrefix", Kind: KindString, Default: "/var/run/calico", Restart: true, Main: true,
		Doc: "Felix writes a JSON file per local workload endpoint whose policy is programmed to <prefix>/endpoint-status/ " +
			"(the CNI plugin's policy_setup_timeout_seconds waits for it); none disables."},
	{Name: "OpenstackRegion", Kind: KindString, Restart: true, Main: true, Check: checkRegion,
		Doc: "OpenStack region: status keys go under region-<name> instead of no-region."},

	// Health and metrics.
	{Name: "HealthEnabled", Kind: KindBool, Default: "false", Restart: true, Main: true,
		Doc: "Serve /liveness and /readiness on HealthHost:HealthPort."},
	{Name: "HealthHost", Kind: KindString, Default: "localhost", Restart: true, Doc: "Address of the health server."},
	{Name: "HealthPort", Kind: KindInt, Default: "9099", Min: 1, Max: 65535, Restart: true, Main: true, Doc: "Port of the health server."},
	{Name: "PrometheusMetricsEnabled", Kind: KindBool, Default: "false", Restart: true, Main: true,
		Doc: "Serve Prometheus metrics on PrometheusMetricsHost:PrometheusMetricsPort/metrics."},
	{Name: "PrometheusMetricsHost", Kind: KindString, Restart: true, Doc: "Address of the metrics server (empty: all addresses)."},
	{Name: "PrometheusMetricsPort", Kind: KindInt, Default: "9091", Min: 1, Max: 65535, Restart: true, Main: true,
		Doc: "Port of the metrics server."},
	{Name: "PrometheusGoMetricsEnabled", Kind: KindBool, Default: "true", Restart: true, Doc: "Include Go runtime metrics."},
	{Name: "PrometheusProcessMetricsEnabled", Kind: KindBool, Default: "true", Restart: true, Doc: "Include process metrics."},
	{Name: "PrometheusMetricsCertFile", Kind: KindString, Restart: true, Main: true,
		Doc: "Server certificate of the metrics server: set it and PrometheusMetricsKeyFile to serve HTTPS " +
			"(PrometheusMetricsCAFile is then required too, as in Project Calico)."},
	{Name: "PrometheusMetricsKeyFile", Kind: KindString, Restart: true, Main: true, Doc: "Private key of PrometheusMetricsCertFile."},
	{Name: "PrometheusMetricsCAFile", Kind: KindString, Restart: true, Main: true,
		Doc: "CA certificate that client certificates of the HTTPS metrics server are verified against."},
	{Name: "PrometheusMetricsClientAuth", Kind: KindOneOf, Choices: clientAuthTypes, Default: "NoClientCert", Restart: true, Main: true,
		Doc: "Whether HTTPS metrics clients must present a certificate (RequireAndVerifyClientCert: signed by PrometheusMetricsCAFile)."},

	// Debugging.
	{Name: "DebugMemoryProfilePath", Kind: KindString, Restart: true,
		Doc: "On SIGUSR1, write a heap profile to this file (\"<timestamp>\" is replaced by the time); empty: SIGUSR1 is ignored."},
	{Name: "DebugCPUProfilePath", Kind: KindString, Default: "/tmp/felix-cpu-<timestamp>.pprof", Restart: true, LocalOnly: true,
		Doc: "On SIGUSR2, write a 10-second CPU profile to this file (\"<timestamp>\" is replaced by the time); none: SIGUSR2 is ignored."},
	{Name: "DebugHost", Kind: KindString, Default: "localhost", Restart: true,
		Doc: "Address of the pprof debug server (unauthenticated: keep it on localhost)."},
	{Name: "DebugPort", Kind: KindInt, Default: "0", Min: 0, Max: 65535, Restart: true,
		Doc: "Port of the pprof debug server (/debug/pprof/); 0 disables it."},

	// Dataplane.
	{Name: "InterfacePrefix", Kind: KindList, Default: "cali", Restart: true, Main: true,
		Doc: "Comma-separated prefixes of workload interfaces (\"cali,tap\" for OpenStack)."},
	{Name: "InterfaceExclude", Kind: KindIfaceRegexps, Default: "kube-ipvs0", Restart: true,
		Doc: "Interfaces (names or /regex/) that are never host endpoints; a value with an entry that is neither is ignored whole, as in Project Calico."},
	{Name: "IPv6Support", V3: "ipv6Support", Kind: KindBool, Default: "true", Restart: true, Main: true, Doc: "Program IPv6 as well as IPv4. false leaves IPv6 alone, as Project Calico does: not policed, not NATed, no IPv6 routes, sysctls or VXLAN device."},
	{Name: "DefaultEndpointToHostAction", Kind: KindOneOf, Choices: endpointToHostActions, Default: "DROP",
		Restart: true, Main: true, Doc: "What happens to workload traffic to the host after workload egress policy."},
	{Name: "FailsafeInboundHostPorts", Kind: KindPorts, Default: defaultFailsafeIn, Restart: true, Main: true,
		Doc: "Ports always open to the host despite host endpoint policy: [proto:][net:]port, comma-separated, or none."},
	{Name: "FailsafeOutboundHostPorts", Kind: KindPorts, Default: defaultFailsafeOut, Restart: true, Main: true,
		Doc: "Ports the host may always connect to despite host endpoint policy."},
	{Name: "DisableConntrackInvalidCheck", Kind: KindBool, Default: "false", Restart: true,
		Doc: "Do not drop packets conntrack considers invalid."},
	{Name: "AllowVXLANPacketsFromWorkloads", Kind: KindBool, Default: "false", Restart: true,
		Doc: "Let workloads send VXLAN-encapsulated packets."},
	{Name: "AllowIPIPPacketsFromWorkloads", Kind: KindBool, Default: "false", Restart: true,
		Doc: "Let workloads send IP-in-IP packets."},
	{Name: "NftablesFilterDenyAction", Field: "FilterDenyReject", Kind: KindOneOf, Choices: denyActions, Default: "DROP", Restart: true,
		Doc: "How policy denies packets."},
	{Name: "LogPrefix", Kind: KindString, Default: "calico-packet", Restart: true, Doc: "Prefix of policy Log rules."},
	{Name: "NftablesMarkMask", Kind: KindUint32, Default: "0xffff0000", Restart: true, Check: checkMarkMask,
		Doc: "Packet mark bits felix may use."},
	{Name: "NATOutgoingAddress", V3: "natOutgoingAddress", Kind: KindAddr, Restart: true, Doc: "Source address for NAT outgoing (default: masquerade)."},
	{Name: "NATPortRange", V3: "natPortRange", Kind: KindPortRange, Restart: true, Doc: "Source ports for NAT outgoing TCP and UDP, min:max (with VXLAN on, UDP never gets VXLANPort)."},
	{Name: "NATOutgoingExclusions", Field: "NATOutgoingExcludeHosts", V3: "natOutgoingExclusions", Kind: KindOneOf, Choices: natExclusions,
		Default: "IPPoolsOnly", Restart: true, Main: true,
		Doc: "Destinations NAT outgoing (natOutgoing pools) leaves alone: the IP pools, or the pools and the address of every Calico host (IPPoolsAndHostIPs)."},
	{Name: "ServiceLoopPrevention", Kind: KindOneOf, Choices: loopActions, Default: "Drop", Restart: true, Main: true,
		Doc: "What happens to forwarded traffic to the service CIDRs of BGPConfiguration default (serviceClusterIPs, " +
			"serviceExternalIPs, serviceLoadBalancerIPs) that no local rule handled: Drop, Reject, or Disabled (routed, perhaps in a loop)."},
	{Name: "WorkloadSourceSpoofing", Kind: KindOneOf, Choices: spoofingChoices, Default: "Disabled", Restart: true,
		Doc: "Any lets workload endpoints use allowSpoofedSourcePrefixes; with Disabled a workload endpoint that asks for it " +
			"is treated as missing (its traffic is dropped), as Project Calico's felix does."},
	{Name: "FloatingIPs", Kind: KindOneOf, Choices: enabledDisabled, Default: "Disabled", Restart: true,
		Doc: "Enabled programs the ipNATs (floating IPs) of every workload endpoint; with Disabled only those of " +
			"OpenStack endpoints (orchestrator openstack) are programmed, as Project Calico's felix does."},
	{Name: "MetadataAddr", Kind: KindAddr, Default: "127.0.0.1", Restart: true,
		Doc: "OpenStack metadata server address that 169.254.169.254:80 is DNATed to."},
	{Name: "MetadataPort", Kind: KindInt, Default: "8775", Min: 1, Max: 65535, Restart: true, Doc: "OpenStack metadata server port."},
	{Name: "NftablesRefreshInterval", Kind: KindSeconds, Default: "180", Restart: true,
		Doc: "Period of the full nftables resync (drift repair)."},
	{Name: "RouteRefreshInterval", Kind: KindSeconds, Default: "90", Restart: true, Doc: "Period of the full route resync."},
	{Name: "InterfaceRefreshInterval", Kind: KindSeconds, Default: "90", Restart: true,
		Doc: "Period of the full interface rescan."},
	{Name: "DataplaneNetNS", Kind: KindString, Restart: true, LocalOnly: true,
		Doc: "Path of a network namespace (/run/netns/NAME) to program instead of felix's own; for tests and demos."},

	// Routes (Project Calico's meanings: see package routes).
	{Name: "DeviceRouteProtocol", Kind: KindInt, Default: "3", Min: 1, Max: 255, Restart: true, Main: true,
		Doc: "Route protocol of the routes to local workloads and through the VXLAN devices. While it is 3 (boot), felix's " +
			"other routes carry 80 and a boot route is felix's only through a workload interface; otherwise every route " +
			"carries it. Routes carrying 80 are always felix's."},
	{Name: "DeviceRouteSourceAddress", Kind: KindAddr, Restart: true, Main: true, Check: checkIPv4,
		Doc: "IPv4 source address (src) of felix's IPv4 routes in the main table; none: the kernel chooses. It must be one of the host's addresses."},
	{Name: "DeviceRouteSourceAddressIPv6", Kind: KindAddr, Restart: true, Main: true, Check: checkIPv6,
		Doc: "IPv6 source address (src) of felix's IPv6 routes in the main table; none: the kernel chooses."},
	{Name: "RemoveExternalRoutes", Kind: KindBool, Default: "true", Restart: true, Main: true,
		Doc: "Remove every route through a workload interface that felix does not want (but BIRD's, learnt from a workload " +
			"peering with the host); false: only those carrying DeviceRouteProtocol (or 80), so that routes of your own need another protocol."},
	{Name: "RouteSyncDisabled", V3: "routeSyncDisabled", Kind: KindBool, Default: "false", Restart: true,
		Doc: "Program no route (main table, VXLAN, IPIP, WireGuard table) and no host-side workload address: policy only, " +
			"routes being the job of something else. Routes already programmed are left as they are."},
	{Name: "ProgramClusterRoutes", Kind: KindOneOf, Choices: clusterRouteChoices, Default: "EnabledIPIPOnly", Restart: true, Main: true,
		Doc: "Which IP pools' cluster routes (to other hosts' blocks, blackholes for this host's) felix programs, besides " +
			"VXLAN pools' (always felix's): Enabled, both IPIP and unencapsulated pools'; EnabledIPIPOnly, IPIP pools'; " +
			"EnabledNoEncapOnly, unencapsulated pools' (via the other host's address on the interface holding this host's " +
			"address, onlink); Disabled, none. The others are left to BIRD: keep it consistent with BGPConfiguration " +
			"programClusterRoutes (both programming a kind fight over the routes, neither leaves none; felix warns)."},
	{Name: "RouteSource", Kind: KindOneOf, Choices: routeSources, Default: "CalicoIPAM", Restart: true, Main: true,
		Doc: "Where routes to other hosts' workloads come from: CalicoIPAM, their IPAM blocks (and borrowed addresses); " +
			"WorkloadIPs, the addresses of their workload endpoints."},
	{Name: "IPv4NormalRoutePriority", V3: "ipv4NormalRoutePriority", Kind: KindInt, Default: "1024", Min: 1, Max: 2147483646,
		Restart: true, Main: true, Doc: "Metric of the IPv4 routes to local workloads."},
	{Name: "IPv6NormalRoutePriority", V3: "ipv6NormalRoutePriority", Kind: KindInt, Default: "1024", Min: 1, Max: 2147483646,
		Restart: true, Main: true, Doc: "Metric of the IPv6 routes to local workloads."},
	{Name: "IPv4ElevatedRoutePriority", V3: "ipv4ElevatedRoutePriority", Kind: KindInt, Default: "512", Min: 1, Max: 2147483646,
		Restart: true, Main: true, Doc: "Metric of the IPv4 routes to a workload that has just live-migrated to this host " +
			"(OpenStack LiveMigration), from its first gratuitous ARP or RARP until LiveMigrationRouteConvergenceTime after the migration."},
	{Name: "IPv6ElevatedRoutePriority", V3: "ipv6ElevatedRoutePriority", Kind: KindInt, Default: "512", Min: 1, Max: 2147483646,
		Restart: true, Main: true, Doc: "Metric of the IPv6 routes to a workload that has just live-migrated to this host."},
	{Name: "LiveMigrationRouteConvergenceTime", Kind: KindSeconds, Default: "30", Restart: true, Main: true,
		Doc: "How long the routes to a workload that has live-migrated to this host keep the elevated priority after the " +
			"migration ends (its LiveMigration is deleted), so that the routes of the source host are gone everywhere first."},

	// Flow logs (docs/flowlogs.md): on when FlowLogsGoldmaneServer is set, FlowLogsLocalReporter is Enabled or
	// FlowLogsFileEnabled is true.
	{Name: "FlowLogsFlushInterval", Kind: KindSeconds, Default: "300", Min: 1, Restart: true, Main: true,
		Doc: "Period over which flows are aggregated before they are written and sent (at least 1 s)."},
	{Name: "FlowLogsGoldmaneServer", Kind: KindString, Restart: true, Main: true, Check: checkHostPort,
		Doc: "host:port of a Goldmane server to stream flows to (turns flow logs on); with TyphaCertFile, TyphaKeyFile " +
			"and TyphaCAFile set, over mutual TLS, as Project Calico's felix does, else in plaintext."},
	{Name: "FlowLogsLocalReporter", Kind: KindOneOf, Choices: enabledDisabled, Default: "Disabled", Restart: true, Main: true,
		Doc: "Enabled also streams flows, in plaintext, to the local socket /var/run/calico/flows/flows.sock while it " +
			"exists (turns flow logs on)."},
	{Name: "FlowLogsPolicyEvaluationMode", Field: "FlowLogsEvaluateStaged", Kind: KindOneOf, Choices: evaluationModes,
		Default: "Continuous", Restart: true, Main: true,
		Doc: "Continuous: flows carry the verdicts staged policies would give (policies.pending); None: no pending " +
			"verdicts (evaluated for local workload endpoints)."},
	{Name: "FlowLogsCollectorDebugTrace", Kind: KindBool, Default: "false", Restart: true,
		Doc: "Log every packet, path and update of the flow collector at trace level (with LogSeverityScreen Trace)."},
	{Name: "FlowLogsFileEnabled", Kind: KindBool, Default: "false", Restart: true, LocalOnly: true, Main: true,
		Doc: "Write flows as JSON lines to FlowLogsFileDirectory/flows.log (turns flow logs on). Ours, named as Calico Enterprise's."},
	{Name: "FlowLogsFileDirectory", Kind: KindString, Default: "/var/log/calico/flowlogs", Restart: true, LocalOnly: true,
		Main: true, Check: checkAbsPath, Doc: "Directory of flows.log and its rotated files flows.log.1, .2, ..."},
	{Name: "FlowLogsFileMaxFiles", Kind: KindInt, Default: "5", Min: 1, Max: 1000, Restart: true, LocalOnly: true, Main: true,
		Doc: "Rotated flow log files kept besides flows.log."},
	{Name: "FlowLogsFileMaxFileSizeMB", Kind: KindInt, Default: "100", Min: 1, Max: 1 << 20, Restart: true, LocalOnly: true,
		Main: true, Doc: "Size in MiB that flows.log is rotated before it passes."},
	{Name: "TyphaCertFile", Kind: KindString, Restart: true, LocalOnly: true, Main: true,
		Doc: "Client certificate felix presents to the Goldmane server (Typha is not used: only for FlowLogsGoldmaneServer)."},
	{Name: "TyphaKeyFile", Kind: KindString, Restart: true, LocalOnly: true, Main: true, Doc: "Private key of TyphaCertFile."},
	{Name: "TyphaCAFile", Kind: KindString, Restart: true, LocalOnly: true, Main: true,
		Doc: "CA certificate the Goldmane server's certificate is verified against."},

	// VXLAN.
	{Name: "VXLANEnabled", V3: "vxlanEnabled", Kind: KindOptBool, Restart: true, Main: true,
		Doc: "Force the VXLAN device on or off (default: on when an IP pool has vxlanMode Always or CrossSubnet)."},
	{Name: "VXLANVNI", V3: "vxlanVNI", Kind: KindInt, Default: "4096", Min: 1, Max: 1<<24 - 1, Restart: true, Doc: "VXLAN network identifier."},
	{Name: "VXLANPort", V3: "vxlanPort", Kind: KindInt, Default: "4789", Min: 1, Max: 65535, Restart: true, Doc: "VXLAN UDP port."},
	{Name: "VXLANMTU", V3: "vxlanMTU", Kind: KindInt, Default: "0", Min: 0, Max: 65535, Restart: true,
		Doc: "MTU of vxlan.calico; 0 = host MTU - 50."},
	{Name: "VXLANMTUV6", V3: "vxlanMTUV6", Kind: KindInt, Default: "0", Min: 0, Max: 65535, Restart: true,
		Doc: "MTU of vxlan-v6.calico; 0 = host MTU - 70."},

	{Name: "IPForwarding", Field: "IPForwardingDisabled", V3: "ipForwarding", Kind: KindOneOf, Choices: forwardingChoices, Default: "Enabled", Restart: true,
		Doc: "Enabled: felix enables IPv4 (and, with IPv6Support, IPv6) forwarding; Disabled leaves the host's setting alone (hosts with host endpoints only)."},

	{Name: "MTUIfacePattern", V3: "mtuIfacePattern", Kind: KindRegexp, Default: `^((en|wl|ww|sl|ib)[Pcopsvx].*|(eth|wlan|wwan).*)`,
		Restart: true, Main: true,
		Doc: "Regular expression of the up interfaces whose smallest MTU is the host MTU (1460 when none matches). Tunnel devices " +
			"derive their MTU from it, and so does the workload MTU felix writes to /var/lib/calico/mtu for the CNI plugin: " +
			"the smallest MTU of the enabled encapsulations (IPIP, VXLAN, VXLAN IPv6, WireGuard, WireGuard IPv6; each its *MTU " +
			"parameter, else the host MTU less 20, 50, 70, 60 or 80), or the host MTU when none is enabled."},

	// IPIP.
	{Name: "IpInIpEnabled", Field: "IPIPEnabled", V3: "ipipEnabled", Kind: KindOptBool, Restart: true,
		Doc: "Force the IPIP device tunl0 on or off (default: on when an IPv4 pool has ipipMode Always or CrossSubnet)."},
	{Name: "RequireMTUFile", V3: "requireMTUFile", Kind: KindBool, Default: "false", Restart: true,
		Doc: "Refuse to start when the workload MTU file (/var/lib/calico/mtu) cannot be written."},
	{Name: "IpInIpMtu", Field: "IPIPMTU", V3: "ipipMTU", Kind: KindInt, Default: "0", Min: 0, Max: 65535, Restart: true,
		Doc: "MTU of tunl0 and of the routes through it; 0 = host MTU - 20."},
	{Name: "IpInIpTunnelAddr", Field: "IPIPTunnelAddr", Kind: KindAddr, Restart: true, LocalOnly: true,
		Doc: "Address of tunl0 (default: this host's Node spec.bgp.ipv4IPIPTunnelAddr, allocated by calico-startup)."},

	// WireGuard.
	{Name: "WireguardEnabled", Kind: KindBool, Default: "false", Restart: true, Main: true,
		Doc: "Encrypt IPv4 workload traffic between hosts with WireGuard (peers: hosts that published a public key)."},
	{Name: "WireguardEnabledV6", Kind: KindBool, Default: "false", Restart: true, Main: true, Doc: "Encrypt IPv6 workload traffic between hosts with WireGuard."},
	{Name: "WireguardListeningPort", Kind: KindInt, Default: "51820", Min: 1, Max: 65535, Restart: true, Main: true, Doc: "UDP port of the IPv4 WireGuard device."},
	{Name: "WireguardListeningPortV6", Kind: KindInt, Default: "51821", Min: 1, Max: 65535, Restart: true, Main: true, Doc: "UDP port of the IPv6 WireGuard device."},
	{Name: "WireguardRoutingRulePriority", Kind: KindInt, Default: "99", Min: 1, Max: 32765, Restart: true, Main: true,
		Doc: "Priority of the routing rule `not fwmark <WireGuard mark> lookup <WireGuard table>`."},
	{Name: "WireguardInterfaceName", Kind: KindString, Default: "wireguard.cali", Restart: true, Main: true, Check: checkIfaceName,
		Doc: "Name of the IPv4 WireGuard device."},
	{Name: "WireguardInterfaceNameV6", Kind: KindString, Default: "wg-v6.cali", Restart: true, Main: true, Check: checkIfaceName,
		Doc: "Name of the IPv6 WireGuard device."},
	{Name: "WireguardMTU", Kind: KindInt, Default: "0", Min: 0, Max: 65535, Restart: true, Main: true, Doc: "MTU of the IPv4 WireGuard device; 0 = host MTU - 60."},
	{Name: "WireguardMTUV6", Kind: KindInt, Default: "0", Min: 0, Max: 65535, Restart: true, Main: true, Doc: "MTU of the IPv6 WireGuard device; 0 = host MTU - 80."},
	{Name: "WireguardPersistentKeepAlive", V3: "wireguardKeepAlive", Kind: KindSeconds, Default: "0", Restart: true, Main: true,
		Doc: "WireGuard persistent keepalive towards each peer; 0 = off."},
	{Name: "WireguardHostEncryptionEnabled", Kind: KindBool, Default: "false", Restart: true, Main: true,
		Doc: "Encrypt host-to-host traffic too: peers' allowed IPs and felix's WireGuard table include the hosts' own addresses, the device takes this host's address when it has no tunnel address, and raw PREROUTING marks packets from host interfaces (cali-wireguard-incoming-mark)."},
	{Name: "WireguardThreadingEnabled", Kind: KindBool, Default: "false", Restart: true, Main: true,
		Doc: "Threaded NAPI on the kernel WireGuard devices (/sys/class/net/<device>/threaded); does not apply to a userspace device."},
	{Name: "RouteTableRanges", Kind: KindTableRanges, Max: maxTableIndex, Restart: true, Main: true,
		Doc: "Routing tables felix may use, e.g. \"1-250\" or \"1-200,1000-1100\" (none: 1-250; 253-255 are skipped). The lowest is IPv4 WireGuard's table, the next IPv6 WireGuard's."},
	{Name: "RouteTableRange", Kind: KindTableRanges, Max: maxDeprecatedTable, Restart: true, Main: true,
		Doc: "Deprecated single range \"n-m\" within 1-250, used when RouteTableRanges is not set."},
}

// byName indexes Params by lower-case name.
var byName = func() map[string]*Param {
	m := make(map[string]*Param, len(Params))
	for i := range Params {
		m[lower(Params[i].Name)] = &Params[i]
	}
	return m
}()

// Lookup finds a parameter by name, case-insensitively.
func Lookup(name string) (*Param, bool) {
	p, ok := byName[lower(name)]
	return p, ok
}
