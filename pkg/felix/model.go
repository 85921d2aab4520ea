package felix

import (
	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/config"
)

// model is what the daemon itself needs to know from calc's output: the datastore's part of
// the configuration, whether any IP pool uses VXLAN, and which local endpoints exist.
type model struct {
	cfg       *calc.ConfigUpdate
	cfgDirty  bool // cfg changed since the last takeConfig
	inSync    bool
	vxlan     map[string]bool // pool name -> uses VXLAN
	workloads map[calc.WorkloadEndpointID]bool
	hosts     map[string]bool
	// observers are told about local endpoints appearing and disappearing.
	observers []endpointObserver
}

// endpointObserver learns which local endpoints exist (the endpoint status reporters).
type endpointObserver interface {
	KnownWorkload(id calc.WorkloadEndpointID, exists bool)
	KnownHostEndpoint(name string, exists bool)
}

func newModel() *model {
	return &model{vxlan: map[string]bool{}, workloads: map[calc.WorkloadEndpointID]bool{}, hosts: map[string]bool{}}
}

// apply records one batch.
func (m *model) apply(batch []calc.Update) {
	for _, u := range batch {
		switch u := u.(type) {
		case calc.ConfigUpdate:
			c := u
			m.cfg, m.cfgDirty = &c, true
		case calc.InSync:
			m.inSync = true
		case calc.IPPoolUpdate:
			m.vxlan[u.Pool.Name] = !u.Pool.Disabled && (u.Pool.VXLANMode == "Always" || u.Pool.VXLANMode == "CrossSubnet")
		case calc.IPPoolRemove:
			delete(m.vxlan, u.Name)
		case calc.WorkloadEndpointUpdate:
			m.setWorkload(u.ID, true)
		case calc.WorkloadEndpointRemove:
			m.setWorkload(u.ID, false)
		case calc.HostEndpointUpdate:
			m.setHost(u.Endpoint.Name, true)
		case calc.HostEndpointRemove:
			m.setHost(u.Name, false)
		}
	}
}

func (m *model) setWorkload(id calc.WorkloadEndpointID, exists bool) {
	if exists {
		m.workloads[id] = true
	} else {
		delete(m.workloads, id)
	}
	for _, o := range m.observers {
		o.KnownWorkload(id, exists)
	}
}

func (m *model) setHost(name string, exists bool) {
	if exists {
		m.hosts[name] = true
	} else {
		delete(m.hosts, name)
	}
	for _, o := range m.observers {
		o.KnownHostEndpoint(name, exists)
	}
}

// observe adds an observer and tells it about every endpoint known so far.
func (m *model) observe(o endpointObserver) {
	m.observers = append(m.observers, o)
	for id := range m.workloads {
		o.KnownWorkload(id, true)
	}
	for name := range m.hosts {
		o.KnownHostEndpoint(name, true)
	}
}

// poolsUseVXLAN reports whether an enabled pool has vxlanMode Always or CrossSubnet.
func (m *model) poolsUseVXLAN() bool {
	for _, on := range m.vxlan {
		if on {
			return true
		}
	}
	return false
}

// datastoreReady reports whether ClusterInformation default says datastoreReady.
func (m *model) datastoreReady() bool { return m.cfg != nil && m.cfg.DatastoreReady }

// takeConfig returns the datastore's configuration and clears the dirty flag.
func (m *model) takeConfig() *config.Datastore {
	m.cfgDirty = false
	if m.cfg == nil {
		return nil
	}
	return &config.Datastore{Global: m.cfg.Global, Node: m.cfg.Node, Cluster: config.Cluster{
		Type: m.cfg.ClusterType, GUID: m.cfg.ClusterGUID, CalicoVersion: m.cfg.CalicoVersion,
		DatastoreReady: m.cfg.DatastoreReady, VXLANTunnelMAC: m.cfg.VXLANTunnelMAC,
	}}
}
