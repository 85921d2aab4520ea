package api

import (
	"fmt"
	"net"
	"regexp"
	"strings"
)

func validateIPPool(e *errs, s *IPPoolSpec) {
	ip, n, err := net.ParseCIDR(s.CIDR)
	if err != nil {
		e.add("spec.cidr", "invalid CIDR %q", s.CIDR)
		return
	}
	ones, bits := n.Mask.Size()
	if !ip.Equal(n.IP) {
		e.add("spec.cidr", "%q is not a network address (did you mean %s?)", s.CIDR, n)
	}
	lo, hi := 20, 32
	if bits == 128 {
		lo, hi = 116, 128
	}
	switch {
	case s.BlockSize < lo || s.BlockSize > hi:
		e.add("spec.blockSize", "block size %d must be between %d and %d for an IPv%d pool", s.BlockSize, lo, hi, ipv(bits))
	case s.BlockSize < ones:
		e.add("spec.blockSize", "block size %d is larger than the pool (/%d)", s.BlockSize, ones)
	}
	validateOneOf(e, "spec.vxlanMode", s.VXLANMode, EncapNever, EncapAlways, EncapCrossSubnet)
	validateOneOf(e, "spec.ipipMode", s.IPIPMode, EncapNever, EncapAlways, EncapCrossSubnet)
	if s.VXLANMode != EncapNever && s.IPIPMode != EncapNever {
		e.add("spec.ipipMode", "IPIP and VXLAN cannot both be enabled on one pool")
	}
	if bits == 128 && s.IPIPMode != EncapNever {
		e.add("spec.ipipMode", "IPIP is not supported on an IPv6 pool")
	}
	e.selector("spec.nodeSelector", s.NodeSelector)
	for i, u := range s.AllowedUses {
		validateOneOf(e, fmt.Sprintf("spec.allowedUses[%d]", i), u, UseWorkload, UseTunnel, UseLoadBalancer)
	}
	validateOneOf(e, "spec.assignmentMode", s.AssignmentMode, "Automatic", "Manual")
}

func ipv(bits int) int {
	if bits == 32 {
		return 4
	}
	return 6
}

// PoolOverlapError reports enabled pools whose CIDRs overlap.
func PoolOverlapError(p *IPPool, others []*IPPool) error {
	if p.Spec.Disabled {
		return nil
	}
	_, n, err := net.ParseCIDR(p.Spec.CIDR)
	if err != nil {
		return nil
	}
	for _, o := range others {
		if o.Name == p.Name || o.Spec.Disabled {
			continue
		}
		_, on, err := net.ParseCIDR(o.Spec.CIDR)
		if err == nil && (n.Contains(on.IP) || on.Contains(n.IP)) {
			return &ValidationError{Kind: "IPPool", Name: p.Name, Errors: []FieldError{{Field: "spec.cidr",
				Message: fmt.Sprintf("%s overlaps with enabled IPPool %q (%s)", p.Spec.CIDR, o.Name, o.Spec.CIDR)}}}
		}
	}
	return nil
}

var macAddr = regexp.MustCompile(`^([0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}$`)

func validateNode(e *errs, s *NodeSpec) {
	if b := s.BGP; b != nil {
		if b.IPv4Address != "" {
			validateNets(e, "spec.bgp.ipv4Address", []string{b.IPv4Address}, 4)
		}
		if b.IPv6Address != "" {
			validateNets(e, "spec.bgp.ipv6Address", []string{b.IPv6Address}, 6)
		}
		if b.RouteReflectorClusterID != "" {
			validateIP(e, "spec.bgp.routeReflectorClusterID", b.RouteReflectorClusterID, 4)
		}
		if b.IPv4IPIPTunnelAddr != "" {
			validateIP(e, "spec.bgp.ipv4IPIPTunnelAddr", b.IPv4IPIPTunnelAddr, 4)
		}
	}
	if s.IPv4VXLANTunnelAddr != "" {
		validateIP(e, "spec.ipv4VXLANTunnelAddr", s.IPv4VXLANTunnelAddr, 4)
	}
	if s.IPv6VXLANTunnelAddr != "" {
		validateIP(e, "spec.ipv6VXLANTunnelAddr", s.IPv6VXLANTunnelAddr, 6)
	}
	validateMAC(e, "spec.vxlanTunnelMACAddr", s.VXLANTunnelMACAddr)
	validateMAC(e, "spec.vxlanTunnelMACAddrV6", s.VXLANTunnelMACAddrV6)
	for i, a := range s.Addresses {
		validateNets(e, fmt.Sprintf("spec.addresses[%d].address", i), []string{a.Address}, 0)
	}
}

func validateMAC(e *errs, field, mac string) {
	if mac != "" && !macAddr.MatchString(mac) {
		e.add(field, "invalid MAC address %q", mac)
	}
}

var logSeverities = []string{"Trace", "Debug", "Info", "Warning", "Error", "Fatal", "Panic", "None"}

func validateFelixConfiguration(e *errs, f *FelixConfiguration) {
	validateConfigName(e, f.Name)
	s := &f.Spec
	if s.DefaultEndpointToHostAction != "" {
		validateOneOf(e, "spec.defaultEndpointToHostAction", s.DefaultEndpointToHostAction, "Drop", "Return", "Accept")
	}
	for field, v := range map[string]string{"spec.logSeverityScreen": s.LogSeverityScreen,
		"spec.logSeverityFile": s.LogSeverityFile, "spec.logSeveritySys": s.LogSeveritySys} {
		if v != "" {
			validateOneOf(e, field, v, logSeverities...)
		}
	}
	if s.NFTablesMode != nil {
		validateOneOf(e, "spec.nftablesMode", *s.NFTablesMode, "Enabled", "Disabled", "Auto")
	}
	validateFailsafe(e, "spec.failsafeInboundHostPorts", s.FailsafeInboundHostPorts)
	validateFailsafe(e, "spec.failsafeOutboundHostPorts", s.FailsafeOutboundHostPorts)
	validateRange(e, "spec.vxlanVNI", s.VXLANVNI, 1, 1<<24-1)
	validateRange(e, "spec.vxlanPort", s.VXLANPort, 1, 65535)
	validateRange(e, "spec.vxlanMTU", s.VXLANMTU, 0, 65535)
	validateRange(e, "spec.healthPort", s.HealthPort, 0, 65535)
	validateRange(e, "spec.prometheusMetricsPort", s.PrometheusMetricsPort, 0, 65535)
	validateRange(e, "spec.metadataPort", s.MetadataPort, 0, 65535)
	if s.InterfacePrefix != "" {
		for i, p := range strings.Split(s.InterfacePrefix, ",") {
			if !interfaceName.MatchString(p) {
				e.add("spec.interfacePrefix", "entry %d (%q) is not a valid interface name prefix", i, p)
			}
		}
	}
}

func validateConfigName(e *errs, name string) {
	if name != "default" && !strings.HasPrefix(name, "node.") {
		e.add("metadata.name", "name %q must be \"default\" or \"node.<nodename>\"", name)
	}
}

func validateFailsafe(e *errs, field string, ports *[]ProtoPort) {
	if ports == nil {
		return
	}
	for i, p := range *ports {
		validateOneOf(e, fmt.Sprintf("%s[%d].protocol", field, i), p.Protocol, "TCP", "UDP", "SCTP")
		if p.Net != "" {
			validateNets(e, fmt.Sprintf("%s[%d].net", field, i), []string{p.Net}, 0)
		}
	}
}

func validateRange(e *errs, field string, v *int, lo, hi int) {
	if v != nil && (*v < lo || *v > hi) {
		e.add(field, "%d is out of range %d-%d", *v, lo, hi)
	}
}

func validateTier(e *errs, t *Tier) {
	if strings.Contains(t.Name, ".") {
		e.add("metadata.name", "tier name %q must not contain '.'", t.Name)
	}
	if t.Spec.DefaultAction != "" {
		validateOneOf(e, "spec.defaultAction", t.Spec.DefaultAction, ActionDeny, ActionPass)
	}
}

func validateHostEndpoint(e *errs, s *HostEndpointSpec) {
	if s.Node == "" {
		e.add("spec.node", "node is required")
	}
	if s.InterfaceName == "" && len(s.ExpectedIPs) == 0 {
		e.add("spec.interfaceName", "interfaceName or expectedIPs is required")
	}
	if s.InterfaceName != "" && s.InterfaceName != "*" && !interfaceName.MatchString(s.InterfaceName) {
		e.add("spec.interfaceName", "invalid interface name %q", s.InterfaceName)
	}
	for i, ip := range s.ExpectedIPs {
		validateIP(e, fmt.Sprintf("spec.expectedIPs[%d]", i), ip, 0)
	}
	for i, p := range s.Ports {
		validateEndpointPort(e, fmt.Sprintf("spec.ports[%d]", i), p.Name, p.Protocol, p.Port)
	}
}

func validateWorkloadEndpoint(e *errs, s *WorkloadEndpointSpec) {
	if s.Node == "" {
		e.add("spec.node", "node is required")
	}
	if s.InterfaceName != "" && !interfaceName.MatchString(s.InterfaceName) {
		e.add("spec.interfaceName", "invalid interface name %q", s.InterfaceName)
	}
	validateNets(e, "spec.ipNetworks", s.IPNetworks, 0)
	validateNets(e, "spec.allowSpoofedSourcePrefixes", s.AllowSpoofedSourcePrefixes, 0)
	for i, n := range s.IPNATs {
		validateIP(e, fmt.Sprintf("spec.ipNATs[%d].internalIP", i), n.InternalIP, 0)
		validateIP(e, fmt.Sprintf("spec.ipNATs[%d].externalIP", i), n.ExternalIP, IPVersionOf(n.InternalIP))
	}
	validateMAC(e, "spec.mac", s.MAC)
	for i, p := range s.Ports {
		validateEndpointPort(e, fmt.Sprintf("spec.ports[%d]", i), p.Name, p.Protocol, p.Port)
	}
}

func validateEndpointPort(e *errs, field, name string, proto Protocol, port uint16) {
	if name == "" {
		e.add(field+".name", "port name is required")
	}
	if !proto.SupportsPorts() {
		e.add(field+".protocol", "protocol %s does not support ports", proto)
	}
	if port == 0 {
		e.add(field+".port", "port must be between 1 and 65535")
	}
}

func validateIPAMConfiguration(e *errs, c *IPAMConfiguration) {
	if c.Name != "default" {
		e.add("metadata.name", "IPAMConfiguration must be named \"default\"")
	}
	if c.Spec.MaxBlocksPerHost < 0 {
		e.add("spec.maxBlocksPerHost", "must not be negative")
	}
}
