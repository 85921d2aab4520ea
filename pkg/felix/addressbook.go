package felix

import (
	"net/netip"
	"sync"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/flowlog"
	"github.com/calico-host/calico-host/pkg/flowlog/ruleid"
)

// addressBook is what the flow collector asks of calc's model (collector.Endpoints): what is
// at an address (an endpoint of any host, else a network set, by longest prefix) and the tiers
// of this host's endpoints. Calc fills it (calc.ItemObserver) on its goroutine; the collector
// reads it on its own.
type addressBook struct {
	mu        sync.RWMutex
	items     map[string]*calc.ItemInfo
	tiers     map[string][]calc.TierInfo // this host's endpoints, by item ID
	endpoints prefixIndex                // endpoints' addresses
	netSets   prefixIndex                // network sets' nets
}

func newAddressBook() *addressBook {
	return &addressBook{items: map[string]*calc.ItemInfo{}, tiers: map[string][]calc.TierInfo{},
		endpoints: newPrefixIndex(), netSets: newPrefixIndex()}
}

// ItemChanged implements calc.ItemObserver.
func (b *addressBook) ItemChanged(id string, info *calc.ItemInfo) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if old := b.items[id]; old != nil {
		b.indexOf(old).remove(id, old.Nets)
		delete(b.items, id)
	}
	if info != nil {
		b.items[id] = info
		b.indexOf(info).add(id, info.Nets)
	}
}

// LocalTiers implements calc.ItemObserver.
func (b *addressBook) LocalTiers(id string, tiers []calc.TierInfo) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if tiers == nil {
		delete(b.tiers, id)
		return
	}
	b.tiers[id] = tiers
}

func (b *addressBook) indexOf(info *calc.ItemInfo) prefixIndex {
	if info.Kind == calc.ItemNetworkSet {
		return b.netSets
	}
	return b.endpoints
}

// Lookup implements collector.Endpoints.
func (b *addressBook) Lookup(a netip.Addr) (flowlog.Endpoint, bool, bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	id, ok := b.endpoints.lookup(a)
	if !ok {
		id, ok = b.netSets.lookup(a)
	}
	if !ok {
		return flowlog.Endpoint{}, false, false
	}
	info := b.items[id]
	return flowEndpoint(info), info.Local, true
}

// flowEndpoint is an item as a flow names it.
func flowEndpoint(info *calc.ItemInfo) flowlog.Endpoint {
	types := map[calc.ItemKind]flowlog.EndpointType{calc.ItemWorkload: flowlog.WorkloadEndpoint,
		calc.ItemHostEndpoint: flowlog.HostEndpoint, calc.ItemNetworkSet: flowlog.NetworkSet}
	ns := info.Namespace
	if ns == "" {
		ns = flowlog.NoNamespace
	}
	return flowlog.Endpoint{Type: types[info.Kind], Name: info.Name, Namespace: ns, Labels: info.Labels}
}

// Trigger implements collector.Endpoints: the last policy of tier in direction dir of the
// local endpoint at address a.
func (b *addressBook) Trigger(a netip.Addr, dir ruleid.Direction, tier string) (ruleid.Policy, bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	id, ok := b.endpoints.lookup(a)
	if !ok {
		return ruleid.Policy{}, false
	}
	for _, t := range b.tiers[id] {
		pols := t.IngressPolicies
		if dir == ruleid.Egress {
			pols = t.EgressPolicies
		}
		if t.Name == tier && len(pols) > 0 {
			return flowPolicy(pols[len(pols)-1])
		}
	}
	return ruleid.Policy{}, false
}

// flowPolicy names a calc policy as flow logs do.
func flowPolicy(id calc.PolicyID) (ruleid.Policy, bool) {
	kind, ok := flowlog.KindFromShort(id.Kind)
	return ruleid.Policy{Kind: kind, Namespace: id.Namespace, Name: id.Name}, ok
}

// prefixIndex finds the item whose prefix holds an address, longest prefix first (the lowest
// item ID among equal prefixes, so that answers do not depend on the order of updates).
type prefixIndex struct {
	byPrefix map[netip.Prefix]map[string]struct{}
	lens     map[int]int // prefix lengths present (IPv4 as 0-32, IPv6 as 100+0-128), counted
}

func newPrefixIndex() prefixIndex {
	return prefixIndex{byPrefix: map[netip.Prefix]map[string]struct{}{}, lens: map[int]int{}}
}

func lenKey(p netip.Prefix) int {
	if p.Addr().Is4() {
		return p.Bits()
	}
	return 100 + p.Bits()
}

func (x prefixIndex) add(id string, nets []netip.Prefix) {
	for _, p := range nets {
		if x.byPrefix[p] == nil {
			x.byPrefix[p] = map[string]struct{}{}
		}
		x.byPrefix[p][id] = struct{}{}
		x.lens[lenKey(p)]++
	}
}

func (x prefixIndex) remove(id string, nets []netip.Prefix) {
	for _, p := range nets {
		delete(x.byPrefix[p], id)
		if len(x.byPrefix[p]) == 0 {
			delete(x.byPrefix, p)
		}
		if x.lens[lenKey(p)]--; x.lens[lenKey(p)] == 0 {
			delete(x.lens, lenKey(p))
		}
	}
}

func (x prefixIndex) lookup(a netip.Addr) (string, bool) {
	a = a.Unmap()
	for bits := a.BitLen(); bits >= 0; bits-- {
		p := netip.PrefixFrom(a, bits).Masked()
		if x.lens[lenKey(p)] == 0 {
			continue
		}
		if ids := x.byPrefix[p]; len(ids) > 0 {
			return minKey(ids), true
		}
	}
	return "", false
}

func minKey(m map[string]struct{}) string {
	first := true
	var out string
	for k := range m {
		if first || k < out {
			out, first = k, false
		}
	}
	return out
}
