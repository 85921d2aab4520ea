package startup

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"reflect"

	"github.com/calico-host/calico-host/internal/buildinfo"
	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
)

// maxWriteAttempts bounds compare-and-swap retries of a Node update.
const maxWriteAttempts = 10

// errNoAddress: the node needs an address for Calico networking and none was configured or found.
var errNoAddress = errors.New("no IPv4 or IPv6 address configured or detected; Calico networking needs one (set ip / IP, or networking_backend = none)")

// updateNode reads this host's Node (a fresh one if it does not exist), applies mutate and writes
// it back if mutate reports a change or the Node is new, retrying on concurrent updates.
func (s *Startup) updateNode(ctx context.Context, mutate func(*api.Node) (bool, error)) error {
	for attempt := 1; ; attempt++ {
		node, err := datastore.GetAs[*api.Node](ctx, s.ds, "", s.name)
		isNew := datastore.IsNotFound(err)
		switch {
		case isNew:
			node = &api.Node{ObjectMeta: api.ObjectMeta{Name: s.name}}
		case err != nil:
			return fmt.Errorf("reading node %s: %w", s.name, err)
		}
		changed, err := mutate(node)
		if err != nil || (!changed && !isNew) {
			return err
		}
		if err := datastore.Validate(node); err != nil {
			return fmt.Errorf("node %s: %w", s.name, err)
		}
		if isNew {
			_, err = s.ds.Create(ctx, node)
		} else {
			_, err = s.ds.Update(ctx, node)
		}
		if err == nil {
			return nil
		}
		retry := datastore.IsConflict(err) || datastore.IsAlreadyExists(err) || datastore.IsNotFound(err)
		if !retry || attempt >= maxWriteAttempts {
			return fmt.Errorf("writing node %s: %w", s.name, err)
		}
		s.log.Debug().Err(err).Int("attempt", attempt).Msg("Node changed concurrently; retrying")
	}
}

// configureNode sets the node's addresses, interfaces and AS number from the configuration and
// the host's interfaces. It reports whether anything changed.
func (s *Startup) configureNode(ctx context.Context, node *api.Node, ifaces []Interface) (bool, error) {
	if s.cfg.Backend == BackendNone {
		return false, nil // policy only: no BGP details on the Node
	}
	before := node.Spec
	if before.BGP != nil {
		b := *before.BGP
		before.BGP = &b
	}
	bgp := api.NodeBGPSpec{}
	if node.Spec.BGP != nil {
		bgp = *node.Spec.BGP
	}
	fams := map[Family]bool{}
	for _, f := range Families {
		cur := bgpAddress(&bgp, f)
		addr, err := s.nodeAddress(ctx, f, *cur, ifaces)
		if err != nil {
			return false, err
		}
		*cur = addr
		fams[f] = s.interfaceFamily(f)
	}
	if bgp.IPv4Address == "" && bgp.IPv6Address == "" {
		return false, errNoAddress
	}
	if s.cfg.ASNumber != nil {
		as := *s.cfg.ASNumber
		bgp.ASNumber = &as
	}
	node.Spec.BGP = &bgp
	node.Spec.Interfaces = nodeInterfaces(ifaces, fams)
	if err := s.checkConflicts(ctx, node, before.BGP); err != nil {
		return false, err
	}
	return !reflect.DeepEqual(before, node.Spec), nil
}

func bgpAddress(b *api.NodeBGPSpec, f Family) *string {
	if f == V4 {
		return &b.IPv4Address
	}
	return &b.IPv6Address
}

// interfaceFamily reports whether spec.interfaces lists addresses of family f.
func (s *Startup) interfaceFamily(f Family) bool {
	switch s.cfg.AddressOf(f).Mode {
	case AddrAutodetect, AddrStatic:
		return true
	case AddrUnset:
		return f == V4
	}
	return false
}

// nodeAddress returns the Node address of family f (CIDR notation) given the current one.
func (s *Startup) nodeAddress(ctx context.Context, f Family, cur string, ifaces []Interface) (string, error) {
	ac := s.cfg.AddressOf(f)
	switch {
	case ac.Mode == AddrStatic:
		return staticAddress(ac.Static, ifaces).String(), nil
	case ac.Mode == AddrAutodetect || (ac.Mode == AddrUnset && f == V4 && cur == ""):
		d, err := ac.Method.Detect(ctx, s.kernel, ifaces, f)
		if err == nil {
			if d.Addr.String() != cur {
				s.log.Info().Stringer("family", f).Str("interface", d.Interface).Stringer("addr", d.Addr).
					Str("method", ac.Method.String()).Msg("Autodetected node address")
			}
			return d.Addr.String(), nil
		}
		if cur == "" {
			return "", fmt.Errorf("autodetecting the %s address: %w", f, err)
		}
		s.log.Warn().Err(err).Str("addr", cur).Msg("Autodetection failed; keeping the existing address")
	}
	if cur != "" && !onHost(cur, ifaces) {
		s.log.Warn().Str("addr", cur).Msg("Node address is not on any host interface")
	}
	return cur, nil
}

// staticAddress completes a configured address: a bare IP takes the prefix length of the
// interface that holds it, else /32 or /128.
func staticAddress(p netip.Prefix, ifaces []Interface) netip.Prefix {
	if p.Bits() >= 0 {
		return p
	}
	if d, ok := findAddr(ifaces, p.Addr()); ok {
		return d.Addr
	}
	return netip.PrefixFrom(p.Addr(), p.Addr().BitLen())
}

func onHost(cidr string, ifaces []Interface) bool {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return false
	}
	_, ok := findAddr(ifaces, p.Addr())
	return ok
}

// checkConflicts refuses an address another Node already uses (unless disable_node_ip_check).
func (s *Startup) checkConflicts(ctx context.Context, node *api.Node, before *api.NodeBGPSpec) error {
	if s.cfg.DisableNodeIPCheck || (before != nil && before.IPv4Address == node.Spec.BGP.IPv4Address &&
		before.IPv6Address == node.Spec.BGP.IPv6Address) {
		return nil
	}
	nodes, _, err := datastore.ListAs[*api.Node](ctx, s.ds, "")
	if err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	for _, other := range nodes {
		if other.Name == node.Name || other.Spec.BGP == nil {
			continue
		}
		for _, f := range Families {
			mine, theirs := hostIP(*bgpAddress(node.Spec.BGP, f)), hostIP(*bgpAddress(other.Spec.BGP, f))
			if mine.IsValid() && mine == theirs {
				return fmt.Errorf("node %s already uses %s address %s (two hosts with the same address, or a stale node; set disable_node_ip_check to override)", other.Name, f, mine)
			}
		}
	}
	return nil
}

func hostIP(cidr string) netip.Addr {
	if p, err := netip.ParsePrefix(cidr); err == nil {
		return p.Addr()
	}
	a, _ := netip.ParseAddr(cidr)
	return a
}

// VersionAnnotation is the Node annotation recording the calico-host version that registered the
// host. Project Calico's tools ignore Node annotations (their version check reads ClusterInformation
// calicoVersion, which we leave alone), and its calico-node keeps them when it updates the Node.
const VersionAnnotation = "calico-host.io/version"

// registerNode creates or updates this host's Node.
func (s *Startup) registerNode(ctx context.Context, ifaces []Interface) error {
	var node *api.Node
	changed := false
	err := s.updateNode(ctx, func(n *api.Node) (bool, error) {
		stamped := stampVersion(n)
		c, err := s.configureNode(ctx, n, ifaces)
		node, changed = n, c || stamped
		return changed, err
	})
	s.metrics.onNodeUpdate(opRegister, changed, node, err)
	return err
}

// stampVersion sets VersionAnnotation to our version and reports whether it changed.
func stampVersion(n *api.Node) bool {
	if n.Annotations[VersionAnnotation] == buildinfo.Version {
		return false
	}
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	n.Annotations[VersionAnnotation] = buildinfo.Version
	return true
}
