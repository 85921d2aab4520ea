package dataplane

import (
	"maps"
	"net/netip"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/ifaces"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/rules"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/ruleset"
)

// model is the dataplane's copy of calc's output: the latest value for every ID, plus the
// interface monitor's view. Managers compute desired kernel state from it. Values are never
// modified in place (except IP set members, which track their own changes), so a manager can
// cache what it derived from a value and recompute only when the pointer changes.
type model struct {
	host     calc.ConfigUpdate
	ipsets   map[string]*ruleset.IPSet
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

	// changes is what changed since the last ruleset build (rulesetBuilt clears it).
	changes ruleset.Changes
	// netChanged: something the routes, the workload interfaces' settings or the endpoint
	// statuses depend on may have changed since they were last applied without error (see
	// Dataplane.applyNetwork). IP sets, policies and profiles only reach the ruleset.
	netChanged bool
}

// vtepKey identifies a remote VTEP: one per host and family.
type vtepKey struct {
	node string
	v6   bool
}

func newModel() *model {
	return &model{
		ipsets:   map[string]*ruleset.IPSet{},
		policies: map[calc.PolicyID]*calc.Policy{},
		profiles: map[string]*calc.Profile{},
		weps:     map[calc.WorkloadEndpointID]*calc.WorkloadEndpoint{},
		heps:     map[string]*calc.HostEndpoint{},
		pools:    map[string]*calc.IPPool{},
		hosts:    map[string]*calc.HostMetadata{},
		routes:   map[netip.Prefix]*calc.Route{},
		vteps:    map[vtepKey]*calc.VTEP{},
		ifaces:   map[string]*ifaces.State{},

		changes: ruleset.Changes{Endpoints: map[calc.WorkloadEndpointID]bool{}, Policies: map[calc.PolicyID]bool{},
			Volatile: true},
		netChanged: true,
	}
}

// rulesetInput is what the ruleset builder renders: the model's values and changes, with what
// the dataplane resolved for the static chains.
func (m *model) rulesetInput(hosts []rules.HostIface, vxlan []rules.VXLANDevice, ipip bool) *ruleset.Input {
	return &ruleset.Input{
		Policies: m.policies, Profiles: m.profiles, Endpoints: m.weps, IPSets: m.ipsets,
		Pools: m.pools, Hosts: m.hosts, VTEPs: maps.Values(m.vteps), ServiceCIDRs: m.services,
		HostEndpoints: hosts, VXLAN: vxlan, IPIP: ipip,
		Changed: m.changes,
	}
}

// rulesetBuilt forgets the changes once the builder has rendered them (in is the input it
// built: a build again within the same apply renders no change twice).
func (m *model) rulesetBuilt(in *ruleset.Input) {
	clear(m.changes.Endpoints)
	clear(m.changes.Policies)
	m.changes.Rules, m.changes.Volatile = false, false
	in.Changed = m.changes
}

// apply records one calc update. It reports whether the update was understood.
func (m *model) apply(u calc.Update) bool {
	if !rulesetOnly(u) {
		m.netChanged = true
	}
	switch u := u.(type) {
	case calc.ConfigUpdate:
		m.host, m.changes.Volatile = u, true
	case calc.IPSetUpdate:
		m.ipsets[u.ID] = ruleset.NewIPSet(u.Type, u.Members)
	case calc.IPSetDelta:
		m.ipsetDelta(u)
	case calc.IPSetRemove:
		delete(m.ipsets, u.ID)
	case calc.ActivePolicyUpdate:
		m.policies[u.ID], m.changes.Rules = u.Policy, true
		m.changes.Policies[u.ID] = true
	case calc.ActivePolicyRemove:
		delete(m.policies, u.ID)
		m.changes.Rules = true
		m.changes.Policies[u.ID] = true
	case calc.ActiveProfileUpdate:
		m.profiles[u.Name], m.changes.Rules = u.Profile, true
	case calc.ActiveProfileRemove:
		delete(m.profiles, u.Name)
		m.changes.Rules = true
	case calc.WorkloadEndpointUpdate:
		m.setWEP(u.ID, m.gates.admit(u.ID, u.Endpoint))
	case calc.WorkloadEndpointRemove:
		m.setWEP(u.ID, nil)
	case calc.HostEndpointUpdate:
		m.heps[u.Endpoint.Name], m.changes.Volatile = u.Endpoint, true
	case calc.HostEndpointRemove:
		delete(m.heps, u.Name)
		m.changes.Volatile = true
	default:
		return m.applyNetwork(u)
	}
	return true
}

// rulesetOnly reports whether an update only reaches the ruleset: IP sets, policies and
// profiles. Anything else may change routes, workload interfaces or statuses.
func rulesetOnly(u calc.Update) bool {
	switch u.(type) {
	case calc.IPSetUpdate, calc.IPSetDelta, calc.IPSetRemove, calc.ActivePolicyUpdate, calc.ActivePolicyRemove,
		calc.ActiveProfileUpdate, calc.ActiveProfileRemove:
		return true
	}
	return false
}

// setWEP stores (nil: removes) a workload endpoint and notes the change.
func (m *model) setWEP(id calc.WorkloadEndpointID, ep *calc.WorkloadEndpoint) {
	if old := m.weps[id]; natOrSpoof(old) || natOrSpoof(ep) {
		m.changes.Volatile = true // the NAT and anti-spoofing chains list them
	}
	if ep == nil {
		delete(m.weps, id)
	} else {
		m.weps[id] = ep
	}
	m.changes.Endpoints[id] = true
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
		m.changes.Volatile = true // pools, VTEPs, host facts: NAT, VXLAN and internal sets
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
		typ := calc.IPSetNet
		if len(u.Added) > 0 && u.Added[0].Protocol != 0 {
			typ = calc.IPSetNamedPort
		}
		s = ruleset.NewIPSet(typ, nil)
		m.ipsets[u.ID] = s
	}
	s.Change(u.Added, u.Removed)
}

// applyIface records an interface monitor update (host endpoints may follow an interface's
// addresses).
func (m *model) applyIface(u ifaces.Update) {
	m.changes.Volatile, m.netChanged = true, true
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
