package api

import (
	"fmt"
	"net"
	"regexp"
	"strings"
)

func validateIPPool(e *errs, s *IPPoolSpec) {
	ip, n, err := net.ParseCIDR(s.CIDR)
	switch {
	case s.CIDR == "":
		e.addNamed("spec.cidr", poolCIDRName, nil, "IPPool CIDR must be specified")
		return
	case err != nil:
		e.addNamed("spec.cidr", poolCIDRName, s.CIDR, "IPPool CIDR must be a valid subnet")
		return
	}
	ones, bits := n.Mask.Size()
	if !ip.Equal(n.IP) {
		e.addNamed("spec.cidr", poolCIDRName, n.String(), "IPPool CIDR is not strictly masked")
	}
	lo, hi := 20, 32
	if bits == 128 {
		lo, hi = 116, 128
	}
	switch {
	case s.BlockSize < lo || s.BlockSize > hi:
		e.add("spec.blockSize", "block size %d must be between %d and %d for an IPv%d pool", s.BlockSize, lo, hi, ipv(bits))
	case s.BlockSize < ones && !s.Disabled:
		// Project Calico's CRD rule; a disabled pool allocates no block.
		e.addNamed("spec.blockSize", "spec", nil, "IP pool size is too small for use with Calico IPAM. It must be equal to or greater than the block size.")
	}
	validateOneOf(e, "spec.vxlanMode", s.VXLANMode, EncapNever, EncapAlways, EncapCrossSubnet)
	validateOneOf(e, "spec.ipipMode", s.IPIPMode, EncapNever, EncapAlways, EncapCrossSubnet)
	if s.VXLANMode != EncapNever && s.IPIPMode != EncapNever {
		e.add("spec.ipipMode", "IPIP and VXLAN cannot both be enabled on one pool")
	}
	if bits == 128 && s.IPIPMode != EncapNever {
		e.add("spec.ipipMode", "IPIP is not supported on an IPv6 pool")
	}
	for _, ll := range linkLocalNets {
		if n.Contains(ll.IP) || ll.Contains(n.IP) {
			e.add("spec.cidr", "%s overlaps with the IPv%d link-local range %s", s.CIDR, ipv(bits), ll)
		}
	}
	e.selector("spec.nodeSelector", s.NodeSelector)
	e.selector("spec.namespaceSelector", s.NamespaceSelector)
	for i, u := range s.AllowedUses {
		validateOneOf(e, fmt.Sprintf("spec.allowedUses[%d]", i), u, UseWorkload, UseTunnel, UseLoadBalancer)
	}
	validateOneOf(e, "spec.assignmentMode", s.AssignmentMode, "Automatic", "Manual")
}

// poolCIDRName is what Project Calico's messages call an IP pool's CIDR.
const poolCIDRName = "IPPool.Spec.CIDR"

// linkLocalNets are the ranges Project Calico refuses IP pools in: their addresses are not
// routed, and felix uses 169.254.1.1 and fe80::/64 addresses on workload interfaces.
var linkLocalNets = []*net.IPNet{
	{IP: net.IPv4(169, 254, 0, 0).To4(), Mask: net.CIDRMask(16, 32)},
	{IP: net.ParseIP("fe80::"), Mask: net.CIDRMask(10, 128)},
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
			return &ValidationError{Kind: "IPPool", Name: p.Name, Errors: []FieldError{{Field: "spec.cidr", Name: poolCIDRName, Value: p.Spec.CIDR,
				Message: fmt.Sprintf("IPPool(%s) CIDR overlaps with IPPool(%s) CIDR %s", p.Name, o.Name, o.Spec.CIDR)}}}
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

func validateTier(e *errs, t *Tier) {
	if strings.Contains(t.Name, ".") {
		e.add("metadata.name", "tier name %q must not contain '.'", t.Name)
	}
	if t.Spec.DefaultAction != "" {
		validateOneOf(e, "spec.defaultAction", t.Spec.DefaultAction, ActionDeny, ActionPass)
	}
	if want, ok := fixedTierActions[t.Name]; ok && t.Spec.DefaultAction != "" && t.Spec.DefaultAction != want {
		e.add("spec.defaultAction", "the %q tier must have default action %q", t.Name, want)
	}
}

// fixedTierActions are the default actions Project Calico requires of its built-in tiers.
var fixedTierActions = map[string]string{TierDefault: ActionDeny, "kube-admin": ActionPass, "kube-baseline": ActionPass}

func validateHostEndpoint(e *errs, s *HostEndpointSpec) {
	if s.Node == "" {
		e.add("spec.node", "node is required")
	}
	if s.InterfaceName == "" && len(s.ExpectedIPs) == 0 {
		e.add("spec.interfaceName", "interfaceName or expectedIPs is required")
	}
	if s.InterfaceName != "" && s.InterfaceName != "*" && !interfaceName.MatchString(s.InterfaceName) {
		e.addValue("spec.interfaceName", s.InterfaceName, "invalid interface name %q", s.InterfaceName)
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
	validateWorkloadProfiles(e, s)
	if s.InterfaceName != "" && !interfaceName.MatchString(s.InterfaceName) {
		e.addValue("spec.interfaceName", s.InterfaceName, "invalid interface name %q", s.InterfaceName)
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
	if s.QoSControls != nil {
		validateDSCP(e, "spec.qosControls.dscp", s.QoSControls.DSCP)
	}
}

// containerID is Project Calico's rule for spec.containerID.
var containerID = regexp.MustCompile(`^[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?$`)

// validateWorkloadNames applies Project Calico's name rules to the identity fields (each
// optional). They are write-time rules: Project Calico's felix validates only the dataplane
// fields of an endpoint it reads (its v1 model: interface, MAC, nets, profiles, ports), so an
// endpoint that networking-calico wrote with, say, an upper-case host name is still enforced.
func validateWorkloadNames(e *errs, s *WorkloadEndpointSpec) {
	for _, f := range []struct{ field, v string }{
		{"spec.orchestrator", s.Orchestrator}, {"spec.workload", s.Workload}, {"spec.node", s.Node},
		{"spec.pod", s.Pod}, {"spec.endpoint", s.Endpoint}, {"spec.serviceAccountName", s.ServiceAccountName},
	} {
		if f.v != "" && !dns1123Subdomain.MatchString(f.v) {
			e.add(f.field, "%q must consist of lower case alphanumeric characters, '-' or '.', and start and end with an alphanumeric character", f.v)
		}
	}
	if s.ContainerID != "" && !containerID.MatchString(s.ContainerID) {
		e.add("spec.containerID", "%q must consist of alphanumeric characters or '-', and start and end with an alphanumeric character", s.ContainerID)
	}
}

// validateWorkloadProfiles checks the profile names an endpoint refers to (read and write).
func validateWorkloadProfiles(e *errs, s *WorkloadEndpointSpec) {
	for i, p := range s.Profiles {
		if !dns1123Subdomain.MatchString(p) {
			e.add(fmt.Sprintf("spec.profiles[%d]", i), "profile name %q must consist of lower case alphanumeric characters, '-' or '.'", p)
		}
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
	if c.Spec.MaxBlocksPerHost > 1000000 {
		e.add("spec.maxBlocksPerHost", "%d is out of range 0-1000000", c.Spec.MaxBlocksPerHost)
	}
	if v := c.Spec.IPCooldownSeconds; v < 0 || v > 1200 {
		e.add("spec.ipCooldownSeconds", "%d is out of range 0-1200", v)
	}
	if v := c.Spec.MinIPReclaimAgeSeconds; v != nil && *v < 0 {
		e.add("spec.minIPReclaimAgeSeconds", "must not be negative")
	}
	validateEnums(e, false, []enumCheck{{"spec.kubeVirtVMAddressPersistence", deref(c.Spec.KubeVirtVMAddressPersistence), []string{"Enabled", "Disabled"}}})
}

func validateIPReservation(e *errs, s *IPReservationSpec) {
	validateNets(e, "spec.reservedCIDRs", s.ReservedCIDRs, 0)
}

func validateKubeControllersConfiguration(e *errs, c *KubeControllersConfiguration) {
	if c.Name != "default" {
		e.add("metadata.name", "KubeControllersConfiguration must be named \"default\"")
	}
	s, enabled := &c.Spec, []string{"Enabled", "Disabled"}
	checks := []enumCheck{
		{"spec.logSeverityScreen", s.LogSeverityScreen, []string{"None", "Debug", "Info", "Warning", "Error", "Fatal", "Panic"}},
		{"spec.healthChecks", s.HealthChecks, enabled},
	}
	if n := s.Controllers.Node; n != nil {
		checks = append(checks, enumCheck{"spec.controllers.node.syncLabels", n.SyncLabels, enabled})
		if h := n.HostEndpoint; h != nil {
			checks = append(checks, enumCheck{"spec.controllers.node.hostEndpoint.autoCreate", h.AutoCreate, enabled},
				enumCheck{"spec.controllers.node.hostEndpoint.createDefaultHostEndpoint", h.CreateDefaultHostEndpoint, enabled})
		}
	}
	if lb := s.Controllers.LoadBalancer; lb != nil {
		checks = append(checks, enumCheck{"spec.controllers.loadBalancer.assignIPs", lb.AssignIPs, []string{"AllServices", "RequestedServicesOnly"}})
	}
	if m := s.Controllers.Migration; m != nil {
		checks = append(checks, enumCheck{"spec.controllers.migration.policyNameMigrator", m.PolicyNameMigrator, enabled})
	}
	validateEnums(e, false, checks)
	validateRange(e, "spec.prometheusMetricsPort", s.PrometheusMetricsPort, 0, 65535)
	if p := s.DebugProfilePort; p != nil && (*p < 0 || *p > 65535) {
		e.add("spec.debugProfilePort", "%d is out of range 0-65535", *p)
	}
}

// validateHostEndpointTemplates applies Project Calico's rules to automatic host endpoint
// templates: a unique generateName (a resource name), interfaceCIDRs or interfacePattern, valid
// CIDRs, pattern, labels, annotations and node selector.
func validateHostEndpointTemplates(e *errs, templates []HostEndpointTemplate) {
	seen := map[string]bool{}
	for i, t := range templates {
		f := fmt.Sprintf("spec.controllers.node.hostEndpoint.templates[%d]", i)
		switch {
		case t.GenerateName == "":
			e.add(f+".generateName", "template name must be specified")
		case len(t.GenerateName) > 253 || !dns1123Subdomain.MatchString(t.GenerateName):
			e.add(f+".generateName", "invalid template name %q", t.GenerateName)
		case seen[t.GenerateName]:
			e.add(f+".generateName", "template name %q must be unique", t.GenerateName)
		}
		seen[t.GenerateName] = true
		if len(t.InterfaceCIDRs) == 0 && t.InterfacePattern == "" {
			e.add(f, "interfaceCIDRs or interfacePattern must be specified")
		}
		validateNets(e, f+".interfaceCIDRs", t.InterfaceCIDRs, 0)
		if _, err := regexp.Compile(t.InterfacePattern); err != nil {
			e.add(f+".interfacePattern", "invalid regular expression %q", t.InterfacePattern)
		}
		validateLabels(e, f+".labels", t.Labels)
		validateAnnotations(e, t.Annotations)
		e.selector(f+".nodeSelector", t.NodeSelector)
	}
}
