package startup

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/ipam"
	"github.com/calico-host/calico-host/pkg/selector"
	"github.com/calico-host/calico-host/pkg/vtepmac"
)

// TunnelIPAM is the part of pkg/ipam the tunnel address logic uses (*ipam.Client implements it).
type TunnelIPAM interface {
	AutoAssign(ctx context.Context, a ipam.AutoAssignArgs) (v4, v6 []netip.Prefix, err error)
	ReleaseByHandle(ctx context.Context, handleID string) error
	GetAssignmentAttributes(ctx context.Context, ip netip.Addr) (map[string]string, string, error)
}

// IPAM allocation attribute keys and tunnel attribute types (Project Calico's).
const (
	AttrNode            = "node"
	AttrType            = "type"
	AttrTypeVXLAN       = "vxlanTunnelAddress"
	AttrTypeVXLANV6     = "vxlanV6TunnelAddress"
	AttrTypeIPIP        = "ipipTunnelAddress"
	AttrTypeWireguard   = "wireguardTunnelAddress"
	AttrTypeWireguardV6 = "wireguardV6TunnelAddress"
	vxlanHandlePrefix   = "vxlan-tunnel-addr-"
	vxlanHandlePrefix6  = "vxlan-v6-tunnel-addr-"
	ipipHandlePrefix    = "ipip-tunnel-addr-"
	wgHandlePrefix      = "wireguard-tunnel-addr-"
	wgHandlePrefix6     = "wireguard-v6-tunnel-addr-"
)

// tunnelKind describes one tunnel address of a node: which pools give it, where it lives on the
// Node and how it is named in IPAM.
type tunnelKind struct {
	name     string // "IPIP", "VXLAN" or "WireGuard", for logs and errors
	fam      Family
	attrType string
	handle   func(node string) string
	poolOK   func(*api.IPPoolSpec) bool // nil: any pool of the family selecting the node
	addr     func(*api.NodeSpec) *string
	mac      func(*api.NodeSpec) *string // nil: the tunnel has no MAC
	wanted   func(*api.Node) bool        // nil: always (while a pool gives it)
	// wireguard: a WireGuard tunnel address, never allocated in host encryption mode.
	wireguard bool
}

func isEncap(mode string) bool         { return mode == api.EncapAlways || mode == api.EncapCrossSubnet }
func ipipPool(p *api.IPPoolSpec) bool  { return isEncap(p.IPIPMode) }
func vxlanPool(p *api.IPPoolSpec) bool { return isEncap(p.VXLANMode) }

// tunnelKinds are handled in Project Calico's order (IPIP, VXLAN, WireGuard). WireGuard's address
// comes from any pool of its family selecting the node, while the node has published a
// WireGuard public key of that family (felix runs WireGuard) and WireGuard host encryption is
// off, as Project Calico allocates it (node/pkg/allocateip determineEnabledPoolCIDRs).
var tunnelKinds = []tunnelKind{
	{name: "IPIP", fam: V4, attrType: AttrTypeIPIP, handle: IPIPHandle, poolOK: ipipPool, addr: ipipAddr},
	{name: "VXLAN", fam: V4, attrType: AttrTypeVXLAN, handle: VXLANHandle, poolOK: vxlanPool,
		addr: func(s *api.NodeSpec) *string { return &s.IPv4VXLANTunnelAddr },
		mac:  func(s *api.NodeSpec) *string { return &s.VXLANTunnelMACAddr }},
	{name: "VXLAN", fam: V6, attrType: AttrTypeVXLANV6, handle: func(n string) string { return vxlanHandlePrefix6 + n }, poolOK: vxlanPool,
		addr: func(s *api.NodeSpec) *string { return &s.IPv6VXLANTunnelAddr },
		mac:  func(s *api.NodeSpec) *string { return &s.VXLANTunnelMACAddrV6 }},
	{name: "WireGuard", fam: V4, attrType: AttrTypeWireguard, handle: WireguardHandle, addr: wgAddr(false), wireguard: true,
		wanted: func(n *api.Node) bool { return n.Status.WireguardPublicKey != "" }},
	{name: "WireGuard", fam: V6, attrType: AttrTypeWireguardV6, handle: func(n string) string { return wgHandlePrefix6 + n },
		addr: wgAddr(true), wireguard: true, wanted: func(n *api.Node) bool { return n.Status.WireguardPublicKeyV6 != "" }},
}

// wgAddr is the Node's WireGuard tunnel address field of a family (creating spec.wireguard;
// normalizeSpec removes it again when left empty).
func wgAddr(v6 bool) func(*api.NodeSpec) *string {
	return func(s *api.NodeSpec) *string {
		if s.Wireguard == nil {
			s.Wireguard = &api.NodeWireguard{}
		}
		if v6 {
			return &s.Wireguard.InterfaceIPv6Address
		}
		return &s.Wireguard.InterfaceIPv4Address
	}
}

// WireguardHandle is the IPAM handle of a node's IPv4 WireGuard tunnel address.
func WireguardHandle(node string) string { return wgHandlePrefix + node }

// ipipAddr is the Node's IPIP tunnel address field. Reading a Node without a BGP spec gives a
// detached empty string, so only a non-empty write creates the spec; normalizeBGP removes a spec
// left empty, as Project Calico does.
func ipipAddr(s *api.NodeSpec) *string {
	if s.BGP == nil {
		s.BGP = &api.NodeBGPSpec{}
	}
	return &s.BGP.IPv4IPIPTunnelAddr
}

// normalizeSpec drops a BGP or WireGuard spec that holds nothing (Project Calico's client refuses
// an empty BGP spec and leaves an empty spec.wireguard out); it reports whether either went.
func normalizeSpec(s *api.NodeSpec) bool {
	dropped := false
	if s.BGP != nil && *s.BGP == (api.NodeBGPSpec{}) {
		s.BGP, dropped = nil, true
	}
	if s.Wireguard != nil && *s.Wireguard == (api.NodeWireguard{}) {
		s.Wireguard, dropped = nil, true
	}
	return dropped
}

// IPIPHandle is the IPAM handle of a node's IPIP tunnel address.
func IPIPHandle(node string) string { return ipipHandlePrefix + node }

// VXLANHandle is the IPAM handle of a node's IPv4 VXLAN tunnel address.
func VXLANHandle(node string) string { return vxlanHandlePrefix + node }

// derivedMAC is the MAC felix derives for the node's device of t's family when the Node names
// none.
func (t tunnelKind) derivedMAC(node string) string {
	return vtepmac.ForNode(node, t.fam == V6).String()
}

// tunnelPoolCIDRs returns the CIDRs of the pools of t's family that give this node t's tunnel
// address: enabled, allowing Tunnel use, passing t.poolOK (its encapsulation Always or
// CrossSubnet), selecting the node.
func tunnelPoolCIDRs(node *api.Node, pools []*api.IPPool, t tunnelKind) []netip.Prefix {
	var out []netip.Prefix
	for _, p := range pools {
		cidr, err := netip.ParsePrefix(p.Spec.CIDR)
		if err != nil || !t.fam.Contains(cidr.Addr()) || p.Spec.Disabled || p.DeletionTimestamp != "" || !p.Spec.AllowsUse(api.UseTunnel) {
			continue
		}
		if t.poolOK != nil && !t.poolOK(&p.Spec) {
			continue
		}
		sel, err := selector.Parse(p.Spec.NodeSelector)
		if err != nil || !sel.EvaluateMap(node.Labels) {
			continue
		}
		out = append(out, cidr.Masked())
	}
	return out
}

// tunnelState is what the Node should hold for one tunnel.
type tunnelState struct {
	addr, mac string
	assigned  bool // a new address was allocated by this reconcile (release it if the Node write fails)
}

// reconcileTunnel decides the tunnel address of one family, allocating or releasing in IPAM.
func (s *Startup) reconcileTunnel(ctx context.Context, node *api.Node, pools []*api.IPPool, t tunnelKind) (tunnelState, error) {
	handle := t.handle(node.Name)
	spec := node.Spec
	cur := tunnelState{addr: *t.addr(&spec)}
	if t.mac != nil {
		cur.mac = *t.mac(&spec)
	}
	var cidrs []netip.Prefix
	if (t.wanted == nil || t.wanted(node)) && !(t.wireguard && s.cfg.WireguardHostEncryption) {
		cidrs = tunnelPoolCIDRs(node, pools, t)
	}
	if len(cidrs) == 0 {
		if err := s.ipam.ReleaseByHandle(ctx, handle); err != nil {
			return cur, fmt.Errorf("releasing %s: %w", handle, err)
		}
		if cur.addr != "" {
			s.log.Info().Str("addr", cur.addr).Stringer("family", t.fam).Str("tunnel", t.name).Msg("Tunnel address no longer wanted; released it")
		}
		if t.mac != nil && cur.mac == t.derivedMAC(node.Name) {
			cur.mac = ""
		}
		return tunnelState{mac: cur.mac}, nil
	}
	keep, err := s.checkTunnelAddr(ctx, node.Name, cur.addr, cidrs, t)
	if err != nil {
		return cur, err
	}
	if keep {
		return s.withMAC(cur, node.Name, t), nil
	}
	// The handle only ever holds this node's tunnel address: release whatever it still holds
	// (never another owner's allocation) before assigning afresh.
	if err := s.ipam.ReleaseByHandle(ctx, handle); err != nil {
		return cur, fmt.Errorf("releasing %s: %w", handle, err)
	}
	addr, err := s.assignTunnel(ctx, node.Name, cidrs, t)
	if err != nil {
		return cur, err
	}
	s.log.Info().Stringer("addr", addr).Stringer("family", t.fam).Str("handle", handle).Msg("Assigned " + t.name + " tunnel address")
	return s.withMAC(tunnelState{addr: addr.String(), mac: cur.mac, assigned: true}, node.Name, t), nil
}

func (s *Startup) withMAC(st tunnelState, node string, t tunnelKind) tunnelState {
	if t.mac != nil && st.mac == "" {
		st.mac = t.derivedMAC(node)
	}
	return st
}

// checkTunnelAddr reports whether the Node's current address can be kept: still allocated to
// this node's tunnel and inside a qualifying pool.
func (s *Startup) checkTunnelAddr(ctx context.Context, node, addr string, cidrs []netip.Prefix, t tunnelKind) (bool, error) {
	if addr == "" {
		return false, nil
	}
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		s.log.Warn().Str("addr", addr).Msg("Node has an unparsable tunnel address; assigning a new one")
		return false, nil
	}
	attrs, _, err := s.ipam.GetAssignmentAttributes(ctx, ip)
	switch {
	case errors.Is(err, ipam.ErrNotAssigned) || datastore.IsNotFound(err):
		s.log.Info().Str("addr", addr).Msg("Tunnel address is not allocated in IPAM; assigning a new one")
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading the IPAM attributes of %s: %w", addr, err)
	case attrs[AttrType] != t.attrType || attrs[AttrNode] != node:
		s.log.Warn().Str("addr", addr).Interface("attrs", attrs).Msg("Tunnel address is allocated to something else; assigning a new one")
		return false, nil
	case !containsAddr(cidrs, ip):
		s.log.Info().Str("addr", addr).Str("tunnel", t.name).Msg("Tunnel address is not in a pool of this encapsulation for this node; reassigning")
		return false, nil
	}
	return true, nil
}

func containsAddr(cidrs []netip.Prefix, a netip.Addr) bool {
	for _, c := range cidrs {
		if c.Contains(a) {
			return true
		}
	}
	return false
}

func (s *Startup) assignTunnel(ctx context.Context, node string, cidrs []netip.Prefix, t tunnelKind) (netip.Addr, error) {
	args := ipam.AutoAssignArgs{
		HandleID:    t.handle(node),
		Attrs:       map[string]string{AttrNode: node, AttrType: t.attrType},
		Hostname:    node,
		IntendedUse: api.UseTunnel,
	}
	pools := make([]string, len(cidrs))
	for i, c := range cidrs {
		pools[i] = c.String()
	}
	if t.fam == V4 {
		args.Num4, args.IPv4Pools = 1, pools
	} else {
		args.Num6, args.IPv6Pools = 1, pools
	}
	v4, v6, err := s.ipam.AutoAssign(ctx, args)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("assigning a %s %s tunnel address from %v: %w", t.fam, t.name, pools, err)
	}
	got := append(v4, v6...)
	if len(got) == 0 {
		return netip.Addr{}, fmt.Errorf("assigning a %s %s tunnel address from %v: IPAM returned no address", t.fam, t.name, pools)
	}
	return got[0].Addr(), nil
}

// ReconcileTunnels brings the Node's IPIP, VXLAN and WireGuard tunnel addresses in line with the
// pools (and, for WireGuard, the published public keys): allocated and kept while wanted,
// released when not.
func (s *Startup) ReconcileTunnels(ctx context.Context) error {
	if s.cfg.Backend == BackendNone {
		return nil
	}
	err := s.reconcileTunnels(ctx)
	s.metrics.onReconcile(err)
	return err
}

func (s *Startup) reconcileTunnels(ctx context.Context) error {
	node, err := datastore.GetAs[*api.Node](ctx, s.ds, "", s.name)
	if err != nil {
		return fmt.Errorf("reading node %s: %w", s.name, err)
	}
	pools, _, err := datastore.ListAs[*api.IPPool](ctx, s.ds, "")
	if err != nil {
		return fmt.Errorf("listing IP pools: %w", err)
	}
	s.checkIPIP(pools)
	states := make([]tunnelState, len(tunnelKinds))
	for i, t := range tunnelKinds {
		if states[i], err = s.reconcileTunnel(ctx, node, pools, t); err != nil {
			s.undoAssignments(states)
			return err
		}
	}
	err = s.updateNode(ctx, func(n *api.Node) (bool, error) {
		changed := false
		bgp, wg := n.Spec.BGP != nil, n.Spec.Wireguard != nil
		for i, t := range tunnelKinds {
			changed = setString(t.addr(&n.Spec), states[i].addr) || changed
			if t.mac != nil {
				changed = setString(t.mac(&n.Spec), states[i].mac) || changed
			}
		}
		normalizeSpec(&n.Spec)
		changed = changed || bgp != (n.Spec.BGP != nil) || wg != (n.Spec.Wireguard != nil)
		return changed, nil
	})
	if err != nil {
		s.undoAssignments(states)
		return fmt.Errorf("writing tunnel addresses to node %s: %w", s.name, err)
	}
	return nil
}

// undoAssignments releases addresses allocated by a reconcile that then failed.
func (s *Startup) undoAssignments(states []tunnelState) {
	for i, st := range states {
		if !st.assigned {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.loopTimeout)
		if err := s.ipam.ReleaseByHandle(ctx, tunnelKinds[i].handle(s.name)); err != nil {
			s.log.Error().Err(err).Str("addr", st.addr).Msg("Releasing a tunnel address after a failed update")
		}
		cancel()
	}
}

func setString(p *string, v string) bool {
	if *p == v {
		return false
	}
	*p = v
	return true
}
