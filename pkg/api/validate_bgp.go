package api

import (
	"fmt"
	"net"
	"regexp"
	"strconv"
)

var (
	communityValue = regexp.MustCompile(`^(\d+):(\d+)(:(\d+))?$`)
	communityName  = regexp.MustCompile(`^[a-zA-Z0-9][-a-zA-Z0-9_.]*$`)
)

func validateBGPConfiguration(e *errs, b *BGPConfiguration) {
	validateConfigName(e, b.Name)
	s := &b.Spec
	if s.LogSeverityScreen != "" {
		validateOneOf(e, "spec.logSeverityScreen", s.LogSeverityScreen, logSeverities...)
	}
	for field, blocks := range map[string][]ServiceIPBlock{"spec.serviceExternalIPs": s.ServiceExternalIPs,
		"spec.serviceClusterIPs": s.ServiceClusterIPs, "spec.serviceLoadBalancerIPs": s.ServiceLoadBalancerIPs} {
		for i, blk := range blocks {
			validateNets(e, fmt.Sprintf("%s[%d].cidr", field, i), []string{blk.CIDR}, 0)
		}
	}
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

func validateCommunity(e *errs, field, v string) {
	m := communityValue.FindStringSubmatch(v)
	if m == nil {
		e.add(field, "invalid community %q (want aa:nn or aa:nn:mm)", v)
		return
	}
	limit := uint64(65535)
	if m[4] != "" {
		limit = 1<<32 - 1
	}
	for _, part := range []string{m[1], m[2], m[4]} {
		if part == "" {
			continue
		}
		if n, err := strconv.ParseUint(part, 10, 64); err != nil || n > limit {
			e.add(field, "community %q has a part out of range", v)
			return
		}
	}
}

func validateBGPPeer(e *errs, s *BGPPeerSpec) {
	if s.Node != "" && s.NodeSelector != "" {
		e.add("spec.node", "node and nodeSelector cannot both be set")
	}
	if s.PeerIP != "" && s.PeerSelector != "" {
		e.add("spec.peerIP", "peerIP and peerSelector cannot both be set")
	}
	if s.PeerIP == "" && s.PeerSelector == "" {
		e.add("spec.peerIP", "peerIP or peerSelector is required")
	}
	if s.PeerIP != "" {
		if _, _, err := SplitPeerIP(s.PeerIP); err != nil {
			e.add("spec.peerIP", "%v", err)
		}
		if s.ASNumber == nil {
			e.add("spec.asNumber", "asNumber is required with peerIP")
		}
	}
	e.selector("spec.nodeSelector", s.NodeSelector)
	e.selector("spec.peerSelector", s.PeerSelector)
	if s.SourceAddress != "" {
		validateOneOf(e, "spec.sourceAddress", s.SourceAddress, "UseNodeIP", "None")
	}
	for i, f := range s.Filters {
		if !dns1123Subdomain.MatchString(f) {
			e.add(fmt.Sprintf("spec.filters[%d]", i), "invalid filter name %q", f)
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

func validateBGPFilter(e *errs, s *BGPFilterSpec) {
	validateFilterRules(e, "spec.exportV4", s.ExportV4, 4)
	validateFilterRules(e, "spec.importV4", s.ImportV4, 4)
	validateFilterRules(e, "spec.exportV6", s.ExportV6, 6)
	validateFilterRules(e, "spec.importV6", s.ImportV6, 6)
}

func validateFilterRules(e *errs, field string, rules []BGPFilterRule, version int) {
	for i, r := range rules {
		f := fmt.Sprintf("%s[%d]", field, i)
		validateOneOf(e, f+".action", r.Action, "Accept", "Reject")
		if r.CIDR != "" {
			validateNets(e, f+".cidr", []string{r.CIDR}, version)
		}
		if (r.CIDR == "") != (r.MatchOperator == "") {
			e.add(f, "cidr and matchOperator must be set together")
		}
		if r.MatchOperator != "" {
			validateOneOf(e, f+".matchOperator", r.MatchOperator, "Equal", "NotEqual", "In", "NotIn")
		}
		if r.Source != "" {
			validateOneOf(e, f+".source", r.Source, "RemotePeers")
		}
	}
}
