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

	gates endpointGates // what workload endpoints may ask for

	inSync       bool // calc sent InSync
	ifacesInSync bool // the interface monitor sent InSync

	// rulesChanged: a policy or profile was updated or removed since the ruleset builder last
	// looked (it then re-checks the chains rendered from them); the builder clears it.
	rulesChanged bool
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
	}
}

// apply records one calc update. It reports whether the update was understood.
func (m *model) apply(u calc.Update) bool {
	switch u := u.(type) {
	case calc.ConfigUpdate:
		m.host = u
	case calc.IPSetUpdate:
		m.ipsets[u.ID] = newIPSet(u.Type, u.Members)
	case calc.IPSetDelta:
		m.ipsetDelta(u)
	case calc.IPSetRemove:
		delete(m.ipsets, u.ID)
	case calc.ActivePolicyUpdate:
		m.policies[u.ID], m.rulesChanged = u.Policy, true
	case calc.ActivePolicyRemove:
		delete(m.policies, u.ID)
		m.rulesChanged = true
	case calc.ActiveProfileUpdate:
		m.profiles[u.Name], m.rulesChanged = u.Profile, true
	case calc.ActiveProfileRemove:
		delete(m.profiles, u.Name)
		m.rulesChanged = true
	case calc.WorkloadEndpointUpdate:
		if ep := m.gates.admit(u.ID, u.Endpoint); ep != nil {
			m.weps[u.ID] = ep
		} else {
			delete(m.weps, u.ID)
		}
	case calc.WorkloadEndpointRemove:
		delete(m.weps, u.ID)
	case calc.HostEndpointUpdate:
		m.heps[u.Endpoint.Name] = u.Endpoint
	case calc.HostEndpointRemove:
		delete(m.heps, u.Name)
	default:
		return m.applyNetwork(u)
	}
	return true
}

// applyNetwork records the updates about pools, hosts, routes and VTEPs.
func (m *model) applyNetwork(u calc.Update) bool {
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

// applyIface records an interface monitor update.
func (m *model) applyIface(u ifaces.Update) {
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
