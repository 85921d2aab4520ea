package ruleset

import (
	"sort"
	"strings"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/rules"
	"github.com/calico-host/calico-host/pkg/nft"
)

// workloads are the local workload endpoints in the tables: their chains, rendered (by package
// rules) when their endpoint value changes, the same in both tables and named by their content,
// so that endpoints with the same policies share them (reference counts); and their elements
// of the dispatch maps. When two endpoints claim one interface, the lower ID owns it: only the
// owner is installed.
type workloads struct {
	cfg    *rules.Config
	tables tables
	groups *groups // the group and profile chains the workload chains jump to
	values *values // which endpoints are quarantined (their traffic is dropped)

	weps     map[calc.WorkloadEndpointID]*wepEntry
	byIface  map[string]map[calc.WorkloadEndpointID]bool // endpoints by interface
	chains   map[string]*sharedChain                     // the workload chains, by name
	dispatch dispatchEdits                               // dispatch map changes of this sync
	stale    map[calc.WorkloadEndpointID]bool            // to render again, though unchanged
}

type wepEntry struct {
	src       *calc.WorkloadEndpoint
	chains    [2]*sharedChain // to it (ingress policy), from it (egress policy)
	installed bool
}

// sharedChain is a workload chain and the chains it jumps to, held once for every endpoint
// rendered to it (they are named by their content), and in the tables while an installed
// endpoint uses it.
type sharedChain struct {
	rules.WorkloadChain
	held      int // endpoints rendered to it
	installed int // installed endpoints using it
}

func newWorkloads(cfg *rules.Config, t tables, g *groups, v *values) *workloads {
	return &workloads{
		cfg: cfg, tables: t, groups: g, values: v,
		weps: map[calc.WorkloadEndpointID]*wepEntry{}, byIface: map[string]map[calc.WorkloadEndpointID]bool{},
		chains: map[string]*sharedChain{}, stale: map[calc.WorkloadEndpointID]bool{},
	}
}

// dispatchEdits are the workload dispatch map changes of one sync, written to the maps of
// every table at its end (one copy of each map per sync, not per endpoint).
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

// markStale makes the next sync render endpoint id again (a quarantine of its values, or its
// release, changes its dispatch verdicts).
func (w *workloads) markStale(id calc.WorkloadEndpointID) {
	if w.weps[id] != nil {
		w.stale[id] = true
	}
}

// markAllStale makes the next sync render every endpoint again (their policies' grouping
// changed).
func (w *workloads) markAllStale() {
	for id := range w.weps {
		w.stale[id] = true
	}
}

// sync renders the endpoints whose value changed (the model lists them) or that are stale, and
// installs, in the tables, the chains and dispatch map elements of the owner of each interface
// that one of them had or has. g groups their tiers' policies.
func (w *workloads) sync(in *Input, g rules.Grouper) {
	touched := map[string]bool{}
	for id := range in.Changed.Endpoints {
		if !w.stale[id] {
			w.update(id, in.Endpoints[id], g, touched, false)
		}
	}
	for id := range w.stale {
		w.update(id, in.Endpoints[id], g, touched, true)
	}
	clear(w.stale)
	for iface := range touched {
		w.installOwner(iface)
	}
	w.flushDispatch()
}

// update renders endpoint id anew when its value changed (or force), noting the interfaces
// it had and has.
func (w *workloads) update(id calc.WorkloadEndpointID, ep *calc.WorkloadEndpoint, g rules.Grouper, touched map[string]bool, force bool) {
	e := w.weps[id]
	if e != nil && e.src == ep && !force {
		return
	}
	if e != nil {
		w.uninstall(id)
		w.unindex(id, e.src.Name)
		w.release(e)
		delete(w.weps, id)
		touched[e.src.Name] = true
	}
	if ep != nil && nft.IfnameKey(ep.Name) != (nft.Key{}) { // no usable name: no chains, no dispatch element
		e := &wepEntry{src: ep}
		for i, wc := range rules.WorkloadEndpoint(w.cfg, ep, g) {
			e.chains[i] = w.hold(wc)
		}
		w.weps[id] = e
		w.index(id, ep.Name)
		touched[ep.Name] = true
	}
}

// hold is the shared chain of a rendered workload chain: the one held already under its name
// (the rendering is dropped), or this one.
func (w *workloads) hold(wc rules.WorkloadChain) *sharedChain {
	sc := w.chains[wc.Chain.Name]
	if sc == nil {
		sc = &sharedChain{WorkloadChain: wc}
		w.chains[wc.Chain.Name] = sc
	}
	sc.held++
	return sc
}

// release lets go of an endpoint's chains (it is not installed).
func (w *workloads) release(e *wepEntry) {
	for _, sc := range e.chains {
		if sc.held--; sc.held == 0 {
			delete(w.chains, sc.Chain.Name)
		}
	}
}

// index and unindex keep the endpoints of each interface.
func (w *workloads) index(id calc.WorkloadEndpointID, iface string) {
	if w.byIface[iface] == nil {
		w.byIface[iface] = map[calc.WorkloadEndpointID]bool{}
	}
	w.byIface[iface][id] = true
}

func (w *workloads) unindex(id calc.WorkloadEndpointID, iface string) {
	delete(w.byIface[iface], id)
	if len(w.byIface[iface]) == 0 {
		delete(w.byIface, iface)
	}
}

// installOwner makes the owner of iface (the lowest ID among its endpoints) the installed
// endpoint for it.
func (w *workloads) installOwner(iface string) {
	var owner calc.WorkloadEndpointID
	found := false
	for id := range w.byIface[iface] {
		if !found || id.Compare(owner) < 0 {
			owner, found = id, true
		}
	}
	for id := range w.byIface[iface] {
		if id != owner {
			w.uninstall(id)
		}
	}
	if e := w.weps[owner]; found && !e.installed {
		w.install(owner, e)
	}
}

// install adds an endpoint's dispatch map elements and, for each of its two chains that no
// other endpoint uses already, the chain and its references.
func (w *workloads) install(id calc.WorkloadEndpointID, e *wepEntry) {
	for _, sc := range e.chains {
		if sc.installed == 0 {
			w.tables.putChain(sc.Chain)
			for _, r := range sc.Refs {
				w.groups.addRef(r, false)
			}
		}
		sc.installed++
	}
	w.dispatch.put(w.dispatchVerdicts(id, e))
	e.installed = true
}

// uninstall removes what install added (nothing if the endpoint is not installed): a chain
// and its references go with the last endpoint that uses it.
func (w *workloads) uninstall(id calc.WorkloadEndpointID) {
	e := w.weps[id]
	if e == nil || !e.installed {
		return
	}
	for _, sc := range e.chains {
		if sc.installed--; sc.installed > 0 {
			continue
		}
		w.tables.deleteChain(sc.Chain.Name)
		for _, r := range sc.Refs {
			w.groups.dropRef(r.Chain())
		}
	}
	w.dispatch.remove(nft.IfnameKey(e.src.Name))
	e.installed = false
}

// dispatchVerdicts are an installed endpoint's dispatch verdicts: drops while it is
// quarantined.
func (w *workloads) dispatchVerdicts(id calc.WorkloadEndpointID, e *wepEntry) (nft.Key, nft.Verdict, nft.Verdict) {
	key, from, to := rules.WorkloadDispatch(e.src.Name, rules.Workload{e.chains[0].WorkloadChain, e.chains[1].WorkloadChain})
	if w.values.withheld(endpointKey(id)) {
		return key, nft.Drop(), nft.Drop()
	}
	return key, from, to
}

// flushDispatch writes this sync's dispatch map changes to every table.
func (w *workloads) flushDispatch() {
	d := &w.dispatch
	if d.from == nil {
		return
	}
	var del []nft.Key
	for k := range d.del {
		del = append(del, k)
	}
	fromName, toName := rules.DispatchMaps()
	for _, t := range w.tables {
		must(t.UpdateMap(fromName, d.from, del))
		must(t.UpdateMap(toName, d.to, del))
	}
	*d = dispatchEdits{}
}

// describeChain names the installed endpoints whose chains include name (for the quarantine).
func (w *workloads) describeChain(name string) (label, what string) {
	sc := w.chains[name]
	if sc == nil || sc.installed == 0 {
		return "", ""
	}
	var out []string
	for id, e := range w.weps {
		if e.installed && (e.chains[0] == sc || e.chains[1] == sc) {
			out = append(out, id.WorkloadID+"/"+id.EndpointID)
		}
	}
	sort.Strings(out)
	if len(out) > 5 {
		out = append(out[:5], "...")
	}
	return "endpoint", "WorkloadEndpoint " + strings.Join(out, ", ")
}
