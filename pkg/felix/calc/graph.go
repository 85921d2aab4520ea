package calc

import (
	"github.com/rs/zerolog"
	"slices"
	"strings"

	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// Graph is felix's calculation graph for one host. Feed it the syncer's messages with OnMessage
// and collect the resulting dataplane updates with Flush; Facts says what felix itself needs. It
// is not safe for concurrent use; a Loop drives it from one goroutine.
type Graph struct {
	host string
	log  zerolog.Logger
	revs map[datastore.ID]int64 // every key the model holds, with its revision (for snapshot diffs)
	// kinds counts the resource keys held by plural ("policies" for both policy kinds), for
	// the felix_cluster_num_* metrics.
	kinds map[string]int

	items     *itemRegistry
	ipsets    *ipSetCalc
	policies  *policyCalc
	profiles  *profileCalc
	endpoints *endpointCalc
	nodes     *nodeCalc
	pools     *poolCalc
	routes    *routeCalc
	config    *configCalc
	migration *migrationCalc
	peers     *bgpPeerCalc

	// routeSource resolves felix's RouteSource from the datastore's configuration (nil: CalicoIPAM).
	routeSource func(DatastoreConfig) RouteSource

	// stagedAsEnforced: staged policies are enforced in their place (Option StagedAsEnforced).
	stagedAsEnforced bool

	haveSnapshot  bool
	inSyncPending bool
	inSyncSent    bool
	status        syncer.Status // of the last message
}

// Option changes what a graph computes.
type Option func(*Graph)

// StagedAsEnforced makes the graph enforce StagedGlobalNetworkPolicies, StagedNetworkPolicies
// and StagedKubernetesNetworkPolicies in their place, among the enforced policies of their tier
// (PolicyID kinds "sgnp", "snp" and "sknp"; a Kubernetes one converted as Project Calico
// converts it: api.StagedKubernetesNetworkPolicy.View), as Project Calico's pending evaluation
// does (its app-policy checker's StagedAsEnforced scope); one whose stagedAction is Delete is
// left out, as Project Calico's syncer never sends it to felix. The model is the pending one:
// what the dataplane would enforce if the staged policies went live. Without it, staged
// policies are ignored.
func StagedAsEnforced() Option { return func(g *Graph) { g.stagedAsEnforced = true } }

// New returns an empty graph for the named host.
func New(hostname string, log zerolog.Logger, opts ...Option) *Graph {
	g := &Graph{host: hostname, log: log, revs: map[datastore.ID]int64{}, kinds: map[string]int{}}
	for _, o := range opts {
		o(g)
	}
	g.ipsets = newIPSetCalc(func(id string) *item { return g.items.items[id] })
	g.endpoints = newEndpointCalc()
	g.policies = newPolicyCalc(log, g.ipsets, g.endpoints.markDirty)
	g.items = newItemRegistry(g.ipsets.index, g.policies.index, g.ipsets.onContent)
	g.profiles = newProfileCalc(log, g.ipsets, g.items)
	g.peers = newBGPPeerCalc(hostname, log, g.endpoints.markDirty)
	g.items.wlIndex = g.peers.index
	g.endpoints.policies, g.endpoints.profiles, g.endpoints.peers = g.policies, g.profiles, g.peers
	g.migration = newMigrationCalc(log)
	g.endpoints.host, g.endpoints.migration = hostname, g.migration
	g.nodes = newNodeCalc(hostname)
	g.pools = newPoolCalc()
	g.routes = newRouteCalc(hostname, g.nodes, g.pools)
	g.config = newConfigCalc(hostname)
	return g
}

// OnMessage feeds one syncer message into the model. A snapshot replaces the model: keys it
// does not contain are deleted, and keys whose revision did not change are skipped.
func (g *Graph) OnMessage(m syncer.Message) {
	g.status = m.Status
	if m.Snapshot {
		g.applySnapshot(m.Updates)
		g.haveSnapshot = true
	} else {
		for _, u := range m.Updates {
			g.apply(u)
		}
	}
	if m.Status == syncer.InSync && g.haveSnapshot && !g.inSyncSent {
		g.inSyncPending = true
	}
}

func (g *Graph) applySnapshot(ups []syncer.Update) {
	present := make(map[datastore.ID]struct{}, len(ups))
	for _, u := range ups {
		if u.Value != nil {
			present[u.ID] = struct{}{}
		}
	}
	var gone []datastore.ID
	for id := range g.revs {
		if _, ok := present[id]; !ok {
			gone = append(gone, id)
		}
	}
	slices.SortFunc(gone, func(a, b datastore.ID) int { return strings.Compare(a.Key(), b.Key()) })
	for _, id := range gone {
		g.apply(syncer.Update{ID: id})
	}
	for _, u := range ups {
		if rev, ok := g.revs[u.ID]; ok && rev != 0 && rev == u.Revision && u.Value != nil {
			continue
		}
		g.apply(u)
	}
}

// apply applies one key's new value (nil: deleted).
func (g *Graph) apply(u syncer.Update) {
	var err error
	switch id := u.ID.(type) {
	case datastore.ResourceID:
		err = g.applyResource(id, u.Value)
	case datastore.BlockID:
		err = g.applyBlock(id, u.Value)
	default:
		g.log.Debug().Str("key", u.ID.Key()).Msg("Ignoring a key that names no resource or block")
		return
	}
	if err != nil {
		g.log.Warn().Err(err).Str("key", u.ID.Key()).Msg("Treating a value that cannot be interpreted as absent")
	}
	_, had := g.revs[u.ID]
	if u.Value == nil {
		delete(g.revs, u.ID)
	} else {
		g.revs[u.ID] = u.Revision
	}
	if _, has := g.revs[u.ID]; has != had {
		g.countKind(u.ID, has)
	}
}

// countKind keeps kinds up to date as a resource key appears or disappears.
func (g *Graph) countKind(id datastore.ID, added bool) {
	k, ok := id.(datastore.ResourceID)
	if !ok {
		return
	}
	plural := k.Kind.Plural
	if plural == "networkpolicies" || plural == "globalnetworkpolicies" {
		plural = "policies"
	}
	if added {
		g.kinds[plural]++
	} else {
		g.kinds[plural]--
	}
}

// Observe adds an observer of the local endpoints and tells it about every endpoint sent so far.
// Like the other methods, it must not run concurrently with them (Loop.Observe runs it on the
// loop's goroutine).
func (g *Graph) Observe(o EndpointObserver) { g.endpoints.observe(o) }

// Flush returns the updates accumulated since the last flush, in dependency order (as felix's
// event sequencer): config; IP set additions and changes; policies; profiles; endpoints;
// endpoint, profile and policy removals; IP set removals; route removals; VTEP removals and
// additions; route additions; hosts; IP pools; and InSync once, after the initial snapshot. It
// returns nil when there is nothing to send.
func (g *Graph) Flush() []Update {
	cfg := g.config.flush()
	polUpd, polRem := g.policies.flush()
	profUpd, profRem := g.profiles.flush()
	epUpd, epRem := g.endpoints.flush()
	setUpd, setRem := g.ipsets.flush()
	routeUpd, routeRem := g.routes.flush()
	hostUpd, hostRem, vtepUpd, vtepRem := g.nodes.flush()
	poolUpd, poolRem := g.pools.flush()
	var out []Update
	for _, part := range [][]Update{cfg, setUpd, polUpd, profUpd, epUpd, epRem, profRem, polRem, setRem,
		routeRem, vtepRem, vtepUpd, routeUpd, hostRem, hostUpd, poolRem, poolUpd} {
		out = append(out, part...)
	}
	if g.inSyncPending {
		out = append(out, InSync{})
		g.inSyncPending, g.inSyncSent = false, true
	}
	if len(out) == 0 {
		return nil
	}
	g.log.Debug().Int("updates", len(out)).Int("ipSetChanges", len(setUpd)+len(setRem)).
		Int("policyChanges", len(polUpd)+len(polRem)).Int("endpointChanges", len(epUpd)+len(epRem)).
		Msg("Calculation graph flushed")
	return out
}
