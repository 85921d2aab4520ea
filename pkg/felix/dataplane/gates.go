package dataplane

import (
	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/felix/calc"
)

// orchestratorOpenStack is the orchestrator ID of networking-calico's workload endpoints.
const orchestratorOpenStack = "openstack"

// endpointGates are the configuration gates on what a workload endpoint may ask for. Its
// interface must match InterfacePrefix: felix configures and routes to no other interface (a
// workload endpoint named after the host's uplink would have the workload sysctls, proxy_arp and
// route_localnet, set on it; Project Calico configures it). As Project Calico's:
// allowSpoofedSourcePrefixes needs WorkloadSourceSpoofing Any (otherwise Calico's
// validation treats the endpoint as missing, so its interface is unknown and its traffic is
// dropped), and ipNATs are programmed (NAT and routes) only for OpenStack endpoints unless
// FloatingIPs is Enabled.
type endpointGates struct {
	spoofing    bool
	floatingIPs bool
	ifaces      *ifaceMatcher
	log         zerolog.Logger
}

func newEndpointGates(cfg Config, log zerolog.Logger) endpointGates {
	return endpointGates{spoofing: cfg.WorkloadSourceSpoofing, floatingIPs: cfg.FloatingIPs, ifaces: newIfaceMatcher(cfg), log: log}
}

// admit returns the endpoint as the dataplane may program it, or nil when it is to be treated
// as missing. It never modifies ep: a gated endpoint is a copy.
func (g endpointGates) admit(id calc.WorkloadEndpointID, ep *calc.WorkloadEndpoint) *calc.WorkloadEndpoint {
	if !g.ifaces.isWorkload(ep.Name) {
		g.log.Error().Str("orchestrator", id.OrchestratorID).Str("workload", id.WorkloadID).Str("endpoint", id.EndpointID).
			Str("interface", ep.Name).Strs("interface_prefix", g.ifaces.workloadPrefixes).
			Msg("Workload endpoint's interface does not match InterfacePrefix: treating it as missing " +
				"(nothing is configured on or routed to that interface; a workload interface without an endpoint drops its traffic)")
		return nil
	}
	if len(ep.AllowSpoofedSourcePrefixes) > 0 && !g.spoofing {
		g.log.Warn().Str("orchestrator", id.OrchestratorID).Str("workload", id.WorkloadID).Str("endpoint", id.EndpointID).
			Msg("Workload endpoint asks for allowSpoofedSourcePrefixes but WorkloadSourceSpoofing is not Any: " +
				"treating it as missing (its traffic is dropped)")
		return nil
	}
	if len(ep.IPv4NAT)+len(ep.IPv6NAT) > 0 && !g.floatingIPs && id.OrchestratorID != orchestratorOpenStack {
		g.log.Debug().Str("workload", id.WorkloadID).Str("endpoint", id.EndpointID).
			Msg("Ignoring the ipNATs of a non-OpenStack workload endpoint: FloatingIPs is not Enabled")
		c := *ep
		c.IPv4NAT, c.IPv6NAT = nil, nil
		return &c
	}
	return ep
}
