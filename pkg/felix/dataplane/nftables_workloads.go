package dataplane

import (
	"cmp"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/rules"
	"github.com/calico-host/calico-host/pkg/nft"
)

// dispatchEdits are the workload dispatch map changes of one build, written to the maps of
// every table at the end of syncWorkloads (one copy of each map per build, not per endpoint).
type dispatchEdits struct {
	from, to map[nft.Key]nft.Verdict // put
	del      map[nft.Key]bool
}

func (d *dispatchEdits) put(key nft.Key, from, to nft.Verdict) {
	if d.from == nil {
		d.from, d.to, d.del = map[nft.Key]nft.Verdict{}, map[nft.Key]nft.Verdict{}, map[nft.Key]bool{}
	}
	d.from[key], d.to[key] = from, to
	delete(d.del, key)
}

func (d *dispatchEdits) remove(key nft.Key) {
	if d.from == nil {
		d.from, d.to, d.del = map[nft.Key]nft.Verdict{}, map[nft.Key]nft.Verdict{}, map[nft.Key]bool{}
	}
	delete(d.from, key)
	delete(d.to, key)
	d.del[key] = true
}

// syncWorkloads renders the endpoints whose value changed and installs, in the tables, the
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
	g := b.grouper(m)
	for id, ep := range m.weps {
		if e := b.weps[id]; e != nil && e.src == ep {
			continue
		}
		b.uninstall(id)
		b.weps[id] = &wepEntry{src: ep, ep: rules.WorkloadEndpoint(b.cfg, ep, g)}
		changed = true
	}
	if changed {
		b.installOwners()
	}
	b.flushDispatch()
}

// installOwners makes the owner of every interface the installed endpoint for it.
func (b *rulesetBuilder) installOwners() {
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
			b.install(e)
		}
	}
}

// install adds an endpoint's dispatch map elements and, for each of its two chains that no
// other endpoint uses already, the chain and its references.
func (b *rulesetBuilder) install(e *wepEntry) {
	for _, wc := range e.ep {
		if b.wlChains[wc.Chain.Name] == 0 {
			b.putChain(wc.Chain)
			for _, r := range wc.Refs {
				b.addRef(r, false)
			}
		}
		b.wlChains[wc.Chain.Name]++
	}
	key, from, to := rules.WorkloadDispatch(e.src.Name, e.ep)
	b.dispatch.put(key, from, to)
	e.installed = true
}

// uninstall removes what install added (nothing if the endpoint is not installed): a chain
// and its references go with the last endpoint that uses it.
func (b *rulesetBuilder) uninstall(id calc.WorkloadEndpointID) {
	e := b.weps[id]
	if e == nil || !e.installed {
		return
	}
	for _, wc := range e.ep {
		if b.wlChains[wc.Chain.Name]--; b.wlChains[wc.Chain.Name] > 0 {
			continue
		}
		delete(b.wlChains, wc.Chain.Name)
		b.deleteChain(wc.Chain.Name)
		for _, r := range wc.Refs {
			b.dropRef(r.Chain())
		}
	}
	b.dispatch.remove(nft.IfnameKey(e.src.Name))
	e.installed = false
}

// flushDispatch writes this build's dispatch map changes to every table.
func (b *rulesetBuilder) flushDispatch() {
	d := &b.dispatch
	if d.from == nil {
		return
	}
	var del []nft.Key
	for k := range d.del {
		del = append(del, k)
	}
	fromName, toName := rules.DispatchMaps()
	for _, t := range b.tables {
		must(t.UpdateMap(fromName, d.from, del))
		must(t.UpdateMap(toName, d.to, del))
	}
	*d = dispatchEdits{}
}

func compareWEPIDs(a, b calc.WorkloadEndpointID) int {
	return cmp.Or(cmp.Compare(a.OrchestratorID, b.OrchestratorID), cmp.Compare(a.WorkloadID, b.WorkloadID),
		cmp.Compare(a.EndpointID, b.EndpointID))
}
