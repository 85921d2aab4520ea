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

// syncWorkloads renders the endpoints whose value changed (the model lists them) and installs, in the tables, the
// chains and dispatch map elements of the owner of each interface that one of them had or has.
// When two endpoints claim one interface, the lower ID owns it.
func (b *rulesetBuilder) syncWorkloads(m *model) {
	touched := map[string]bool{}
	g := b.grouper(m)
	for id := range m.changedWEPs {
		ep, e := m.weps[id], b.weps[id]
		if e != nil && e.src == ep && !e.stale {
			continue
		}
		if e != nil {
			b.uninstall(id)
			b.unindex(id, e.src.Name)
			delete(b.weps, id)
			touched[e.src.Name] = true
		}
		if ep != nil {
			b.weps[id] = &wepEntry{src: ep, ep: rules.WorkloadEndpoint(b.cfg, ep, g)}
			b.index(id, ep.Name)
			touched[ep.Name] = true
		}
	}
	clear(m.changedWEPs)
	for iface := range touched {
		b.installOwner(iface)
	}
	b.flushDispatch()
}

// index and unindex keep the endpoints of each interface.
func (b *rulesetBuilder) index(id calc.WorkloadEndpointID, iface string) {
	if b.byIface[iface] == nil {
		b.byIface[iface] = map[calc.WorkloadEndpointID]bool{}
	}
	b.byIface[iface][id] = true
}

func (b *rulesetBuilder) unindex(id calc.WorkloadEndpointID, iface string) {
	delete(b.byIface[iface], id)
	if len(b.byIface[iface]) == 0 {
		delete(b.byIface, iface)
	}
}

// installOwner makes the owner of iface (the lowest ID among its endpoints) the installed
// endpoint for it.
func (b *rulesetBuilder) installOwner(iface string) {
	var owner calc.WorkloadEndpointID
	found := false
	for id := range b.byIface[iface] {
		if !found || compareWEPIDs(id, owner) < 0 {
			owner, found = id, true
		}
	}
	for id := range b.byIface[iface] {
		if id != owner {
			b.uninstall(id)
		}
	}
	if e := b.weps[owner]; found && !e.installed {
		b.install(owner, e)
	}
}

// install adds an endpoint's dispatch map elements and, for each of its two chains that no
// other endpoint uses already, the chain and its references.
func (b *rulesetBuilder) install(id calc.WorkloadEndpointID, e *wepEntry) {
	for _, wc := range e.ep {
		if b.wlChains[wc.Chain.Name] == 0 {
			b.putChain(wc.Chain)
			for _, r := range wc.Refs {
				b.addRef(r, false)
			}
		}
		b.wlChains[wc.Chain.Name]++
	}
	b.dispatch.put(b.dispatchVerdicts(id, e))
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
