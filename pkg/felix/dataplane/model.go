package dataplane

import (
	"net/netip"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/ifaces"
)

// model is the dataplane's copy of calc's output: the latest value for every ID, plus the
// interface monitor's view. Managers compute desired kernel state from it. Values are never
// modified in place (except IP set members, which track their own changes), so a manager can
// cache what it derived from a value and recompute only when the pointer changes.
type model struct {
	host     calc.ConfigUpdate
	ipsets   map[string]*ipSet
	policies map[calc.PolicyID]*calc.Policy
	profiles map[string]*calc.Profile
	weps     map[calc.WorkloadEndpointID]*calc.WorkloadEndpoint
	heps     map[string]*calc.HostEndpoint
	pools    map[string]*calc.IPPool
	hosts    map[string]*calc.HostMetadata
	routes   map[netip.Prefix]*calc.Route
	vteps    map[vtepKey]*calc.VTEP
	ifaces   map[string]*ifaces.State
	services []string // the service CIDRs of BGPConfiguration default, as written

	gates endpointGates // what workload endpoints may ask for

	inSync       bool // calc sent InSync
	ifacesInSync bool // the interface monitor sent InSync

	// rulesChanged: a policy or profile was updated or removed since the ruleset builder last
	// looked (it then re-checks the chains rendered from them); the builder clears it.
	rulesChanged bool
	// What changed since the ruleset builder last looked (it clears them): the workload
	// endpoints and policies updated or removed, and whether anything the static and host
	// endpoint rules depend on changed (host endpoints, interfaces, pools, VTEPs, host
	// configuration, an endpoint's floating IPs or spoofing exceptions).
	changedWEPs     map[calc.WorkloadEndpointID]bool
	changedPolicies map[calc.PolicyID]bool
	volatileChanged bool
}

// vtepKey identifies a remote VTEP: one per host and family.
type vtepKey struct {
	node string
	v6   bool
}

func newModel() *model {
	return &model{
		ipsets:   map[string]*ipSet{},
		policies: map[calc.PolicyID]*calc.Policy{},
		profiles: map[string]*calc.Profile{},
		weps:     map[calc.WorkloadEndpointID]*calc.WorkloadEndpoint{},
		heps:     map[string]*calc.HostEndpoint{},
		pools:    map[string]*calc.IPPool{},
		hosts:    map[string]*calc.HostMetadata{},
		routes:   map[netip.Prefix]*calc.Route{},
		vteps:    map[vtepKey]*calc.VTEP{},
		ifaces:   map[string]*ifaces.State{},

		changedWEPs: map[calc.WorkloadEndpointID]bool{}, changedPolicies: map[calc.PolicyID]bool{},
		volatileChanged: true,
	}
}

// apply records one calc update. It reports whether the update was understood.
func (m *model) apply(u calc.Update) bool {
	switch u := u.(type) {
	case calc.ConfigUpdate:
		m.host, m.volatileChanged = u, true
	case calc.IPSetUpdate:
		m.ipsets[u.ID] = newIPSet(u.Type, u.Members)
	case calc.IPSetDelta:
		m.ipsetDelta(u)
	case calc.IPSetRemove:
		delete(m.ipsets, u.ID)
	case calc.ActivePolicyUpdate:
		m.policies[u.ID], m.rulesChanged = u.Policy, true
		m.changedPolicies[u.ID] = true
	case calc.ActivePolicyRemove:
		delete(m.policies, u.ID)
		m.rulesChanged = true
		m.changedPolicies[u.ID] = true
	case calc.ActiveProfileUpdate:
		m.profiles[u.Name], m.rulesChanged = u.Profile, true
	case calc.ActiveProfileRemove:
		delete(m.profiles, u.Name)
		m.rulesChanged = true
	case calc.WorkloadEndpointUpdate:
		m.setWEP(u.ID, m.gates.admit(u.ID, u.Endpoint))
	case calc.WorkloadEndpointRemove:
		m.setWEP(u.ID, nil)
	case calc.HostEndpointUpdate:
		m.heps[u.Endpoint.Name], m.volatileChanged = u.Endpoint, true
	case calc.HostEndpointRemove:
		delete(m.heps, u.Name)
		m.volatileChanged = true
	default:
		return m.applyNetwork(u)
	}
	return true
}

// setWEP stores (nil: removes) a workload endpoint and notes the change.
func (m *model) setWEP(id calc.WorkloadEndpointID, ep *calc.WorkloadEndpoint) {
	if old := m.weps[id]; natOrSpoof(old) || natOrSpoof(ep) {
		m.volatileChanged = true // the NAT and anti-spoofing chains list them
	}
	if ep == nil {
		delete(m.weps, id)
	} else {
		m.weps[id] = ep
	}
	m.changedWEPs[id] = true
}

// natOrSpoof reports whether an endpoint has floating IPs or spoofing exceptions.
func natOrSpoof(ep *calc.WorkloadEndpoint) bool {
	return ep != nil && len(ep.IPv4NAT)+len(ep.IPv6NAT)+len(ep.AllowSpoofedSourcePrefixes) > 0
}

// applyNetwork records the updates about pools, hosts, routes and VTEPs.
func (m *model) applyNetwork(u calc.Update) bool {
	switch u.(type) {
	case calc.RouteUpdate, calc.RouteRemove, calc.InSync:
	default:
		m.volatileChanged = true // pools, VTEPs, host facts: NAT, VXLAN and internal sets
	}
	switch u := u.(type) {
	case calc.IPPoolUpdate:
		m.pools[u.Pool.Name] = u.Pool
	case calc.IPPoolRemove:
		delete(m.pools, u.Name)
	case calc.HostMetadataUpdate:
		m.hosts[u.Host.Hostname] = u.Host
	case calc.HostMetadataRemove:
		delete(m.hosts, u.Hostname)
	case calc.RouteUpdate:
		m.routes[u.Route.Dst] = u.Route
	case calc.RouteRemove:
		delete(m.routes, u.Dst)
	case calc.VTEPUpdate:
		m.vteps[vtepKey{u.VTEP.Node, u.VTEP.TunnelAddr.Is6()}] = u.VTEP
	case calc.VTEPRemove:
		delete(m.vteps, vtepKey{u.Node, u.IPv6})
	case calc.InSync:
		m.inSync = true
	case calc.ServiceCIDRsUpdate:
		m.services = u.CIDRs
	default:
		return false
	}
	return true
}

func (m *model) ipsetDelta(u calc.IPSetDelta) {
	s := m.ipsets[u.ID]
	if s == nil {
		// A delta for a set we never saw: calc promised it would not happen; start from empty.
		s = newIPSet(calc.IPSetNet, nil)
		if len(u.Added) > 0 && u.Added[0].Protocol != 0 {
			s.typ = calc.IPSetNamedPort
		}
		m.ipsets[u.ID] = s
	}
	s.change(u.Added, u.Removed)
}

// applyIface records an interface monitor update (host endpoints may follow an interface's
// addresses).
func (m *model) applyIface(u ifaces.Update) {
	m.volatileChanged = true
	switch {
	case u.InSync:
		m.ifacesInSync = true
	case u.State == nil:
		delete(m.ifaces, u.Name)
	default:
		m.ifaces[u.Name] = u.State
	}
}

// ifaceUp reports whether the interface exists and is operationally up.
func (m *model) ifaceUp(name string) bool {
	i := m.ifaces[name]
	return i != nil && i.Up
}
