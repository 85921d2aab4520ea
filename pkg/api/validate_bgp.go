package api

import (
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
)

// validateDefaultOnlyBGP refuses, on a BGPConfiguration other than "default", the fields Project
// Calico allows only there. Any name is accepted (Project Calico stores them); only "default" and
// "node.<name>" take effect.
func validateDefaultOnlyBGP(e *errs, s *BGPConfigurationSpec) {
	for _, f := range []struct {
		field, name string
		set         bool
	}{
		{"spec.nodeToNodeMeshEnabled", "nodeToNodeMeshEnabled", s.NodeToNodeMeshEnabled != nil},
		{"spec.asNumber", "ASNumber", s.ASNumber != nil},
		{"spec.serviceLoadBalancerIPs", "ServiceLoadBalancerIPs", len(s.ServiceLoadBalancerIPs) > 0},
		{"spec.serviceExternalIPs", "ServiceExternalIPs", len(s.ServiceExternalIPs) > 0},
		{"spec.serviceClusterIPs", "ServiceClusterIPs", len(s.ServiceClusterIPs) > 0},
		{"spec.nodeMeshPassword", "nodeMeshPassword", s.NodeMeshPassword != nil},
		{"spec.nodeMeshMaxRestartTime", "nodeMeshMaxRestartTime", s.NodeMeshMaxRestartTime != nil},
	} {
		if f.set {
			e.addNamed(f.field, "BGPConfiguration.Spec."+strings.ToUpper(f.name[:1])+f.name[1:], nil,
				"Cannot set %s on a non default BGP Configuration.", f.name)
		}
	}
}

var (
	communityValue = regexp.MustCompile(`^(\d+):(\d+)(:(\d+))?$`)
	communityName  = regexp.MustCompile(`^[a-zA-Z0-9][-a-zA-Z0-9_.]*$`)
)

func validateBGPConfiguration(e *errs, b *BGPConfiguration) {
	s := &b.Spec
	validateEnums(e, false, []enumCheck{
		{"spec.logSeverityScreen", s.LogSeverityScreen, logSeverities},
		{"spec.bindMode", s.BindMode, []string{"None", "NodeIP"}},
		{"spec.serviceLoadBalancerAggregation", deref(s.ServiceLoadBalancerAggregation), []string{"Enabled", "Disabled"}},
		{"spec.programClusterRoutes", deref(s.ProgramClusterRoutes), clusterRoutes},
	})
	validateRanges(e, []rangeCheck{
		{"spec.ipv4NormalRoutePriority", s.IPv4NormalRoutePriority, 1, 2147483646},
		{"spec.ipv6NormalRoutePriority", s.IPv6NormalRoutePriority, 1, 2147483646},
	})
	for _, list := range []struct {
		field  string
		blocks []ServiceIPBlock
	}{{"spec.serviceLoadBalancerIPs", s.ServiceLoadBalancerIPs}, {"spec.serviceExternalIPs", s.ServiceExternalIPs},
		{"spec.serviceClusterIPs", s.ServiceClusterIPs}} {
		for i, blk := range list.blocks {
			if blk.CIDR != "" { // optional in Project Calico's API: an entry without one is ignored
				validateNets(e, fmt.Sprintf("%s[%d].cidr", list.field, i), []string{blk.CIDR}, 0)
			}
		}
	}
	if s.LocalWorkloadPeeringIPV4 != "" {
		validateIP(e, "spec.localWorkloadPeeringIPV4", s.LocalWorkloadPeeringIPV4, 4)
	}
	if s.LocalWorkloadPeeringIPV6 != "" {
		validateIP(e, "spec.localWorkloadPeeringIPV6", s.LocalWorkloadPeeringIPV6, 6)
	}
	if s.NodeToNodeMeshEnabled != nil && !*s.NodeToNodeMeshEnabled {
		if s.NodeMeshPassword != nil {
			e.add("spec.nodeMeshPassword", "nodeMeshPassword cannot be set when nodeToNodeMeshEnabled is false")
		}
		if s.NodeMeshMaxRestartTime != nil {
			e.add("spec.nodeMeshMaxRestartTime", "nodeMeshMaxRestartTime cannot be set when nodeToNodeMeshEnabled is false")
		}
	}
	validateCommunities(e, s)
	validatePassword(e, "spec.nodeMeshPassword", s.NodeMeshPassword)
	for i, name := range s.IgnoredInterfaces {
		if name == "*" || !IsInterfacePattern(name) {
			e.add(fmt.Sprintf("spec.ignoredInterfaces[%d]", i), "invalid interface pattern %q", name)
		}
	}
}

var (
	// secretKey is the grammar of a key of a Kubernetes Secret's data.
	secretKey = regexp.MustCompile(`^[-._a-zA-Z0-9]+$`)
)

// validatePassword checks a BGP password's secret key reference. Project Calico's API names a
// Kubernetes Secret and one of its keys: a Secret's name is a DNS-1123 subdomain (empty is
// accepted, as Project Calico's CRD does, and names nothing) and a data key is 1-253 letters,
// digits, '-', '_' or '.', not "." or ".." and not starting with "..". A reference outside those
// grammars can name no secret, in Kubernetes or under calico-confd's secrets directory.
func validatePassword(e *errs, field string, pw *BGPPassword) {
	if pw == nil || pw.SecretKeyRef == nil {
		return
	}
	ref := pw.SecretKeyRef
	if ref.Name != "" && (len(ref.Name) > 253 || !dns1123Subdomain.MatchString(ref.Name)) {
		e.add(field+".secretKeyRef.name", "invalid secret name %q: it must be a DNS-1123 subdomain", ref.Name)
	}
	switch k := ref.Key; {
	case k == "":
		e.add(field+".secretKeyRef.key", "key is required")
	case len(k) > 253 || !secretKey.MatchString(k) || k == "." || strings.HasPrefix(k, ".."):
		e.add(field+".secretKeyRef.key", "invalid secret key %q: letters, digits, '-', '_' and '.' (not \".\" and not starting with \"..\")", k)
	}
}

func validateCommunities(e *errs, s *BGPConfigurationSpec) {
	names := map[string]bool{}
	for i, c := range s.Communities {
		if !communityName.MatchString(c.Name) {
			e.add(fmt.Sprintf("spec.communities[%d].name", i), "invalid community name %q", c.Name)
		}
		validateCommunity(e, fmt.Sprintf("spec.communities[%d].value", i), c.Value)
		names[c.Name] = true
	}
	for i, pa := range s.PrefixAdvertisements {
		f := fmt.Sprintf("spec.prefixAdvertisements[%d]", i)
		validateNets(e, f+".cidr", []string{pa.CIDR}, 0)
		for j, c := range pa.Communities {
			if !names[c] && !communityValue.MatchString(c) {
				e.add(fmt.Sprintf("%s.communities[%d]", f, j), "%q is neither a defined community name nor a community value", c)
			}
		}
	}
}

func validateBGPPeer(e *errs, s *BGPPeerSpec) {
	validateBGPPeerTargets(e, s)
	e.selector("spec.nodeSelector", s.NodeSelector)
	e.selector("spec.peerSelector", s.PeerSelector)
	e.selector("spec.localWorkloadSelector", s.LocalWorkloadSelector)
	validateEnums(e, false, []enumCheck{
		{"spec.sourceAddress", s.SourceAddress, []string{"UseNodeIP", "None"}},
		{"spec.nextHopMode", s.NextHopMode, []string{"Auto", "Self", "Keep"}},
		{"spec.reversePeering", s.ReversePeering, []string{"Auto", "Manual"}},
	})
	if s.KeepOriginalNextHop && s.NextHopMode != "" {
		e.add("spec.nextHopMode", "keepOriginalNextHop and nextHopMode cannot both be set; keepOriginalNextHop is deprecated")
	}
	validateRange(e, "spec.ttlSecurity", s.TTLSecurity, 0, 255)
	validatePassword(e, "spec.password", s.Password)
	if s.ReachableBy != "" {
		if s.PeerIP == "" {
			e.add("spec.reachableBy", "reachableBy requires peerIP")
		}
		validateIP(e, "spec.reachableBy", s.ReachableBy, 0)
	}
	for i, f := range s.Filters {
		if !dns1123Subdomain.MatchString(f) {
			e.add(fmt.Sprintf("spec.filters[%d]", i), "invalid filter name %q", f)
		}
	}
}

// validateBGPPeerTargets checks which of node/nodeSelector and peerIP/peerSelector/
// localWorkloadSelector may be combined, and when asNumber is required or forbidden. As in
// Project Calico's CRD, none of them is required (calico-confd decides what a peer without a
// target or without asNumber renders); a node must be a node name.
func validateBGPPeerTargets(e *errs, s *BGPPeerSpec) {
	if s.Node != "" && s.NodeSelector != "" {
		e.add("spec.node", "node and nodeSelector cannot both be set")
	}
	if s.Node != "" && !dns1123Subdomain.MatchString(s.Node) {
		e.addValue("spec.node", s.Node, "invalid node name %q", s.Node)
	}
	if s.PeerIP != "" && s.PeerSelector != "" {
		e.add("spec.peerIP", "peerIP and peerSelector cannot both be set")
	}
	hasAS := s.ASNumber != nil && *s.ASNumber != 0
	switch {
	case s.LocalWorkloadSelector != "":
		if s.PeerIP != "" || s.PeerSelector != "" {
			e.add("spec.localWorkloadSelector", "peerIP and peerSelector must be empty when localWorkloadSelector is set")
		}
		if !hasAS {
			e.add("spec.asNumber", "asNumber is required with localWorkloadSelector")
		}
	case s.PeerSelector != "" && hasAS:
		e.add("spec.asNumber", "asNumber must be empty with peerSelector (the peer nodes' AS numbers are used)")
	}
	if s.PeerIP != "" {
		if _, _, err := SplitPeerIP(s.PeerIP); err != nil {
			e.addValue("spec.peerIP", s.PeerIP, "%v", err)
		}
	}
}

// SplitPeerIP splits "198.18.1.254:1179", "[fd00::1]:1179" or a bare IP into IP and port (0 if none).
func SplitPeerIP(s string) (net.IP, int, error) {
	if ip := net.ParseIP(s); ip != nil {
		return ip, 0, nil
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return nil, 0, fmt.Errorf("invalid peer IP %q", s)
	}
	ip := net.ParseIP(host)
	p, perr := strconv.Atoi(port)
	if ip == nil || perr != nil || p < 1 || p > 65535 {
		return nil, 0, fmt.Errorf("invalid peer IP %q", s)
	}
	return ip, p, nil
}
