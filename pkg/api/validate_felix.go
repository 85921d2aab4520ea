package api

import (
	"fmt"
	"net/netip"
	"reflect"
	"regexp"
	"strings"
)

var (
	logSeverities = []string{"Trace", "Debug", "Info", "Warning", "Error", "Fatal", "Panic", "None"}
	// Project Calico's patterns for featureDetectOverride, featureGates and logActionRateLimit.
	featureDetectList = regexp.MustCompile(`^([a-zA-Z0-9-_]+=(true|false|),)*([a-zA-Z0-9-_]+=(true|false|))?$`)
	featureGateList   = regexp.MustCompile(`^([a-zA-Z0-9-_]+=([^=]+),)*([a-zA-Z0-9-_]+=([^=]+))?$`)
	logRateLimit      = regexp.MustCompile(`^[1-9]\d{0,3}/(?:second|minute|hour|day)$`)
	// clusterRoutes are the values of programClusterRoutes (FelixConfiguration and BGPConfiguration).
	clusterRoutes = []string{"Enabled", "Disabled", "EnabledIPIPOnly", "EnabledNoEncapOnly"}
)

func validateFelixConfiguration(e *errs, f *FelixConfiguration) {
	s := &f.Spec
	validateEnums(e, false, felixExactEnums(s))
	validateEnums(e, true, felixFoldedEnums(s))
	validateRanges(e, felixRanges(s))
	validateFailsafe(e, "spec.failsafeInboundHostPorts", s.FailsafeInboundHostPorts)
	validateFailsafe(e, "spec.failsafeOutboundHostPorts", s.FailsafeOutboundHostPorts)
	validatePortRanges(e, s)
	validateRouteTables(e, s)
	validateFelixPatterns(e, s)
	if s.BPFDSROptoutCIDRs != nil {
		validateNets(e, "spec.bpfDSROptoutCIDRs", *s.BPFDSROptoutCIDRs, 0)
	}
	if s.BPFExcludeCIDRsFromNAT != nil {
		validateNets(e, "spec.bpfExcludeCIDRsFromNAT", *s.BPFExcludeCIDRsFromNAT, 0)
	}
	validateDSCP(e, "spec.istioDSCPMark", s.IstioDSCPMark)
	validateAddrFamily(e, "spec.deviceRouteSourceAddress", s.DeviceRouteSourceAddress, false)
	validateAddrFamily(e, "spec.deviceRouteSourceAddressIPv6", s.DeviceRouteSourceAddressIPv6, true)
}

// validateAddrFamily checks an optional address of one family (Project Calico's CRD rule: "must
// be a valid IPv4 address", "... IPv6 address").
func validateAddrFamily(e *errs, field, v string, v6 bool) {
	if v == "" {
		return
	}
	a, err := netip.ParseAddr(v)
	switch {
	case v6 && (err != nil || !a.Is6() || a.Is4In6() || a.Zone() != ""):
		e.add(field, "%q must be a valid IPv6 address", v)
	case !v6 && (err != nil || !a.Is4()):
		e.add(field, "%q must be a valid IPv4 address", v)
	}
}

// felixExactEnums are the enums Project Calico's validator matches exactly (oneof rules, and
// the fields calico-host checked exactly before).
func felixExactEnums(s *FelixConfigurationSpec) []enumCheck {
	enabled := []string{"Enabled", "Disabled"}
	return []enumCheck{
		{"spec.defaultEndpointToHostAction", s.DefaultEndpointToHostAction, []string{"Drop", "Return", "Accept"}},
		{"spec.logSeverityScreen", s.LogSeverityScreen, logSeverities},
		{"spec.logSeverityFile", s.LogSeverityFile, logSeverities},
		{"spec.logSeveritySys", s.LogSeveritySys, logSeverities},
		{"spec.nftablesMode", deref(s.NFTablesMode), []string{"Enabled", "Disabled", "Auto"}},
		{"spec.serviceLoopPrevention", s.ServiceLoopPrevention, []string{"Drop", "Reject", "Disabled"}},
		{"spec.workloadSourceSpoofing", s.WorkloadSourceSpoofing, []string{"Disabled", "Any"}},
		{"spec.natOutgoingExclusions", deref(s.NATOutgoingExclusions), []string{"IPPoolsOnly", "IPPoolsAndHostIPs"}},
		{"spec.awsSrcDstCheck", deref(s.AWSSrcDstCheck), []string{"DoNothing", "Enable", "Disable"}},
		{"spec.windowsManageFirewallRules", deref(s.WindowsManageFirewallRules), enabled},
		{"spec.proxyARPEnabled", deref(s.ProxyARPEnabled), enabled},
		{"spec.prometheusMetricsClientAuth", deref(s.PrometheusMetricsClientAuth),
			[]string{"RequireAndVerifyClientCert", "RequireAnyClientCert", "VerifyClientCertIfGiven", "NoClientCert"}},
		{"spec.bpfConntrackLogLevel", s.BPFConntrackLogLevel, []string{"Off", "Debug"}},
		{"spec.bpfConntrackMode", deref(s.BPFConntrackCleanupMode), []string{"Auto", "Userspace", "BPFProgram"}},
		{"spec.bpfConnectTimeLoadBalancing", deref(s.BPFConnectTimeLoadBalancing), []string{"TCP", "Enabled", "Disabled"}},
		{"spec.bpfHostNetworkedNATWithoutCTLB", deref(s.BPFHostNetworkedNATWithoutCTLB), enabled},
		{"spec.bpfJITHardening", deref(s.BPFJITHardening), []string{"Auto", "Strict"}},
		{"spec.bpfAttachType", deref(s.BPFAttachType), []string{"TC", "TCX"}},
	}
}

// felixFoldedEnums are the enums Project Calico constrains with a case-insensitive pattern, or
// only with a CRD enum that felix itself reads case-insensitively.
func felixFoldedEnums(s *FelixConfigurationSpec) []enumCheck {
	acceptReturn, dropReject, enabled := []string{"Accept", "Return"}, []string{"Drop", "Reject"}, []string{"Enabled", "Disabled"}
	return []enumCheck{
		{"spec.chainInsertMode", s.ChainInsertMode, []string{"Insert", "Append"}},
		{"spec.iptablesBackend", deref(s.IptablesBackend), []string{"Legacy", "NFT", "Auto"}},
		{"spec.iptablesFilterAllowAction", s.IptablesFilterAllowAction, acceptReturn},
		{"spec.iptablesMangleAllowAction", s.IptablesMangleAllowAction, acceptReturn},
		{"spec.iptablesFilterDenyAction", s.IptablesFilterDenyAction, dropReject},
		{"spec.nftablesFilterAllowAction", s.NftablesFilterAllowAction, acceptReturn},
		{"spec.nftablesMangleAllowAction", s.NftablesMangleAllowAction, acceptReturn},
		{"spec.nftablesFilterDenyAction", s.NftablesFilterDenyAction, dropReject},
		{"spec.routeSource", s.RouteSource, []string{"WorkloadIPs", "CalicoIPAM"}},
		{"spec.bpfLogLevel", deref(s.BPFLogLevel), []string{"Off", "Info", "Debug"}},
		{"spec.bpfExternalServiceMode", s.BPFExternalServiceMode, []string{"Tunnel", "DSR"}},
		{"spec.ipForwarding", s.IPForwarding, enabled},
		{"spec.floatingIPs", deref(s.FloatingIPs), enabled},
		{"spec.programClusterRoutes", deref(s.ProgramClusterRoutes), clusterRoutes},
		{"spec.bpfEnforceRPF", s.BPFEnforceRPF, []string{"Disabled", "Strict", "Loose"}},
		{"spec.bpfMapSizeConntrackScaling", s.BPFMapSizeConntrackScaling, []string{"Disabled", "DoubleIfFull"}},
		{"spec.bpfRedirectToPeer", s.BPFRedirectToPeer, []string{"Enabled", "Disabled", "L2Only"}},
		{"spec.flowLogsLocalReporter", deref(s.FlowLogsLocalReporter), enabled},
		{"spec.flowLogsPolicyEvaluationMode", deref(s.FlowLogsPolicyEvaluationMode), []string{"None", "Continuous"}},
		{"spec.istioAmbientMode", deref(s.IstioAmbientMode), enabled},
	}
}

func felixRanges(s *FelixConfigurationSpec) []rangeCheck {
	const maxPriority, maxInt32 = 2147483646, 1<<31 - 1
	return []rangeCheck{
		{"spec.vxlanVNI", s.VXLANVNI, 1, 1<<24 - 1},
		{"spec.vxlanPort", s.VXLANPort, 1, 65535},
		{"spec.vxlanMTU", s.VXLANMTU, 0, 65535},
		{"spec.healthPort", s.HealthPort, 0, 65535},
		{"spec.prometheusMetricsPort", s.PrometheusMetricsPort, 0, 65535},
		{"spec.metadataPort", s.MetadataPort, 0, 65535},
		{"spec.debugPort", s.DebugPort, 0, 65535},
		{"spec.bpfKubeProxyHealthzPort", s.BPFKubeProxyHealthzPort, 0, 65535},
		{"spec.wireguardListeningPort", s.WireguardListeningPort, 1, 65535},
		{"spec.wireguardListeningPortV6", s.WireguardListeningPortV6, 1, 65535},
		{"spec.wireguardRoutingRulePriority", s.WireguardRoutingRulePriority, 1, 32765},
		{"spec.bpfExtToServiceConnmark", s.BPFExtToServiceConnmark, 0, 1<<32 - 1},
		{"spec.bpfMapSizeConntrackCleanupQueue", s.BPFMapSizeConntrackCleanupQueue, 1, maxInt32},
		{"spec.bpfMaglevMaxEndpointsPerService", s.BPFMaglevMaxEndpointsPerService, 1, 3000},
		{"spec.bpfMaglevMaxServices", s.BPFMaglevMaxServices, 1, 3000},
		{"spec.goGCThreshold", s.GoGCThreshold, -1, maxInt32},
		{"spec.goMemoryLimitMB", s.GoMemoryLimitMB, -1, maxInt32},
		{"spec.goMaxProcs", s.GoMaxProcs, -1, maxInt32},
		{"spec.logActionRateLimitBurst", s.LogActionRateLimitBurst, 0, 9999},
		{"spec.deviceRouteProtocol", s.DeviceRouteProtocol, 1, 255}, // a route's protocol is 8 bits; 0 is RTPROT_UNSPEC
		{"spec.ipv4NormalRoutePriority", s.IPv4NormalRoutePriority, 1, maxPriority},
		{"spec.ipv4ElevatedRoutePriority", s.IPv4ElevatedRoutePriority, 1, maxPriority},
		{"spec.ipv6NormalRoutePriority", s.IPv6NormalRoutePriority, 1, maxPriority},
		{"spec.ipv6ElevatedRoutePriority", s.IPv6ElevatedRoutePriority, 1, maxPriority},
	}
}

func validateFailsafe(e *errs, field string, ports *[]ProtoPort) {
	if ports == nil {
		return
	}
	for i, p := range *ports {
		if p.Protocol != "" {
			validateOneOf(e, fmt.Sprintf("%s[%d].protocol", field, i), p.Protocol, "TCP", "UDP", "SCTP")
		}
		if p.Net != "" {
			validateNets(e, fmt.Sprintf("%s[%d].net", field, i), []string{p.Net}, 0)
		}
	}
}

// validatePortRanges checks the numeric port ranges: a named port makes no sense there.
func validatePortRanges(e *errs, s *FelixConfigurationSpec) {
	check := func(field string, p Port) {
		switch {
		case p.PortName != "":
			e.add(field, "%q must be a port number or a min:max range", p.PortName)
		case p.MinPort > p.MaxPort:
			e.add(field, "port range %s has min greater than max", p)
		}
	}
	if s.NATPortRange != nil {
		check("spec.natPortRange", *s.NATPortRange)
	}
	if s.BPFPSNATPorts != nil {
		check("spec.bpfPSNATPorts", *s.BPFPSNATPorts)
	}
	if s.KubeNodePortRanges != nil {
		for i, p := range *s.KubeNodePortRanges {
			check(fmt.Sprintf("spec.kubeNodePortRanges[%d]", i), p)
		}
	}
}

// validateRouteTables applies Project Calico's route table rules: the deprecated single range
// stays within 1-250; ranges are ordered, positive, 32-bit and avoid the kernel's tables 253-255.
func validateRouteTables(e *errs, s *FelixConfigurationSpec) {
	if s.RouteTableRange != nil && s.RouteTableRanges != nil {
		e.add("spec.routeTableRange", "routeTableRange and routeTableRanges cannot both be set")
	}
	if r := s.RouteTableRange; r != nil && (r.Min < 1 || r.Max > 250 || r.Min > r.Max) {
		e.add("spec.routeTableRange", "range %d-%d must be ordered and within 1-250", r.Min, r.Max)
	}
	if s.RouteTableRanges == nil {
		return
	}
	for i, r := range *s.RouteTableRanges {
		f := fmt.Sprintf("spec.routeTableRanges[%d]", i)
		switch {
		case r.Min < 1 || r.Max > 1<<32-1 || r.Min > r.Max:
			e.add(f, "range %d-%d must be ordered and within 1-4294967295", r.Min, r.Max)
		case r.Min <= 255 && r.Max >= 253:
			e.add(f, "range %d-%d includes the reserved tables 253-255", r.Min, r.Max)
		}
	}
}

func validateFelixPatterns(e *errs, s *FelixConfigurationSpec) {
	if s.InterfacePrefix != "" {
		for i, p := range strings.Split(s.InterfacePrefix, ",") {
			if !interfaceName.MatchString(p) {
				e.add("spec.interfacePrefix", "entry %d (%q) is not a valid interface name prefix", i, p)
			}
		}
	}
	if !featureDetectList.MatchString(s.FeatureDetectOverride) {
		e.add("spec.featureDetectOverride", "%q must be a comma-separated list of name=true|false", s.FeatureDetectOverride)
	}
	if !featureGateList.MatchString(s.FeatureGates) {
		e.add("spec.featureGates", "%q must be a comma-separated list of name=value", s.FeatureGates)
	}
	if v := s.LogActionRateLimit; v != nil && !logRateLimit.MatchString(*v) {
		e.add("spec.logActionRateLimit", "%q must be N/second, N/minute, N/hour or N/day with N 1-9999", *v)
	}
}

func validateDSCP(e *errs, field string, d *DSCP) {
	if d == nil {
		return
	}
	if _, ok := d.NumberValue(); !ok {
		e.add(field, "%q is not a DSCP value (0-63, DF, EF, AF11-AF43 or CS0-CS6)", d.String())
	}
}

// DropInvalidFelixFields zeroes each field of f's spec that fails validation on its own and
// returns what was wrong with each, so that a FelixConfiguration another tool wrote with one
// bad field keeps the others, as Project Calico's felix reads its configuration field by field.
// It returns nil when no field fails alone (the spec is then unchanged).
func (v Validator) DropInvalidFelixFields(f *FelixConfiguration) []FieldError {
	spec := reflect.ValueOf(&f.Spec).Elem()
	var dropped []FieldError
	for i := range spec.NumField() {
		field := spec.Field(i)
		if field.IsZero() {
			continue
		}
		one := &FelixConfiguration{ObjectMeta: f.ObjectMeta}
		reflect.ValueOf(&one.Spec).Elem().Field(i).Set(field)
		e := &errs{v: &v}
		validateFelixConfiguration(e, one)
		if len(e.list) > 0 {
			dropped = append(dropped, e.list...)
			field.SetZero()
		}
	}
	return dropped
}

// ValidateFelixSpec checks the spec of a FelixConfiguration alone (not its metadata).
func (v Validator) ValidateFelixSpec(f *FelixConfiguration) error {
	e := &errs{v: &v}
	validateFelixConfiguration(e, f)
	if len(e.list) == 0 {
		return nil
	}
	return &ValidationError{Kind: "FelixConfiguration", Name: f.Name, Errors: e.list}
}
