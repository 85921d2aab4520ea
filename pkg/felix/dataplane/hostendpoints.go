package dataplane

import (
	"cmp"
	"net/netip"
	"regexp"
	"slices"
	"strings"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/rules"
)

// ifaceMatcher decides which interfaces may be host endpoints: not workload interfaces, not
// excluded ones (InterfaceExclude).
type ifaceMatcher struct {
	workloadPrefixes []string
	exclude          []*regexp.Regexp
}

func newIfaceMatcher(cfg Config) *ifaceMatcher {
	return &ifaceMatcher{workloadPrefixes: cfg.InterfacePrefixes, exclude: cfg.InterfaceExclude}
}

func (im *ifaceMatcher) isWorkload(name string) bool {
	for _, p := range im.workloadPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

func (im *ifaceMatcher) hostEndpointAllowed(name string) bool {
	if im.isWorkload(name) {
		return false
	}
	for _, re := range im.exclude {
		if re.MatchString(name) {
			return false
		}
	}
	return true
}

// hepClaim is a host endpoint's claim on an interface; a claim by interface name beats one by
// expected IPs, then the lower endpoint name wins.
type hepClaim struct {
	ep     *calc.HostEndpoint
	byName bool
}

func (c hepClaim) beats(o hepClaim) bool {
	if c.byName != o.byName {
		return c.byName
	}
	return c.ep.Name < o.ep.Name
}

// resolveHostEndpoints maps host endpoints to interfaces: by name, "*" for all interfaces, or
// by their expected IPs against the interfaces' addresses. It returns the resolved pairs
// sorted by interface and, per endpoint name, the interfaces it got.
func resolveHostEndpoints(m *model, im *ifaceMatcher) ([]rules.HostIface, map[string][]string) {
	claims := map[string]hepClaim{}
	claim := func(iface string, c hepClaim) {
		if old, ok := claims[iface]; !ok || c.beats(old) {
			claims[iface] = c
		}
	}
	for _, ep := range m.heps {
		switch ep.InterfaceName {
		case rules.AllInterfaces:
			claim(rules.AllInterfaces, hepClaim{ep: ep, byName: true})
		case "":
			for _, iface := range ifacesWithAddrs(m, im, ep) {
				claim(iface, hepClaim{ep: ep})
			}
		default:
			if im.hostEndpointAllowed(ep.InterfaceName) {
				claim(ep.InterfaceName, hepClaim{ep: ep, byName: true})
			}
		}
	}
	out := make([]rules.HostIface, 0, len(claims))
	byEP := map[string][]string{}
	for iface, c := range claims {
		out = append(out, rules.HostIface{Iface: iface, EP: c.ep})
		byEP[c.ep.Name] = append(byEP[c.ep.Name], iface)
	}
	slices.SortFunc(out, func(a, b rules.HostIface) int { return cmp.Compare(a.Iface, b.Iface) })
	for _, ifs := range byEP {
		slices.Sort(ifs)
	}
	return out, byEP
}

// ifacesWithAddrs lists the interfaces holding one of the endpoint's expected IPs.
func ifacesWithAddrs(m *model, im *ifaceMatcher, ep *calc.HostEndpoint) []string {
	want := slices.Concat(ep.ExpectedIPv4Addrs, ep.ExpectedIPv6Addrs)
	var out []string
	for name, st := range m.ifaces {
		if im.hostEndpointAllowed(name) && slices.ContainsFunc(st.Addrs, func(p netip.Prefix) bool {
			return slices.Contains(want, p.Addr())
		}) {
			out = append(out, name)
		}
	}
	return out
}
