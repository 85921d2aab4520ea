package calicoctl

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/ipam"
)

// nodeCleanup is what deleting a Node removed besides the Node itself.
type nodeCleanup struct {
	releasedIPs   int
	workloads     int
	ipam          *ipam.HostRemoval
	peers         int
	hostEndpoints int
	configs       []string // "FelixConfiguration(node.x)", ...
}

// deleteNode deletes a Node the way Project Calico's clientv3 nodes.Delete does, cleaning up
// what belongs to it first: the addresses of its WorkloadEndpoints and its tunnel addresses are
// released, the WorkloadEndpoints deleted, the node removed from IPAM (its block affinities and
// host tree), its BGPPeers, per-node FelixConfiguration and BGPConfiguration and its
// HostEndpoints deleted, and then the Node (with d.revision, if any, as the compare-and-swap).
// Each step tolerates what is already gone, so a Node that no longer exists still has its
// leftovers cleaned up (and is then reported as not existing). A stale resourceVersion is
// refused before anything is touched. What was cleaned up is printed.
func (s *session) deleteNode(d deletion) error {
	node, err := s.nodeToDelete(d)
	if err != nil {
		return err
	}
	var done nodeCleanup
	err = s.cleanUpNode(d.name, node, &done)
	if msg := done.summary(d.name); msg != "" {
		fmt.Fprintln(s.stdout, msg)
	}
	if err != nil {
		return fmt.Errorf("cleaning up after Node(%s): %w", d.name, err)
	}
	return s.deleteResource(d.kind, "", d.name, d.revision)
}

// nodeToDelete reads the Node (nil when it does not exist or cannot be decoded) and checks the
// resourceVersion the deletion asks for.
func (s *session) nodeToDelete(d deletion) (*api.Node, error) {
	ctx, cancel := s.op()
	defer cancel()
	key := datastore.ResourceKey(d.kind, "", d.name)
	kv, err := s.ds.GetKV(ctx, key)
	if datastore.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if d.revision != 0 && d.revision != kv.ModRevision {
		return nil, &datastore.Error{Reason: datastore.Conflict, Key: key}
	}
	r, err := datastore.DecodeResource(key, kv.Value, kv.ModRevision)
	if err != nil {
		fmt.Fprintf(s.stderr, "Warning: %s cannot be decoded (%v); its tunnel addresses are not released\n", key, err)
		return nil, nil
	}
	return r.(*api.Node), nil
}

// cleanUpNode runs the cleanup steps in Project Calico's order, recording what each removed.
func (s *session) cleanUpNode(name string, node *api.Node, done *nodeCleanup) error {
	weps, err := s.nodeWorkloads(name)
	if err != nil {
		return err
	}
	ic := ipam.New(s.ds, zerolog.New(s.stderr).Level(zerolog.WarnLevel))
	if done.releasedIPs, err = s.releaseNodeIPs(ic, weps, node); err != nil {
		return err
	}
	for _, w := range weps {
		if err := s.deleteIfPresent(&done.workloads, w); err != nil {
			return err
		}
	}
	ctx, cancel := s.op()
	done.ipam, err = ic.RemoveHost(ctx, name)
	cancel()
	if err != nil {
		return err
	}
	if err := deleteOwnedBy(s, name, &done.peers, listOf[*api.BGPPeer](s), peerNode); err != nil {
		return err
	}
	if err := s.deleteNodeConfigs(name, done); err != nil {
		return err
	}
	return deleteOwnedBy(s, name, &done.hostEndpoints, listOf[*api.HostEndpoint](s), hostEndpointNode)
}

// nodeWorkloads lists the WorkloadEndpoints of a node: those whose name starts with the node's
// name part and whose spec.node is the node (the prefix alone also matches "<node>-x").
func (s *session) nodeWorkloads(name string) ([]api.Resource, error) {
	prefix := strings.ReplaceAll(name, "-", "--") + "-"
	weps, err := listOf[*api.WorkloadEndpoint](s)()
	if err != nil {
		return nil, err
	}
	var out []api.Resource
	for _, w := range weps {
		if strings.HasPrefix(w.Name, prefix) && w.Spec.Node == name {
			out = append(out, w)
		}
	}
	return out, nil
}

// releaseNodeIPs releases the addresses of the workloads and the node's tunnel addresses, and
// returns how many were allocated.
func (s *session) releaseNodeIPs(ic *ipam.Client, weps []api.Resource, node *api.Node) (int, error) {
	var nets []string
	for _, w := range weps {
		nets = append(nets, w.(*api.WorkloadEndpoint).Spec.IPNetworks...)
	}
	nets = append(nets, tunnelAddresses(node)...)
	seen := map[netip.Addr]bool{}
	var ips []netip.Addr
	for _, n := range nets {
		ip, err := parseCIDROrIP(n)
		if err != nil {
			fmt.Fprintf(s.stderr, "Warning: not releasing %q: %v\n", n, err)
			continue
		}
		if !seen[ip] {
			seen[ip] = true
			ips = append(ips, ip)
		}
	}
	if len(ips) == 0 {
		return 0, nil
	}
	ctx, cancel := s.op()
	defer cancel()
	notAllocated, err := ic.ReleaseIPs(ctx, ips...)
	if err != nil {
		return 0, fmt.Errorf("releasing IP addresses: %w", err)
	}
	return len(ips) - len(notAllocated), nil
}

// tunnelAddresses are the addresses IPAM gave the node for its tunnel devices.
func tunnelAddresses(n *api.Node) []string {
	if n == nil {
		return nil
	}
	out := []string{n.Spec.IPv4VXLANTunnelAddr, n.Spec.IPv6VXLANTunnelAddr}
	if n.Spec.BGP != nil {
		out = append(out, n.Spec.BGP.IPv4IPIPTunnelAddr)
	}
	if n.Spec.Wireguard != nil {
		out = append(out, n.Spec.Wireguard.InterfaceIPv4Address, n.Spec.Wireguard.InterfaceIPv6Address)
	}
	kept := out[:0]
	for _, a := range out {
		if a != "" {
			kept = append(kept, a)
		}
	}
	return kept
}

func parseCIDROrIP(s string) (netip.Addr, error) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Addr(), nil
	}
	return netip.ParseAddr(s)
}

// listOf returns a function listing every object of type T.
func listOf[T api.Resource](s *session) func() ([]T, error) {
	return func() ([]T, error) {
		ctx, cancel := s.op()
		defer cancel()
		items, _, err := datastore.ListAs[T](ctx, s.ds, "")
		return items, err
	}
}

func peerNode(p *api.BGPPeer) string              { return p.Spec.Node }
func hostEndpointNode(h *api.HostEndpoint) string { return h.Spec.Node }

// deleteOwnedBy deletes the objects listed by list whose node (as nodeOf reads it) is name.
func deleteOwnedBy[T api.Resource](s *session, name string, count *int, list func() ([]T, error), nodeOf func(T) string) error {
	items, err := list()
	if err != nil {
		return err
	}
	for _, it := range items {
		if nodeOf(it) != name {
			continue
		}
		if err := s.deleteIfPresent(count, it); err != nil {
			return err
		}
	}
	return nil
}

// deleteNodeConfigs deletes the node's FelixConfiguration and BGPConfiguration "node.<name>".
func (s *session) deleteNodeConfigs(name string, done *nodeCleanup) error {
	for _, kind := range []string{"FelixConfiguration", "BGPConfiguration"} {
		k, _ := api.LookupKind(kind)
		var n int
		if err := s.deleteIfPresent(&n, stub(k, "node."+name)); err != nil {
			return err
		}
		if n > 0 {
			done.configs = append(done.configs, identifier(k, "", "node."+name))
		}
	}
	return nil
}

// stub is an object of kind k that carries only its name (enough to delete it).
func stub(k api.KindInfo, name string) api.Resource {
	r := k.New()
	r.GetObjectMeta().Name = name
	return r
}

// deleteIfPresent deletes an object whatever its revision, counting it when it was there.
func (s *session) deleteIfPresent(count *int, r api.Resource) error {
	k, _ := api.KindOf(r)
	m := r.GetObjectMeta()
	err := s.deleteResource(k, m.Namespace, m.Name, 0)
	switch {
	case datastore.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("deleting %s: %w", identifier(k, m.Namespace, m.Name), err)
	}
	*count++
	return nil
}

func (s *session) deleteResource(k api.KindInfo, namespace, name string, revision int64) error {
	if isBuiltin(k, name) {
		return errBuiltinDelete
	}
	ctx, cancel := s.op()
	defer cancel()
	_, err := s.ds.Delete(ctx, k, namespace, name, revision)
	return err
}

// summary describes the cleanup in one line ("" when nothing needed cleaning up).
func (c *nodeCleanup) summary(name string) string {
	var parts []string
	add := func(n int, one, many string) {
		switch {
		case n == 1:
			parts = append(parts, one)
		case n > 1:
			parts = append(parts, fmt.Sprintf(many, n))
		}
	}
	add(c.releasedIPs, "released 1 IP address", "released %d IP addresses")
	add(c.workloads, "deleted 1 WorkloadEndpoint", "deleted %d WorkloadEndpoints")
	if c.ipam != nil {
		add(len(c.ipam.BlocksDeleted), "deleted 1 empty IPAM block", "deleted %d empty IPAM blocks")
		add(len(c.ipam.BlocksUnaffined), "kept 1 IPAM block in use without affinity", "kept %d IPAM blocks in use without affinity")
		add(c.ipam.AffinitiesReleased, "released 1 IPAM block affinity", "released %d IPAM block affinities")
		add(c.ipam.OtherKeysDeleted, "deleted 1 other IPAM key of the node", "deleted %d other IPAM keys of the node")
	}
	add(c.peers, "deleted 1 BGPPeer", "deleted %d BGPPeers")
	for _, cfg := range c.configs {
		parts = append(parts, "deleted "+cfg)
	}
	add(c.hostEndpoints, "deleted 1 HostEndpoint", "deleted %d HostEndpoints")
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("Cleaned up Node(%s): %s", name, strings.Join(parts, ", "))
}
