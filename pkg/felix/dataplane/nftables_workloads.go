package dataplane

import (
	"cmp"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/rules"
)

// syncWorkloads renders the endpoints whose value changed and installs, in the ruleset, the
// chains and dispatch map elements of each interface's owner. When two endpoints claim one
// interface, the lower ID owns it.
func (b *rulesetBuilder) syncWorkloads(m *model) {
	changed := false
	for id := range b.weps {
		if m.weps[id] == nil {
			b.uninstall(id)
			delete(b.weps, id)
			changed = true
		}
	}
	for id, ep := range m.weps {
		if e := b.weps[id]; e != nil && e.src == ep {
			continue
		}
		b.uninstall(id)
		b.weps[id] = &wepEntry{src: ep, ep: rules.WorkloadEndpoint(b.cfg, ep)}
		changed = true
	}
	if changed {
		b.installOwners(m)
	}
}

// installOwners makes the owner of every interface the installed endpoint for it.
func (b *rulesetBuilder) installOwners(m *model) {
	owners := make(map[string]calc.WorkloadEndpointID, len(b.weps))
	for id, e := range b.weps {
		if o, ok := owners[e.src.Name]; !ok || compareWEPIDs(id, o) < 0 {
			owners[e.src.Name] = id
		}
	}
	for id, e := range b.weps {
		if e.installed && owners[e.src.Name] != id {
			b.uninstall(id)
		}
	}
	for _, id := range owners {
		if e := b.weps[id]; !e.installed {
			b.install(e, m)
		}
	}
}

// install adds an endpoint's chains, its dispatch map elements and its references.
func (b *rulesetBuilder) install(e *wepEntry, m *model) {
	for _, c := range e.ep.Chains {
		b.rs.AddChain(c)
	}
	for _, r := range e.ep.Refs {
		b.addRef(r, m, false)
	}
	from, to := rules.WorkloadDispatch([]string{e.src.Name})
	b.from.Elements[e.src.Name] = from.Elements[e.src.Name]
	b.to.Elements[e.src.Name] = to.Elements[e.src.Name]
	b.touchDispatch()
	e.installed = true
}

// uninstall removes what install added (nothing if the endpoint is not installed).
func (b *rulesetBuilder) uninstall(id calc.WorkloadEndpointID) {
	e := b.weps[id]
	if e == nil || !e.installed {
		return
	}
	for _, c := range e.ep.Chains {
		b.rs.DeleteChain(c.Name)
	}
	for _, r := range e.ep.Refs {
		b.dropRef(r)
	}
	delete(b.from.Elements, e.src.Name)
	delete(b.to.Elements, e.src.Name)
	b.touchDispatch()
	e.installed = false
}

// touchDispatch reports an edit of the dispatch maps' elements to the tracked ruleset.
func (b *rulesetBuilder) touchDispatch() {
	b.rs.TouchMap(b.from.Name)
	b.rs.TouchMap(b.to.Name)
}

func compareWEPIDs(a, b calc.WorkloadEndpointID) int {
	return cmp.Or(cmp.Compare(a.OrchestratorID, b.OrchestratorID), cmp.Compare(a.WorkloadID, b.WorkloadID),
		cmp.Compare(a.EndpointID, b.EndpointID))
}
