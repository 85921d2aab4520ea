package fleet

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/calico-host/calico-host/pkg/confd"
	"github.com/calico-host/calico-host/pkg/felix/calc"
)

// Model is what the dataplane would program from calc's batches: the latest value of every
// output ID (as JSON) and every IP set's members. Dump is its canonical form.
type Model struct {
	items  map[string]string
	sets   map[string]map[calc.IPSetMember]bool
	types  map[string]calc.IPSetType
	inSync bool
}

// NewModel returns an empty model.
func NewModel() *Model {
	return &Model{items: map[string]string{}, sets: map[string]map[calc.IPSetMember]bool{}, types: map[string]calc.IPSetType{}}
}

// Apply applies one batch; it fails on an update that contradicts the model (a removal of what
// it does not have, a delta that adds a present member, a second InSync).
func (m *Model) Apply(batch []calc.Update) error {
	for _, u := range batch {
		if err := m.applyOne(u); err != nil {
			return fmt.Errorf("%T: %w", u, err)
		}
	}
	return nil
}

func (m *Model) applyOne(u calc.Update) error {
	switch u := u.(type) {
	case calc.IPSetUpdate, calc.IPSetDelta, calc.IPSetRemove:
		return m.applySet(u)
	case calc.InSync:
		if m.inSync {
			return fmt.Errorf("second InSync")
		}
		m.inSync = true
		return nil
	}
	id, val, remove := itemOf(u)
	if id == "" {
		return fmt.Errorf("unknown update type")
	}
	if remove {
		if _, ok := m.items[id]; !ok {
			return fmt.Errorf("removing unknown %s", id)
		}
		delete(m.items, id)
		return nil
	}
	b, err := json.Marshal(val)
	if err != nil {
		return err
	}
	m.items[id] = string(b)
	return nil
}

// itemOf names an update's item and returns its value (or remove).
func itemOf(u calc.Update) (id string, val any, remove bool) {
	switch u := u.(type) {
	case calc.ConfigUpdate:
		return "config", u, false
	case calc.ActivePolicyUpdate:
		return "policy " + jsonID(u.ID), u.Policy, false
	case calc.ActivePolicyRemove:
		return "policy " + jsonID(u.ID), nil, true
	case calc.ActiveProfileUpdate:
		return "profile " + u.Name, u.Profile, false
	case calc.ActiveProfileRemove:
		return "profile " + u.Name, nil, true
	case calc.WorkloadEndpointUpdate:
		return "wep " + jsonID(u.ID), u.Endpoint, false
	case calc.WorkloadEndpointRemove:
		return "wep " + jsonID(u.ID), nil, true
	case calc.HostEndpointUpdate:
		return "hep " + u.Endpoint.Name, u.Endpoint, false
	case calc.HostEndpointRemove:
		return "hep " + u.Name, nil, true
	case calc.IPPoolUpdate:
		return "pool " + u.Pool.Name, u.Pool, false
	case calc.IPPoolRemove:
		return "pool " + u.Name, nil, true
	case calc.HostMetadataUpdate:
		return "host " + u.Host.Hostname, u.Host, false
	case calc.HostMetadataRemove:
		return "host " + u.Hostname, nil, true
	case calc.RouteUpdate:
		return "route " + u.Route.Dst.String(), u.Route, false
	case calc.RouteRemove:
		return "route " + u.Dst.String(), nil, true
	case calc.VTEPUpdate:
		return fmt.Sprintf("vtep %s/%v", u.VTEP.Node, u.VTEP.TunnelAddr.Is6()), u.VTEP, false
	case calc.VTEPRemove:
		return fmt.Sprintf("vtep %s/%v", u.Node, u.IPv6), nil, true
	}
	return "", nil, false
}

func jsonID(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func (m *Model) applySet(u calc.Update) error {
	switch u := u.(type) {
	case calc.IPSetUpdate:
		s := map[calc.IPSetMember]bool{}
		for _, mem := range u.Members {
			s[mem] = true
		}
		m.sets[u.ID], m.types[u.ID] = s, u.Type
	case calc.IPSetDelta:
		s := m.sets[u.ID]
		if s == nil {
			return fmt.Errorf("delta for unknown set %s", u.ID)
		}
		for _, mem := range u.Removed {
			if !s[mem] {
				return fmt.Errorf("set %s: removing absent member %v", u.ID, mem)
			}
			delete(s, mem)
		}
		for _, mem := range u.Added {
			if s[mem] {
				return fmt.Errorf("set %s: adding present member %v", u.ID, mem)
			}
			s[mem] = true
		}
	case calc.IPSetRemove:
		if m.sets[u.ID] == nil {
			return fmt.Errorf("removing unknown set %s", u.ID)
		}
		delete(m.sets, u.ID)
		delete(m.types, u.ID)
	}
	return nil
}

// Dump is the model as sorted lines: "<id> <json>" per item, "ipset <id> <type> <members>"
// per set, and "in-sync" once InSync was sent.
func (m *Model) Dump() []string {
	var out []string
	for id, v := range m.items {
		out = append(out, id+" "+v)
	}
	for id, s := range m.sets {
		var mems []string
		for mem := range s {
			mems = append(mems, fmt.Sprintf("%s/%d/%d", mem.Prefix, mem.Protocol, mem.Port))
		}
		slices.Sort(mems)
		out = append(out, fmt.Sprintf("ipset %s %d %v", id, m.types[id], mems))
	}
	if m.inSync {
		out = append(out, "in-sync")
	}
	slices.Sort(out)
	return out
}

// dumpConfd is confd's inputs as sorted lines, one per map entry.
func dumpConfd(in *confd.Inputs) []string {
	var out []string
	add := func(kind string, m any) {
		b, _ := json.Marshal(m)
		var entries map[string]json.RawMessage
		_ = json.Unmarshal(b, &entries)
		for k, v := range entries {
			out = append(out, fmt.Sprintf("confd %s %s %s", kind, k, v))
		}
	}
	add("bgpconfig", in.BGPConfigs)
	add("invalidconfig", in.InvalidConfigs)
	add("peer", in.Peers)
	add("filter", in.Filters)
	add("invalidfilter", in.InvalidFilters)
	add("node", in.Nodes)
	add("pool", in.Pools)
	add("affinity", in.Affinities)
	slices.Sort(out)
	return out
}
