package api

// FelixConfiguration configures felix: `default` is global, `node.<name>` overrides per node.
type FelixConfiguration struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       FelixConfigurationSpec `json:"spec"`
}

// ProtoPort is a failsafe port: protocol, port and an optional net.
type ProtoPort struct {
	Protocol string `json:"protocol"`
	Port     uint16 `json:"port"`
	Net      string `json:"net,omitempty"`
}

// FelixConfigurationSpec holds the felix parameters that can be set in the datastore. Field names
// are Project Calico's; felix maps them to its parameter names (reportingInterval ->
// ReportingIntervalSecs, ...).
type FelixConfigurationSpec struct {
	UseInternalDataplaneDriver *bool  `json:"useInternalDataplaneDriver,omitempty"`
	DataplaneDriver            string `json:"dataplaneDriver,omitempty"`
	IPv6Support                *bool  `json:"ipv6Support,omitempty"`

	RouteRefreshInterval     *Duration `json:"routeRefreshInterval,omitempty"`
	InterfaceRefreshInterval *Duration `json:"interfaceRefreshInterval,omitempty"`
	IptablesRefreshInterval  *Duration `json:"iptablesRefreshInterval,omitempty"`
	IpsetsRefreshInterval    *Duration `json:"ipsetsRefreshInterval,omitempty"`
	NftablesRefreshInterval  *Duration `json:"nftablesRefreshInterval,omitempty"`

	NFTablesMode              *string `json:"nftablesMode,omitempty"`
	NftablesFlowTableOffload  *string `json:"nftablesFlowTableOffload,omitempty"`
	NftablesFilterAllowAction string  `json:"nftablesFilterAllowAction,omitempty"`
	NftablesMangleAllowAction string  `json:"nftablesMangleAllowAction,omitempty"`
	NftablesFilterDenyAction  string  `json:"nftablesFilterDenyAction,omitempty"`
	NftablesMarkMask          *uint32 `json:"nftablesMarkMask,omitempty"`

	LogFilePath       string `json:"logFilePath,omitempty"`
	LogPrefix         string `json:"logPrefix,omitempty"`
	LogSeverityFile   string `json:"logSeverityFile,omitempty"`
	LogSeverityScreen string `json:"logSeverityScreen,omitempty"`
	LogSeveritySys    string `json:"logSeveritySys,omitempty"`

	InterfacePrefix              string       `json:"interfacePrefix,omitempty"`
	InterfaceExclude             string       `json:"interfaceExclude,omitempty"`
	ChainInsertMode              string       `json:"chainInsertMode,omitempty"`
	DefaultEndpointToHostAction  string       `json:"defaultEndpointToHostAction,omitempty"`
	FailsafeInboundHostPorts     *[]ProtoPort `json:"failsafeInboundHostPorts,omitempty"`
	FailsafeOutboundHostPorts    *[]ProtoPort `json:"failsafeOutboundHostPorts,omitempty"`
	DisableConntrackInvalidCheck *bool        `json:"disableConntrackInvalidCheck,omitempty"`
	IPForwarding                 string       `json:"ipForwarding,omitempty"`

	ReportingInterval        *Duration `json:"reportingInterval,omitempty"`
	ReportingTTL             *Duration `json:"reportingTTL,omitempty"`
	EndpointReportingEnabled *bool     `json:"endpointReportingEnabled,omitempty"`
	EndpointReportingDelay   *Duration `json:"endpointReportingDelay,omitempty"`
	EndpointStatusPathPrefix string    `json:"endpointStatusPathPrefix,omitempty"`

	MetadataAddr    string `json:"metadataAddr,omitempty"`
	MetadataPort    *int   `json:"metadataPort,omitempty"`
	OpenstackRegion string `json:"openstackRegion,omitempty"`

	NATOutgoingAddress    string `json:"natOutgoingAddress,omitempty"`
	NATPortRange          *Port  `json:"natPortRange,omitempty"`
	NATOutgoingExclusions string `json:"natOutgoingExclusions,omitempty"`

	HealthEnabled                   *bool  `json:"healthEnabled,omitempty"`
	HealthHost                      string `json:"healthHost,omitempty"`
	HealthPort                      *int   `json:"healthPort,omitempty"`
	PrometheusMetricsEnabled        *bool  `json:"prometheusMetricsEnabled,omitempty"`
	PrometheusMetricsHost           string `json:"prometheusMetricsHost,omitempty"`
	PrometheusMetricsPort           *int   `json:"prometheusMetricsPort,omitempty"`
	PrometheusGoMetricsEnabled      *bool  `json:"prometheusGoMetricsEnabled,omitempty"`
	PrometheusProcessMetricsEnabled *bool  `json:"prometheusProcessMetricsEnabled,omitempty"`

	VXLANEnabled                   *bool  `json:"vxlanEnabled,omitempty"`
	VXLANPort                      *int   `json:"vxlanPort,omitempty"`
	VXLANVNI                       *int   `json:"vxlanVNI,omitempty"`
	VXLANMTU                       *int   `json:"vxlanMTU,omitempty"`
	VXLANMTUV6                     *int   `json:"vxlanMTUV6,omitempty"`
	MTUIfacePattern                string `json:"mtuIfacePattern,omitempty"`
	IPIPEnabled                    *bool  `json:"ipipEnabled,omitempty"`
	IPIPMTU                        *int   `json:"ipipMTU,omitempty"`
	AllowVXLANPacketsFromWorkloads *bool  `json:"allowVXLANPacketsFromWorkloads,omitempty"`
	AllowIPIPPacketsFromWorkloads  *bool  `json:"allowIPIPPacketsFromWorkloads,omitempty"`

	DeviceRouteSourceAddress     string    `json:"deviceRouteSourceAddress,omitempty"`
	DeviceRouteSourceAddressIPv6 string    `json:"deviceRouteSourceAddressIPv6,omitempty"`
	DeviceRouteProtocol          *int      `json:"deviceRouteProtocol,omitempty"`
	RemoveExternalRoutes         *bool     `json:"removeExternalRoutes,omitempty"`
	ExternalNodesCIDRList        *[]string `json:"externalNodesList,omitempty"`
	RouteSource                  string    `json:"routeSource,omitempty"`
	ServiceLoopPrevention        string    `json:"serviceLoopPrevention,omitempty"`

	BPFEnabled                     *bool   `json:"bpfEnabled,omitempty"`
	BPFLogLevel                    *string `json:"bpfLogLevel,omitempty"`
	BPFConnectTimeLoadBalancing    *string `json:"bpfConnectTimeLoadBalancing,omitempty"`
	BPFHostNetworkedNATWithoutCTLB *string `json:"bpfHostNetworkedNATWithoutCTLB,omitempty"`
	FloatingIPs                    *string `json:"floatingIPs,omitempty"`
	WireguardEnabled               *bool   `json:"wireguardEnabled,omitempty"`
	WireguardEnabledV6             *bool   `json:"wireguardEnabledV6,omitempty"`
}

// KubeControllersConfiguration is stored and returned unchanged; calico-host does not act on it.
type KubeControllersConfiguration struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       map[string]any `json:"spec"`
	Status     map[string]any `json:"status,omitempty"`
}
