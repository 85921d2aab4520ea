package calc

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/calico-host/calico-host/pkg/api"
)

// routeSourceKind says why a prefix is routed to a node, by precedence when sources collide on
// one prefix.
type routeSourceKind uint8

const (
	srcBlock    routeSourceKind = iota // the block is affine to the node
	srcBorrowed                        // an address of another node's block held by the node
	srcWorkload                        // an address of a workload endpoint on the node (RouteSource WorkloadIPs)
	srcTunnel                          // the node's VXLAN or IPIP tunnel address
)

// workloadKeyPrefix starts the source keys of workload endpoints (block keys are datastore keys).
const workloadKeyPrefix = "wep/"

type routeSource struct {
	node string
	kind routeSourceKind
}

// routeCalc computes the routes to every IPAM block (to its affine host), to every address a
// host holds in a block affine to another (borrowed), and to the other hosts' tunnel addresses,
// each decorated with its pool and the owning host's address. With RouteSource WorkloadIPs, as
// Project Calico's route resolver, the addresses of workload endpoints (to their node) replace
// the blocks and borrowed addresses.
type routeCalc struct {
	host        string
	workloadIPs bool
	// offered holds the routes of every block and workload endpoint by source key, whether or
	// not the route source uses them (so that a change of route source needs no resync).
	offered  map[string]map[netip.Prefix]routeSource
	bySource map[string]map[netip.Prefix]routeSource // source key (block key or "tunnel/<node>") -> routes
	sources  map[netip.Prefix]map[string]routeSource // prefix -> source key -> source
	byNode   map[string]map[netip.Prefix]int         // node -> prefixes routed to it (source count)
	dirty    map[netip.Prefix]struct{}
	sent     map[netip.Prefix]*Route
	nodes    *nodeCalc
	pools    *poolCalc
}

func newRouteCalc(host string, nodes *nodeCalc, pools *poolCalc) *routeCalc {
	return &routeCalc{host: host, offered: map[string]map[netip.Prefix]routeSource{}, bySource: map[string]map[netip.Prefix]routeSource{},
		sources: map[netip.Prefix]map[string]routeSource{}, byNode: map[string]map[netip.Prefix]int{},
		dirty: map[netip.Prefix]struct{}{}, sent: map[netip.Prefix]*Route{}, nodes: nodes, pools: pools}
}

// blockRoutes lists the routes of a block: the block to its affine host, and each address held
// by another node (the "node" attribute of its allocation) to that node.
func blockRoutes(b *api.AllocationBlock) (map[netip.Prefix]routeSource, error) {
	cidr, err := netip.ParsePrefix(b.CIDR)
	if err != nil {
		return nil, fmt.Errorf("invalid block cidr %q", b.CIDR)
	}
	cidr = netip.PrefixFrom(cidr.Addr().Unmap(), cidr.Bits()).Masked()
	out := map[netip.Prefix]routeSource{}
	var owner string
	if b.Affinity != nil {
		owner, _ = strings.CutPrefix(*b.Affinity, "host:")
		if owner == *b.Affinity {
			owner = "" // virtual:<...> or unknown: no host
		}
	}
	if owner != "" {
		out[cidr] = routeSource{node: owner, kind: srcBlock}
	}
	for ord, idx := range b.Allocations {
		if idx == nil || *idx < 0 || *idx >= len(b.Attributes) {
			continue
		}
		attr := b.Attributes[*idx]
		node := attr.ActiveOwnerAttrs["node"]
		if node == "" || node == owner || attr.ReleasedAt != "" {
			continue
		}
		a, ok := addrAdd(cidr.Addr(), ord)
		if !ok || !cidr.Contains(a) {
			continue
		}
		out[netip.PrefixFrom(a, a.BitLen())] = routeSource{node: node, kind: srcBorrowed}
	}
	return out, nil
}

// addrAdd returns a + n.
func addrAdd(a netip.Addr, n int) (netip.Addr, bool) {
	b := a.As16()
	carry := n
	for i := 15; i >= 0 && carry > 0; i-- {
		sum := int(b[i]) + carry
		b[i] = byte(sum)
		carry = sum >> 8
	}
	if carry > 0 {
		return netip.Addr{}, false
	}
	r := netip.AddrFrom16(b)
	if a.Is4() {
		r = r.Unmap()
	}
	return r, true
}

// setSource replaces the routes contributed by one source (nil removes them).
func (c *routeCalc) setSource(key string, routes map[netip.Prefix]routeSource) {
	old := c.bySource[key]
	for dst, src := range old {
		if cur, ok := routes[dst]; ok && cur == src {
			continue
		}
		c.unlink(key, dst, src)
	}
	for dst, src := range routes {
		if prev, ok := old[dst]; ok && prev == src {
			continue
		}
		c.link(key, dst, src)
	}
	if len(routes) == 0 {
		delete(c.bySource, key)
	} else {
		c.bySource[key] = routes
	}
}

func (c *routeCalc) link(key string, dst netip.Prefix, src routeSource) {
	if c.sources[dst] == nil {
		c.sources[dst] = map[string]routeSource{}
	}
	c.sources[dst][key] = src
	if c.byNode[src.node] == nil {
		c.byNode[src.node] = map[netip.Prefix]int{}
	}
	c.byNode[src.node][dst]++
	c.markDirty(dst, src)
}

func (c *routeCalc) unlink(key string, dst netip.Prefix, src routeSource) {
	delete(c.sources[dst], key)
	if len(c.sources[dst]) == 0 {
		delete(c.sources, dst)
	}
	if n := c.byNode[src.node]; n != nil {
		if n[dst]--; n[dst] <= 0 {
			delete(n, dst)
		}
		if len(n) == 0 {
			delete(c.byNode, src.node)
		}
	}
	c.markDirty(dst, src)
}

// markDirty marks dst for resolution and, when dst is a node's block, that node's tunnel
// addresses inside it (whether the block covers them decides their own route).
func (c *routeCalc) markDirty(dst netip.Prefix, src routeSource) {
	c.dirty[dst] = struct{}{}
	if src.kind != srcBlock {
		return
	}
	for t := range c.bySource["tunnel/"+src.node] {
		if dst.Bits() < t.Bits() && dst.Contains(t.Addr()) {
			c.dirty[t] = struct{}{}
		}
	}
}

// coveredTunnel reports whether dst is only a node's tunnel address inside a block affine to
// that same node: the block's route reaches it, so, as Project Calico's route resolver, no route
// of its own is computed (l3_route_resolver.go leaves the workload type off such a tunnel
// address, so that felix programs no "spurious" route for it). A tunnel address in a block of
// another node (borrowed), or whose block is the address itself, keeps its route.
func (c *routeCalc) coveredTunnel(dst netip.Prefix, node string) bool {
	for _, src := range c.sources[dst] {
		if src.kind != srcTunnel {
			return false
		}
	}
	for p := range c.byNode[node] {
		if p.Bits() >= dst.Bits() || !p.Contains(dst.Addr()) {
			continue
		}
		for _, src := range c.sources[p] {
			if src.kind == srcBlock && src.node == node {
				return true
			}
		}
	}
	return false
}

// updateBlock records a block (nil when deleted or unusable) under its key.
func (c *routeCalc) updateBlock(key string, b *api.AllocationBlock) error {
	if b == nil {
		c.offer(key, nil)
		return nil
	}
	routes, err := blockRoutes(b)
	if err != nil {
		c.offer(key, nil)
		return err
	}
	c.offer(key, routes)
	return nil
}

// updateWorkload records the addresses of a workload endpoint on node (nets as calc parsed them:
// masked, IPv4-mapped ones as IPv4; none when deleted or invalid) under its namespace and name.
func (c *routeCalc) updateWorkload(namespace, name, node string, nets []netip.Prefix) {
	key := workloadKeyPrefix + namespace + "/" + name
	if node == "" || len(nets) == 0 {
		c.offer(key, nil)
		return
	}
	routes := make(map[netip.Prefix]routeSource, len(nets))
	for _, p := range nets {
		routes[p] = routeSource{node: node, kind: srcWorkload}
	}
	c.offer(key, routes)
}

// offer stores a block's or workload endpoint's routes and uses them when the route source does.
func (c *routeCalc) offer(key string, routes map[netip.Prefix]routeSource) {
	if len(routes) == 0 {
		delete(c.offered, key)
	} else {
		c.offered[key] = routes
	}
	if c.uses(key) {
		c.setSource(key, routes)
	}
}

// uses reports whether the route source takes the routes of a block or workload key.
func (c *routeCalc) uses(key string) bool {
	return strings.HasPrefix(key, workloadKeyPrefix) == c.workloadIPs
}

// setWorkloadIPs switches the route source between IPAM blocks (false) and workload addresses.
func (c *routeCalc) setWorkloadIPs(on bool) {
	if on == c.workloadIPs {
		return
	}
	c.workloadIPs = on
	for _, key := range slices.Sorted(maps.Keys(c.offered)) {
		if c.uses(key) {
			c.setSource(key, c.offered[key])
		} else {
			c.setSource(key, nil)
		}
	}
}

// onNode refreshes what depends on a node: its tunnel routes, the routes to it (its address),
// and for this host every route (its subnets decide SameSubnet).
func (c *routeCalc) onNode(name string, n *nodeInfo) {
	routes := map[netip.Prefix]routeSource{}
	if n != nil && name != c.host {
		for _, a := range [...]netip.Addr{n.vxlan[0], n.vxlan[1], n.ipip} {
			if a.IsValid() {
				routes[netip.PrefixFrom(a, a.BitLen())] = routeSource{node: name, kind: srcTunnel}
			}
		}
	}
	c.setSource("tunnel/"+name, routes)
	if name == c.host {
		c.markAll()
		return
	}
	for dst := range c.byNode[name] {
		c.dirty[dst] = struct{}{}
	}
}

// markAll marks every route dirty (a pool or this host's addresses changed).
func (c *routeCalc) markAll() {
	for dst := range c.sources {
		c.dirty[dst] = struct{}{}
	}
}

// resolve builds the route for a prefix from its highest-precedence source.
func (c *routeCalc) resolve(dst netip.Prefix) *Route {
	var best routeSource
	var bestKey string
	found := false
	for key, src := range c.sources[dst] {
		if !found || src.kind > best.kind || src.kind == best.kind && key < bestKey {
			best, bestKey, found = src, key, true
		}
	}
	if !found || best.kind == srcTunnel && c.coveredTunnel(dst, best.node) {
		return nil
	}
	r := &Route{Dst: dst, DstNode: best.node, Type: RouteRemoteWorkload}
	switch {
	case best.node == c.host:
		r.Type = RouteLocalWorkload
	case best.kind == srcTunnel:
		r.Type = RouteRemoteTunnel
	}
	fam := familyOf(dst.Addr())
	if n := c.nodes.nodes[best.node]; n != nil {
		r.DstNodeIP = n.addr(fam)
	}
	if local := c.nodes.nodes[c.host]; local != nil && r.DstNodeIP.IsValid() {
		lp := local.ipv4
		if fam == 6 {
			lp = local.ipv6
		}
		r.SameSubnet = lp.IsValid() && lp.Masked().Contains(r.DstNodeIP)
	}
	if p := c.pools.containing(dst); p != nil {
		r.PoolName, r.PoolType, r.VXLANMode, r.IPIPMode, r.NATOutgoing = p.Name, p.Type, p.VXLANMode, p.IPIPMode, p.NATOutgoing
	}
	return r
}

// flush returns route additions and changes, and separately removals.
func (c *routeCalc) flush() (updates, removes []Update) {
	for _, dst := range sortedPrefixes(c.dirty) {
		r, prev := c.resolve(dst), c.sent[dst]
		switch {
		case r == nil && prev != nil:
			removes = append(removes, RouteRemove{Dst: dst})
			delete(c.sent, dst)
		case r != nil && (prev == nil || *prev != *r):
			updates = append(updates, RouteUpdate{Route: r})
			c.sent[dst] = r
		}
	}
	clear(c.dirty)
	return updates, removes
}

func sortedPrefixes(m map[netip.Prefix]struct{}) []netip.Prefix {
	out := make([]netip.Prefix, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b netip.Prefix) int {
		if c := a.Addr().Compare(b.Addr()); c != 0 {
			return c
		}
		return a.Bits() - b.Bits()
	})
	return out
}
