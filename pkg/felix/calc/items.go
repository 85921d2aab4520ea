package calc

import (
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/calico-host/calico-host/pkg/api"
)

// Labels with a meaning for the calculation graph.
const (
	labelNamespace      = api.LabelNamespace
	labelOrchestrator   = api.LabelOrchestrator
	labelServiceAccount = api.LabelServiceAccount
	labelName           = "projectcalico.org/name"
	// nsLabelPrefix and saLabelPrefix carry a namespace's and a service account's labels on the
	// endpoints inside them, as in Calico (conversion.NamespaceLabelPrefix and
	// ServiceAccountLabelPrefix): namespaceSelector `a == "b"` is evaluated as `pcns.a == "b"`.
	nsLabelPrefix = "pcns."
	saLabelPrefix = "pcsa."
	// Profiles named kns.<ns> and ksa.<ns>.<sa> hold namespace and service-account labels.
	nsProfilePrefix = "kns."
	saProfilePrefix = "ksa."
)

// itemKind distinguishes the labelled objects that selectors match.
type itemKind uint8

const (
	itemWorkload itemKind = iota
	itemHost
	itemNetSet
)

// namedPort is a named port of an endpoint.
type namedPort struct {
	name  string
	proto uint8
	port  uint16
}

// item is one labelled object that selectors can match: an endpoint of any host or a network
// set. Items are immutable once registered; an update registers a new item.
type item struct {
	kind    itemKind
	own     map[string]string // the object's own labels, normalised
	parents []string          // profiles whose labelsToApply it inherits, in order
	ns, sa  string            // namespace and service account ("" when none)
	name    string            // what flow logs call it (ItemInfo.Name)
	nets    []netip.Prefix    // what it contributes to selector IP sets
	ports   []namedPort       // what it contributes to named-port IP sets
	local   bool              // an endpoint of this host: policies are matched against it
	flat    map[string]string // own labels over inherited ones (computed on registration)
}

// inherits reports whether the labels of profile name flow into the item: one of its profiles,
// or its namespace's or service account's (kns.<ns>, ksa.<ns>.<sa>).
func (it *item) inherits(name string) bool {
	if slices.Contains(it.parents, name) {
		return true
	}
	if ns, ok := strings.CutPrefix(name, nsProfilePrefix); ok && it.ns != "" && ns == it.ns {
		return true
	}
	rest, ok := strings.CutPrefix(name, saProfilePrefix) // <ns>.<sa>; either may hold dots
	n := len(it.ns)
	return ok && it.sa != "" && len(rest) == n+1+len(it.sa) && rest[:n] == it.ns && rest[n] == '.' && rest[n+1:] == it.sa
}

// itemRegistry keeps every item with its flattened labels, follows label inheritance from
// profiles (labelsToApply, kns.<ns>, ksa.<ns>.<sa>), and feeds the two label indexes: ipIndex
// holds every item (for IP sets), polIndex only this host's endpoints (for active policies).
type itemRegistry struct {
	items        map[string]*item
	labels       *labelSets                   // the items' own and flattened labels, shared
	parentLabels map[string]map[string]string // profile name -> labelsToApply
	ipIndex      *labelIndex
	polIndex     *labelIndex
	// wlIndex, when set, holds only this host's workload endpoints (local BGP peers).
	wlIndex *labelIndex
	// onContent is told when an item's addresses or ports change (before label changes are
	// indexed), so that IP sets move from the old contribution to the new one.
	onContent func(id string, old, cur *item)
	// observer, when set, learns every item and label change (flow logs).
	observer ItemObserver
}

func newItemRegistry(ipIndex, polIndex *labelIndex, onContent func(string, *item, *item)) *itemRegistry {
	return &itemRegistry{
		items:        map[string]*item{},
		labels:       newLabelSets(),
		parentLabels: map[string]map[string]string{},
		ipIndex:      ipIndex,
		polIndex:     polIndex,
		onContent:    onContent,
	}
}

// flatten computes the item's effective labels: its own, then each profile's labelsToApply,
// then its namespace's labels under pcns. and its service account's under pcsa.
func (r *itemRegistry) flatten(it *item) map[string]string {
	flat := make(map[string]string, len(it.own)+4)
	maps.Copy(flat, it.own)
	for _, p := range it.parents {
		for k, v := range r.parentLabels[p] {
			setIfAbsent(flat, k, v)
		}
	}
	if it.ns != "" {
		r.addScoped(flat, nsLabelPrefix, it.ns, nsProfilePrefix+it.ns)
	}
	if it.sa != "" {
		r.addScoped(flat, saLabelPrefix, it.sa, saProfilePrefix+it.ns+"."+it.sa)
	}
	return flat
}

// addScoped adds the labels of a namespace or service account under prefix: its name, plus the
// labelsToApply of its profile (keys written with or without the prefix).
func (r *itemRegistry) addScoped(flat map[string]string, prefix, name, profile string) {
	setIfAbsent(flat, prefix+labelName, name)
	for k, v := range r.parentLabels[profile] {
		setIfAbsent(flat, prefix+strings.TrimPrefix(k, prefix), v)
	}
}

func setIfAbsent(m map[string]string, k, v string) {
	if _, ok := m[k]; !ok {
		m[k] = v
	}
}

// update registers or replaces an item (its label maps become shared: see labelSets).
func (r *itemRegistry) update(id string, it *item) {
	old := r.items[id]
	it.own = r.labels.intern(it.own)
	it.flat = r.labels.intern(r.flatten(it))
	if old != nil {
		r.labels.release(old.own)
		r.labels.release(old.flat)
	}
	r.items[id] = it
	if old != nil {
		r.onContent(id, old, it)
	}
	r.ipIndex.UpdateItem(id, it.flat)
	r.tell(id, it)
	switch {
	case it.local:
		r.polIndex.UpdateItem(id, it.flat)
	case old != nil && old.local:
		r.polIndex.DeleteItem(id)
	}
	r.indexWorkload(id, old, it)
}

// indexWorkload keeps wlIndex up to date as an item changes from old to cur (nil: gone).
func (r *itemRegistry) indexWorkload(id string, old, cur *item) {
	isLocalWL := func(it *item) bool { return it != nil && it.local && it.kind == itemWorkload }
	switch {
	case r.wlIndex == nil:
	case isLocalWL(cur):
		r.wlIndex.UpdateItem(id, cur.flat)
	case isLocalWL(old):
		r.wlIndex.DeleteItem(id)
	}
}

// remove unregisters an item.
func (r *itemRegistry) remove(id string) {
	old := r.items[id]
	if old == nil {
		return
	}
	if old.local {
		r.polIndex.DeleteItem(id)
	}
	r.indexWorkload(id, old, nil)
	r.ipIndex.DeleteItem(id)
	delete(r.items, id)
	r.labels.release(old.own)
	r.labels.release(old.flat)
	r.tell(id, nil)
}

// tell tells the observer that item id is now it (nil: gone).
func (r *itemRegistry) tell(id string, it *item) {
	switch {
	case r.observer == nil:
	case it == nil:
		r.observer.ItemChanged(id, nil)
	default:
		r.observer.ItemChanged(id, it.info())
	}
}

// setProfileLabels records a profile's labelsToApply (nil when the profile is gone) and
// re-indexes the items that inherit from it.
func (r *itemRegistry) setProfileLabels(name string, labels map[string]string) {
	if maps.Equal(r.parentLabels[name], labels) {
		return
	}
	if labels == nil {
		delete(r.parentLabels, name)
	} else {
		r.parentLabels[name] = labels
	}
	for id, it := range r.items { // a profile's labels change rarely: no back-references kept
		if !it.inherits(name) {
			continue
		}
		flat := r.flatten(it)
		if maps.Equal(flat, it.flat) {
			continue
		}
		r.labels.release(it.flat)
		it.flat = r.labels.intern(flat)
		r.ipIndex.UpdateItem(id, it.flat)
		r.tell(id, it)
		if it.local {
			r.polIndex.UpdateItem(id, it.flat)
		}
		r.indexWorkload(id, nil, it)
	}
}

// sameContent reports whether two items contribute the same IP set members.
func sameContent(a, b *item) bool {
	return slices.Equal(a.nets, b.nets) && slices.Equal(a.ports, b.ports)
}
