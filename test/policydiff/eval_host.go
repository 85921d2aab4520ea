package policydiff

import (
	"fmt"
	"net/netip"

	"github.com/calico-host/calico-host/pkg/api"
)

// Host endpoints in the reference evaluator. Forwarded traffic meets them in filter FORWARD
// (felix/rules/static.go StaticFilterForwardChains): the forward dispatch of the input
// interface, the workload chains, then the forward dispatch of the output interface. The
// dispatch (felix/rules/dispatch.go hostDispatchChains) picks the host endpoint this node has
// on the interface, else its "*" (all-interfaces) endpoint, whose forward chains have no skip
// for workload interfaces: a "*" endpoint's forward policy meets traffic between local
// workloads too. Only applyOnForward policy is in the forward chains, and its selector sees the
// endpoint's labels and its profiles' labelsToApply; a NetworkPolicy never selects a host
// endpoint (it carries no namespace label).
//
// A forward chain (felix/rules/endpoints.go endpointIptablesChain with chainTypeForward) runs
// the tiers as a workload's do, end-of-tier drops included, but has no profiles and no drop
// after the last tier: Allow returns, and so does what is passed out of the last tier; either
// way the packet goes on. When no applyOnForward policy selects the endpoint (no forward tier,
// felix/calc/event_sequencer.go tierInfoToProtoTierInfo), the chain allows.
//
// The host endpoint's expected IPs are members of the IP sets of the selectors that match it
// (felix/labelindex named_port_index.go), like a workload's addresses.

type evalHost struct {
	hep    *api.HostEndpoint
	labels inherited
	ips    []netip.Prefix
}

// addHosts prepares the host endpoints. It refuses what it does not model: an endpoint
// resolved by its expected IPs (no interface name), named ports, and two endpoints of this node
// on one interface (Calico picks one by name).
func (e *Evaluator) addHosts(heps []*api.HostEndpoint) error {
	seen := map[string]bool{}
	for _, h := range heps {
		if h.Spec.InterfaceName == "" || len(h.Spec.Ports) > 0 {
			return fmt.Errorf("host endpoint %s: an endpoint without interfaceName, or with ports, is not modelled", h.Name)
		}
		if h.Spec.Node == e.node {
			if seen[h.Spec.InterfaceName] {
				return fmt.Errorf("host endpoint %s: a second endpoint on %s is not modelled", h.Name, h.Spec.InterfaceName)
			}
			seen[h.Spec.InterfaceName] = true
		}
		labels, err := e.inherit(h.Name, h.Labels, h.Spec.Profiles)
		if err != nil {
			return err
		}
		ips, err := parseNets(h.Name, h.Spec.ExpectedIPs)
		if err != nil {
			return err
		}
		e.hosts = append(e.hosts, &evalHost{hep: h, labels: labels, ips: ips})
	}
	return nil
}

// ifaceOf is the host's interface towards an end of a packet: the local workload's, or the
// uplink.
func ifaceOf(ep *evalEndpoint) string {
	if ep != nil {
		return ep.wep.Spec.InterfaceName
	}
	return uplink
}

// hostEndpointOn is the host endpoint of this node that governs an interface: the one named
// for it, else the "*" one, else none.
func (e *Evaluator) hostEndpointOn(iface string) *evalHost {
	var all *evalHost
	for _, h := range e.hosts {
		switch {
		case h.hep.Spec.Node != e.node:
		case h.hep.Spec.InterfaceName == iface:
			return h
		case h.hep.Spec.InterfaceName == "*":
			all = h
		}
	}
	return all
}

// hostForward runs the forward chain of the host endpoint on iface, if any (ingress: the
// packet came in through it; egress: it leaves through it), and reports whether the packet
// goes on.
func (e *Evaluator) hostForward(iface string, ingress bool, p Packet, v *Verdict) bool {
	h := e.hostEndpointOn(iface)
	if h == nil {
		return true
	}
	dir := "egress"
	if ingress {
		dir = "ingress"
	}
	v.tracef("forward %s of host endpoint %s (%s)", dir, h.hep.Name, iface)
	if !e.hasForwardPolicy(h) {
		v.tracef("  no applyOnForward policy selects it: allow")
		return true
	}
	isForward := func(pol *evalPolicy) bool { return pol.forward }
	switch e.tiersVerdict(h.labels, ingress, isForward, p, v) {
	case api.ActionAllow:
		return true
	case api.ActionDeny:
		return false
	}
	v.tracef("  passed out of the last tier: no profiles in forward chains, goes on")
	return true
}

// hasForwardPolicy reports whether an applyOnForward policy selects the endpoint, in either
// direction.
func (e *Evaluator) hasForwardPolicy(h *evalHost) bool {
	for _, t := range e.tiers {
		for _, pol := range t.policies {
			if pol.forward && pol.sel.Evaluate(h.labels) {
				return true
			}
		}
	}
	return false
}
