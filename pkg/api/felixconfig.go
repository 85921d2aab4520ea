package api

// FelixConfiguration configures felix: `default` is global, `node.<name>` overrides per node.
type FelixConfiguration struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       FelixConfigurationSpec `json:"spec"`
}

// FelixConfigurationSpec holds every felix parameter that Project Calico's v3 API lets users set in
// the datastore (api/pkg/apis/projectcalico/v3/felixconfig.go), with the same JSON names and
// omission rules, plus the few that newer or older releases add or dropped (noted below), so that
// objects written by any recent calicoctl decode strictly and round-trip. Fields Project Calico
// declares with a named string type (enums) are *string or string here, as Calico has pointer or
// not. Felix maps JSON names to its parameter names (reportingInterval -> ReportingIntervalSecs).
type FelixConfigurationSpec struct {
	// NodeSelector makes a FelixConfiguration other than default and node.<name> apply to the
	// nodes it selects (Project Calico 2026); calico-felix does not implement it.
	NodeSelector *string `json:"nodeSelector,omitempty"`

	// Dataplane driver, refresh intervals and feature switches.
	UseInternalDataplaneDriver *bool     `json:"useInternalDataplaneDriver,omitempty"`
	DataplaneDriver            string    `json:"dataplaneDriver,omitempty"`
	DataplaneWatchdogTimeout   *Duration `json:"dataplaneWatchdogTimeout,omitempty"`
	IPv6Support                *bool     `json:"ipv6Support,omitempty"`
	RouteRefreshInterval       *Duration `json:"routeRefreshInterval,omitempty"`
	InterfaceRefreshInterval   *Duration `json:"interfaceRefreshInterval,omitempty"`
	IptablesRefreshInterval    *Duration `json:"iptablesRefreshInterval,omitempty"`
	IpsetsRefreshInterval      *Duration `json:"ipsetsRefreshInterval,omitempty"`
	XDPRefreshInterval         *Duration `json:"xdpRefreshInterval,omitempty"`
	NetlinkTimeout             *Duration `json:"netlinkTimeout,omitempty"`
	FeatureDetectOverride      string    `json:"featureDetectOverride,omitempty"`
	FeatureGates               string    `json:"featureGates,omitempty"`
	MaxIpsetSize               *int      `json:"maxIpsetSize,omitempty"`

	// iptables. IptablesLockFilePath and IptablesLockTimeout were dropped from Project Calico's
	// API in 2026; they are kept so that objects written by earlier releases still round-trip.
	IptablesBackend                    *string   `json:"iptablesBackend,omitempty"`
	IptablesPostWriteCheckInterval     *Duration `json:"iptablesPostWriteCheckInterval,omitempty"`
	IptablesLockFilePath               string    `json:"iptablesLockFilePath,omitempty"`
	IptablesLockTimeout                *Duration `json:"iptablesLockTimeout,omitempty"`
	IptablesLockProbeInterval          *Duration `json:"iptablesLockProbeInterval,omitempty"`
	IptablesFilterAllowAction          string    `json:"iptablesFilterAllowAction,omitempty"`
	IptablesMangleAllowAction          string    `json:"iptablesMangleAllowAction,omitempty"`
	IptablesFilterDenyAction           string    `json:"iptablesFilterDenyAction,omitempty"`
	IptablesMarkMask                   *uint32   `json:"iptablesMarkMask,omitempty"`
	IptablesNATOutgoingInterfaceFilter string    `json:"iptablesNATOutgoingInterfaceFilter,omitempty"`
	ChainInsertMode                    string    `json:"chainInsertMode,omitempty"`

	// nftables.
	NFTablesMode              *string   `json:"nftablesMode,omitempty"`
	NftablesRefreshInterval   *Duration `json:"nftablesRefreshInterval,omitempty"`
	NFTablesFlowTableOffload  *string   `json:"nftablesFlowTableOffload,omitempty"`
	NftablesFilterAllowAction string    `json:"nftablesFilterAllowAction,omitempty"`
	NftablesMangleAllowAction string    `json:"nftablesMangleAllowAction,omitempty"`
	NftablesFilterDenyAction  string    `json:"nftablesFilterDenyAction,omitempty"`
	NftablesMarkMask          *uint32   `json:"nftablesMarkMask,omitempty"`

	NFTablesFlowTableDataIfacePattern string `json:"nftablesFlowTableDataIfacePattern,omitempty"`

	// Logging.
	LogFilePath             string  `json:"logFilePath,omitempty"`
	LogPrefix               string  `json:"logPrefix,omitempty"`
	LogActionRateLimit      *string `json:"logActionRateLimit,omitempty"`
	LogActionRateLimitBurst *int    `json:"logActionRateLimitBurst,omitempty"`
	LogSeverityFile         string  `json:"logSeverityFile,omitempty"`
	LogSeverityScreen       string  `json:"logSeverityScreen,omitempty"`
	LogSeveritySys          string  `json:"logSeveritySys,omitempty"`
	LogDebugFilenameRegex   string  `json:"logDebugFilenameRegex,omitempty"`

	// Interfaces, host endpoints and workload traffic.
	InterfacePrefix              string       `json:"interfacePrefix,omitempty"`
	InterfaceExclude             string       `json:"interfaceExclude,omitempty"`
	DefaultEndpointToHostAction  string       `json:"defaultEndpointToHostAction,omitempty"`
	FailsafeInboundHostPorts     *[]ProtoPort `json:"failsafeInboundHostPorts,omitempty"`
	FailsafeOutboundHostPorts    *[]ProtoPort `json:"failsafeOutboundHostPorts,omitempty"`
	KubeNodePortRanges           *[]Port      `json:"kubeNodePortRanges,omitempty"`
	DisableConntrackInvalidCheck *bool        `json:"disableConntrackInvalidCheck,omitempty"`
	IPForwarding                 string       `json:"ipForwarding,omitempty"`
	WorkloadSourceSpoofing       string       `json:"workloadSourceSpoofing,omitempty"`
	ServiceLoopPrevention        string       `json:"serviceLoopPrevention,omitempty"`
	FloatingIPs                  *string      `json:"floatingIPs,omitempty"`
	ProxyARPEnabled              *string      `json:"proxyARPEnabled,omitempty"`
	PolicySyncPathPrefix         string       `json:"policySyncPathPrefix,omitempty"`
	MTUIfacePattern              string       `json:"mtuIfacePattern,omitempty"`
	RequireMTUFile               *bool        `json:"requireMTUFile,omitempty"`

	// Status and usage reporting.
	ReportingInterval          *Duration `json:"reportingInterval,omitempty"`
	ReportingTTL               *Duration `json:"reportingTTL,omitempty"`
	EndpointReportingEnabled   *bool     `json:"endpointReportingEnabled,omitempty"`
	EndpointReportingDelay     *Duration `json:"endpointReportingDelay,omitempty"`
	EndpointStatusPathPrefix   string    `json:"endpointStatusPathPrefix,omitempty"`
	UsageReportingEnabled      *bool     `json:"usageReportingEnabled,omitempty"`
	UsageReportingInitialDelay *Duration `json:"usageReportingInitialDelay,omitempty"`
	UsageReportingInterval     *Duration `json:"usageReportingInterval,omitempty"`

	// OpenStack metadata proxy and region.
	MetadataAddr    string `json:"metadataAddr,omitempty"`
	MetadataPort    *int   `json:"metadataPort,omitempty"`
	OpenstackRegion string `json:"openstackRegion,omitempty"`

	// Outgoing NAT.
	NATOutgoingAddress    string  `json:"natOutgoingAddress,omitempty"`
	NATPortRange          *Port   `json:"natPortRange,omitempty"`
	NATOutgoingExclusions *string `json:"natOutgoingExclusions,omitempty"`

	// Health, metrics, debugging and the Go runtime.
	HealthEnabled                     *bool                   `json:"healthEnabled,omitempty"`
	HealthHost                        *string                 `json:"healthHost,omitempty"`
	HealthPort                        *int                    `json:"healthPort,omitempty"`
	HealthTimeoutOverrides            []HealthTimeoutOverride `json:"healthTimeoutOverrides,omitempty"`
	PrometheusMetricsEnabled          *bool                   `json:"prometheusMetricsEnabled,omitempty"`
	PrometheusMetricsHost             string                  `json:"prometheusMetricsHost,omitempty"`
	PrometheusMetricsPort             *int                    `json:"prometheusMetricsPort,omitempty"`
	PrometheusGoMetricsEnabled        *bool                   `json:"prometheusGoMetricsEnabled,omitempty"`
	PrometheusProcessMetricsEnabled   *bool                   `json:"prometheusProcessMetricsEnabled,omitempty"`
	PrometheusWireGuardMetricsEnabled *bool                   `json:"prometheusWireGuardMetricsEnabled,omitempty"`
	PrometheusMetricsCAFile           *string                 `json:"prometheusMetricsCAFile,omitempty"`
	PrometheusMetricsCertFile         *string                 `json:"prometheusMetricsCertFile,omitempty"`
	PrometheusMetricsKeyFile          *string                 `json:"prometheusMetricsKeyFile,omitempty"`
	PrometheusMetricsClientAuth       *string                 `json:"prometheusMetricsClientAuth,omitempty"`
	DebugMemoryProfilePath            string                  `json:"debugMemoryProfilePath,omitempty"`
	DebugDisableLogDropping           *bool                   `json:"debugDisableLogDropping,omitempty"`
	DebugSimulateCalcGraphHangAfter   *Duration               `json:"debugSimulateCalcGraphHangAfter,omitempty"`
	DebugSimulateDataplaneHangAfter   *Duration               `json:"debugSimulateDataplaneHangAfter,omitempty"`
	DebugSimulateDataplaneApplyDelay  *Duration               `json:"debugSimulateDataplaneApplyDelay,omitempty"`
	DebugHost                         *string                 `json:"debugHost,omitempty"`
	DebugPort                         *int                    `json:"debugPort,omitempty"`
	GoGCThreshold                     *int                    `json:"goGCThreshold,omitempty"`
	GoMemoryLimitMB                   *int                    `json:"goMemoryLimitMB,omitempty"`
	GoMaxProcs                        *int                    `json:"goMaxProcs,omitempty"`

	// Encapsulation.
	VXLANEnabled                   *bool `json:"vxlanEnabled,omitempty"`
	VXLANPort                      *int  `json:"vxlanPort,omitempty"`
	VXLANVNI                       *int  `json:"vxlanVNI,omitempty"`
	VXLANMTU                       *int  `json:"vxlanMTU,omitempty"`
	VXLANMTUV6                     *int  `json:"vxlanMTUV6,omitempty"`
	IPIPEnabled                    *bool `json:"ipipEnabled,omitempty"`
	IPIPMTU                        *int  `json:"ipipMTU,omitempty"`
	AllowVXLANPacketsFromWorkloads *bool `json:"allowVXLANPacketsFromWorkloads,omitempty"`
	AllowIPIPPacketsFromWorkloads  *bool `json:"allowIPIPPacketsFromWorkloads,omitempty"`

	// Routes and route tables.
	DeviceRouteSourceAddress          string            `json:"deviceRouteSourceAddress,omitempty"`
	DeviceRouteSourceAddressIPv6      string            `json:"deviceRouteSourceAddressIPv6,omitempty"`
	DeviceRouteProtocol               *int              `json:"deviceRouteProtocol,omitempty"`
	RemoveExternalRoutes              *bool             `json:"removeExternalRoutes,omitempty"`
	ExternalNodesCIDRList             *[]string         `json:"externalNodesList,omitempty"`
	RouteSource                       string            `json:"routeSource,omitempty"`
	ProgramClusterRoutes              *string           `json:"programClusterRoutes,omitempty"`
	RouteTableRanges                  *RouteTableRanges `json:"routeTableRanges,omitempty"`
	RouteTableRange                   *RouteTableRange  `json:"routeTableRange,omitempty"`
	RouteSyncDisabled                 *bool             `json:"routeSyncDisabled,omitempty"`
	IPv4NormalRoutePriority           *int              `json:"ipv4NormalRoutePriority,omitempty"`
	IPv4ElevatedRoutePriority         *int              `json:"ipv4ElevatedRoutePriority,omitempty"`
	IPv6NormalRoutePriority           *int              `json:"ipv6NormalRoutePriority,omitempty"`
	IPv6ElevatedRoutePriority         *int              `json:"ipv6ElevatedRoutePriority,omitempty"`
	LiveMigrationRouteConvergenceTime *Duration         `json:"liveMigrationRouteConvergenceTime,omitempty"`

	// XDP and sidecar acceleration.
	XDPEnabled                 *bool `json:"xdpEnabled,omitempty"`
	GenericXDPEnabled          *bool `json:"genericXDPEnabled,omitempty"`
	SidecarAccelerationEnabled *bool `json:"sidecarAccelerationEnabled,omitempty"`

	// eBPF dataplane. Project Calico always writes bpfLogLevel (its field has no omitempty);
	// SetDefaults fills it in so that our writes carry it too. BPFKubeProxyEndpointSlicesEnabled
	// was dropped from Project Calico's API in 2026 and is kept for older objects.
	BPFEnabled                         *bool                 `json:"bpfEnabled,omitempty"`
	BPFDisableUnprivileged             *bool                 `json:"bpfDisableUnprivileged,omitempty"`
	BPFJITHardening                    *string               `json:"bpfJITHardening,omitempty"`
	BPFLogLevel                        *string               `json:"bpfLogLevel,omitempty"`
	BPFConntrackLogLevel               string                `json:"bpfConntrackLogLevel,omitempty"`
	BPFConntrackCleanupMode            *string               `json:"bpfConntrackMode,omitempty"`
	BPFConntrackTimeouts               *BPFConntrackTimeouts `json:"bpfConntrackTimeouts,omitempty"`
	BPFLogFilters                      *map[string]string    `json:"bpfLogFilters,omitempty"`
	BPFCTLBLogFilter                   string                `json:"bpfCTLBLogFilter,omitempty"`
	BPFDataIfacePattern                string                `json:"bpfDataIfacePattern,omitempty"`
	BPFL3IfacePattern                  string                `json:"bpfL3IfacePattern,omitempty"`
	BPFConnectTimeLoadBalancingEnabled *bool                 `json:"bpfConnectTimeLoadBalancingEnabled,omitempty"`
	BPFConnectTimeLoadBalancing        *string               `json:"bpfConnectTimeLoadBalancing,omitempty"`
	BPFHostNetworkedNATWithoutCTLB     *string               `json:"bpfHostNetworkedNATWithoutCTLB,omitempty"`
	BPFExternalServiceMode             string                `json:"bpfExternalServiceMode,omitempty"`
	BPFDSROptoutCIDRs                  *[]string             `json:"bpfDSROptoutCIDRs,omitempty"`
	BPFExtToServiceConnmark            *int                  `json:"bpfExtToServiceConnmark,omitempty"`
	BPFKubeProxyIptablesCleanupEnabled *bool                 `json:"bpfKubeProxyIptablesCleanupEnabled,omitempty"`
	BPFKubeProxyMinSyncPeriod          *Duration             `json:"bpfKubeProxyMinSyncPeriod,omitempty"`
	BPFKubeProxyEndpointSlicesEnabled  *bool                 `json:"bpfKubeProxyEndpointSlicesEnabled,omitempty"`
	BPFKubeProxyHealthzPort            *int                  `json:"bpfKubeProxyHealthzPort,omitempty"`
	BPFPSNATPorts                      *Port                 `json:"bpfPSNATPorts,omitempty"`
	BPFMapSizeNATFrontend              *int                  `json:"bpfMapSizeNATFrontend,omitempty"`
	BPFMapSizeNATBackend               *int                  `json:"bpfMapSizeNATBackend,omitempty"`
	BPFMapSizeNATAffinity              *int                  `json:"bpfMapSizeNATAffinity,omitempty"`
	BPFMapSizeRoute                    *int                  `json:"bpfMapSizeRoute,omitempty"`
	BPFMapSizeConntrack                *int                  `json:"bpfMapSizeConntrack,omitempty"`
	BPFMapSizePerCPUConntrack          *int                  `json:"bpfMapSizePerCpuConntrack,omitempty"`
	BPFMapSizeConntrackScaling         string                `json:"bpfMapSizeConntrackScaling,omitempty"`
	BPFMapSizeConntrackCleanupQueue    *int                  `json:"bpfMapSizeConntrackCleanupQueue,omitempty"`
	BPFMapSizeIPSets                   *int                  `json:"bpfMapSizeIPSets,omitempty"`
	BPFMapSizeIfState                  *int                  `json:"bpfMapSizeIfState,omitempty"`
	BPFHostConntrackBypass             *bool                 `json:"bpfHostConntrackBypass,omitempty"`
	BPFEnforceRPF                      string                `json:"bpfEnforceRPF,omitempty"`
	BPFPolicyDebugEnabled              *bool                 `json:"bpfPolicyDebugEnabled,omitempty"`
	BPFForceTrackPacketsFromIfaces     *[]string             `json:"bpfForceTrackPacketsFromIfaces,omitempty"`
	BPFDisableGROForIfaces             string                `json:"bpfDisableGROForIfaces,omitempty"`
	BPFExcludeCIDRsFromNAT             *[]string             `json:"bpfExcludeCIDRsFromNAT,omitempty"`
	BPFExportBufferSizeMB              *int                  `json:"bpfExportBufferSizeMB,omitempty"`
	BPFRedirectToPeer                  string                `json:"bpfRedirectToPeer,omitempty"`
	BPFAttachType                      *string               `json:"bpfAttachType,omitempty"`
	BPFProfiling                       string                `json:"bpfProfiling,omitempty"`
	BPFMaglevMaxEndpointsPerService    *int                  `json:"bpfMaglevMaxEndpointsPerService,omitempty"`
	BPFMaglevMaxServices               *int                  `json:"bpfMaglevMaxServices,omitempty"`
	BPFOverlayHostSourceIP             *string               `json:"bpfOverlayHostSourceIP,omitempty"`
	BPFIPFragTimeout                   *Duration             `json:"bpfIPFragTimeout,omitempty"`
	BPFIPFragmentReassemblyEnabled     *bool                 `json:"bpfIPFragmentReassemblyEnabled,omitempty"`

	// Flow logs, Istio ambient mode and cgroups.
	FlowLogsPolicyEvaluationMode *string   `json:"flowLogsPolicyEvaluationMode,omitempty"`
	FlowLogsFlushInterval        *Duration `json:"flowLogsFlushInterval,omitempty"`
	FlowLogsCollectorDebugTrace  *bool     `json:"flowLogsCollectorDebugTrace,omitempty"`
	FlowLogsGoldmaneServer       *string   `json:"flowLogsGoldmaneServer,omitempty"`
	FlowLogsLocalReporter        *string   `json:"flowLogsLocalReporter,omitempty"`
	IstioAmbientMode             *string   `json:"istioAmbientMode,omitempty"`
	IstioDSCPMark                *DSCP     `json:"istioDSCPMark,omitempty"`
	CgroupV2Path                 string    `json:"cgroupV2Path,omitempty"`

	// WireGuard.
	WireguardEnabled               *bool     `json:"wireguardEnabled,omitempty"`
	WireguardEnabledV6             *bool     `json:"wireguardEnabledV6,omitempty"`
	WireguardThreadingEnabled      *bool     `json:"wireguardThreadingEnabled,omitempty"`
	WireguardListeningPort         *int      `json:"wireguardListeningPort,omitempty"`
	WireguardListeningPortV6       *int      `json:"wireguardListeningPortV6,omitempty"`
	WireguardRoutingRulePriority   *int      `json:"wireguardRoutingRulePriority,omitempty"`
	WireguardInterfaceName         string    `json:"wireguardInterfaceName,omitempty"`
	WireguardInterfaceNameV6       string    `json:"wireguardInterfaceNameV6,omitempty"`
	WireguardMTU                   *int      `json:"wireguardMTU,omitempty"`
	WireguardMTUV6                 *int      `json:"wireguardMTUV6,omitempty"`
	WireguardHostEncryptionEnabled *bool     `json:"wireguardHostEncryptionEnabled,omitempty"`
	WireguardPersistentKeepAlive   *Duration `json:"wireguardKeepAlive,omitempty"`

	// Cloud and Windows hosts.
	AWSSrcDstCheck             *string `json:"awsSrcDstCheck,omitempty"`
	WindowsManageFirewallRules *string `json:"windowsManageFirewallRules,omitempty"`

	// Layer 2 reachability of local subnets.
	LocalSubnetL2Reachability                *string   `json:"localSubnetL2Reachability,omitempty"`
	LocalSubnetL2ReachabilityRefreshInterval *Duration `json:"localSubnetL2ReachabilityRefreshInterval,omitempty"`
}

// ProtoPort is a failsafe port: protocol, port and an optional net (felix defaults the protocol
// to TCP).
type ProtoPort struct {
	Protocol string `json:"protocol,omitempty"`
	Port     uint16 `json:"port"`
	Net      string `json:"net,omitempty"`
}

// HealthTimeoutOverride overrides the liveness timeout of one felix subcomponent.
type HealthTimeoutOverride struct {
	Name    string   `json:"name"`
	Timeout Duration `json:"timeout"`
}

// RouteTableRange is the deprecated single range of route table indices felix may use.
type RouteTableRange struct {
	Min int `json:"min"`
	Max int `json:"max"`
}

// RouteTableIDRange is one range of route table indices felix may use.
type RouteTableIDRange struct {
	Min int `json:"min"`
	Max int `json:"max"`
}

// RouteTableRanges lists the route table index ranges felix may use.
type RouteTableRanges []RouteTableIDRange

// BPFConntrackTimeouts overrides BPF conntrack timers: each a Go duration or "Auto".
type BPFConntrackTimeouts struct {
	CreationGracePeriod *string `json:"creationGracePeriod,omitempty"`
	TCPSynSent          *string `json:"tcpSynSent,omitempty"`
	TCPEstablished      *string `json:"tcpEstablished,omitempty"`
	TCPFinsSeen         *string `json:"tcpFinsSeen,omitempty"`
	TCPResetSeen        *string `json:"tcpResetSeen,omitempty"`
	UDPTimeout          *string `json:"udpTimeout,omitempty"`
	GenericTimeout      *string `json:"genericTimeout,omitempty"`
	ICMPTimeout         *string `json:"icmpTimeout,omitempty"`
}
