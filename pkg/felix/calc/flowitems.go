package calc

import (
	"context"
	"net/netip"
	"strings"
)

// Flow logs name the ends of a connection from calc's model: every endpoint of the cluster and
// every network set with its addresses and labels, and the tiers of this host's endpoints (the
// policy an end-of-tier drop names). An ItemObserver receives them on calc's goroutine.

// ItemKind is what an item is.
type ItemKind uint8

// Item kinds.
const (
	ItemWorkload ItemKind = iota
	ItemHostEndpoint
	ItemNetworkSet
)

// ItemInfo is one endpoint of any host or one network set, as flow logs name it. Its fields
// are never modified after it is handed out.
type ItemInfo struct {
	Kind      ItemKind
	Namespace string // "" for host endpoints and global network sets
	Name      string // the workload's name (the part of its WorkloadID after the namespace), the host endpoint's node or the network set's name
	Nets      []netip.Prefix
	Labels    map[string]string // its own labels, none inherited (felix's flow logs: ep.GetLabels())
	Local     bool              // an endpoint of this host
}

// ItemObserver learns the items and the normal tiers of this host's endpoints. Calc calls it
// from its own goroutine.
type ItemObserver interface {
	// ItemChanged says item id is now info (nil: gone).
	ItemChanged(id string, info *ItemInfo)
	// LocalTiers says this host's endpoint id now has these normal tiers (nil: gone).
	LocalTiers(id string, tiers []TierInfo)
}

// ObserveItems adds an item observer on the loop's goroutine, which tells it every item and
// local endpoint so far before ObserveItems returns, then each change. It reports false if ctx
// ended first.
func (l *Loop) ObserveItems(ctx context.Context, o ItemObserver) bool {
	return l.request(ctx, observeRequest{items: o, done: make(chan struct{})})
}

// observeItems adds o and tells it everything held.
func (g *Graph) observeItems(o ItemObserver) {
	g.items.observer = o
	for id, it := range g.items.items {
		o.ItemChanged(id, it.info())
	}
	g.endpoints.itemObserver = o
	for id, u := range g.endpoints.sent {
		o.LocalTiers(id, tiersOf(u))
	}
}

// info is what an observer learns of an item.
func (it *item) info() *ItemInfo {
	kinds := map[itemKind]ItemKind{itemWorkload: ItemWorkload, itemHost: ItemHostEndpoint, itemNetSet: ItemNetworkSet}
	return &ItemInfo{Kind: kinds[it.kind], Namespace: it.ns, Name: it.name, Nets: it.nets, Labels: it.own, Local: it.local}
}

// tiersOf is the normal tiers of an endpoint update.
func tiersOf(u Update) []TierInfo {
	switch u := u.(type) {
	case WorkloadEndpointUpdate:
		return u.Endpoint.Tiers
	case HostEndpointUpdate:
		return u.Endpoint.Tiers
	}
	return nil
}

// workloadName is the workload part of a WorkloadID ("namespace/name").
func workloadName(workloadID string) string {
	if _, name, ok := strings.Cut(workloadID, "/"); ok {
		return name
	}
	return workloadID
}
