package confd

import (
	"fmt"
	"math"
	"net/netip"
	"sort"
	"strings"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/selector"
)

// peerKey identifies one explicit peering: the first BGPPeer to produce a key wins, global
// peerings before node-specific ones (as Project Calico does).
type peerKey struct {
	ip   string
	port uint16
}

// target is the remote end of an explicit peering.
type target struct {
	ip          string
	port        uint16
	as          string
	rrClusterID string
	calicoNode  bool // the remote end is one of our nodes
}

// candidate is an explicit peering before it becomes a Peer.
type candidate struct {
	typ  string
	t    target
	peer *api.BGPPeer
}

// peers computes this node's sessions in family fi: the mesh, then explicit peerings.
func (b *builder) peers(fi int, funcs []FilterFunc) []Peer {
	out := b.meshPeers(fi)
	localIP := b.local.ip[fi]
	for _, c := range b.explicitPeerings(fi) {
		if c.t.ip == localIP {
			continue // ourselves
		}
		out = append(out, b.explicitPeer(c, fi, funcs))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// peerName is Project Calico's BIRD protocol name: Mesh_198_18_0_2, Node_fd00__2_port_1179.
func peerName(typ, ip string, port uint16) string {
	n := typ + "_" + strings.NewReplacer(".", "_", ":", "_").Replace(ip)
	if port != 0 {
		n += fmt.Sprintf("_port_%d", port)
	}
	return n
}

// meshPeers are the node-to-node mesh: every other node with an address in this family, except
// route reflectors. A route reflector itself takes no part in the mesh.
func (b *builder) meshPeers(fi int) []Peer {
	if !b.meshEnabled() || b.local.clusterID != "" {
		return nil
	}
	localIP := b.local.ip[fi]
	password := b.password("node mesh", b.global.NodeMeshPassword)
	restart := durationSeconds(b.global.NodeMeshMaxRestartTime)
	var out []Peer
	for _, name := range sortedKeys(b.nodes) {
		n := b.nodes[name]
		ip := n.ip[fi]
		if name == b.local.name || ip == "" || ip == localIP || n.clusterID != "" {
			continue
		}
		out = append(out, Peer{
			Name: peerName(PeerMesh, ip, 0), Type: PeerMesh, Comment: "node-to-node mesh: node " + name,
			IP: ip, Port: n.port, AS: n.as, SourceAddress: localIP,
			Passive:  ip > localIP, // one side connects: avoids a race during graceful restart
			Password: password, GracefulRestartTime: restart,
		})
	}
	return out
}

// explicitPeerings evaluates the BGPPeers for this node: global ones, node-specific ones, then
// the reverse of peerings whose remote end is this node (so Calico-to-Calico peerings are
// symmetric).
func (b *builder) explicitPeerings(fi int) []candidate {
	seen := map[peerKey]bool{}
	var out []candidate
	emit := func(typ string, t target, p *api.BGPPeer) {
		k := peerKey{t.ip, t.port}
		if familyIndex(netip.MustParseAddr(t.ip)) != fi || seen[k] {
			return
		}
		seen[k] = true
		out = append(out, candidate{typ: typ, t: t, peer: p})
	}
	names := sortedKeys(b.in.Peers)
	for _, global := range []bool{true, false} {
		for _, name := range names {
			p := b.in.Peers[name]
			if isGlobal := p.Spec.Node == "" && p.Spec.NodeSelector == ""; isGlobal != global {
				continue
			}
			if !global && !b.appliesToLocal(p) {
				continue
			}
			typ := PeerNode
			if global {
				typ = PeerGlobal
			}
			for _, t := range b.targets(p) {
				emit(typ, t, p)
			}
		}
	}
	for _, name := range names {
		for _, t := range b.reverseTargets(b.in.Peers[name], fi) {
			emit(PeerNode, t, b.in.Peers[name])
		}
	}
	return out
}

// appliesToLocal reports whether a node-specific BGPPeer selects this node.
func (b *builder) appliesToLocal(p *api.BGPPeer) bool {
	if p.Spec.Node != "" {
		return p.Spec.Node == b.local.name
	}
	return b.matches(p.Name, p.Spec.NodeSelector, b.local)
}

// matches evaluates a node selector of a BGPPeer against a node's labels.
func (b *builder) matches(peer, sel string, n *nodeBGP) bool {
	s, err := selector.Parse(sel)
	if err != nil {
		b.warn("BGPPeer %s: bad selector %q: %v", peer, sel, err)
		return false
	}
	return s.EvaluateMap(n.labels)
}

// selectNodes returns the nodes a selector matches, by name.
func (b *builder) selectNodes(peer, sel string) []*nodeBGP {
	var out []*nodeBGP
	for _, name := range sortedKeys(b.nodes) {
		if b.matches(peer, sel, b.nodes[name]) {
			out = append(out, b.nodes[name])
		}
	}
	return out
}

// targets are the remote ends of a BGPPeer: the nodes its peerSelector matches, or its peerIP.
func (b *builder) targets(p *api.BGPPeer) []target {
	if p.Spec.PeerSelector != "" {
		var out []target
		for _, n := range b.selectNodes(p.Name, p.Spec.PeerSelector) {
			out = append(out, nodeTargets(n, 0, 1)...)
		}
		return out
	}
	ip, port, err := api.SplitPeerIP(p.Spec.PeerIP)
	if err != nil {
		b.warn("BGPPeer %s: %v", p.Name, err)
		return nil
	}
	addr, _ := netip.AddrFromSlice(ip)
	addr = addr.Unmap()
	as := b.globalAS()
	if p.Spec.ASNumber != nil {
		as = fmt.Sprint(uint32(*p.Spec.ASNumber))
	}
	t := target{ip: addr.String(), port: uint16(port), as: as}
	if n := b.nodeWithIP(t.ip); n != nil {
		t.calicoNode = true
		if t.port == 0 && n.as == as {
			t.port = n.port // peer with a Calico node on the port it listens on
		}
	}
	return []target{t}
}

// nodeTargets are a node's addresses in the given families as peering targets.
func nodeTargets(n *nodeBGP, fams ...int) []target {
	var out []target
	for _, fi := range fams {
		if n.ip[fi] != "" {
			out = append(out, target{ip: n.ip[fi], port: n.port, as: n.as, rrClusterID: n.clusterID, calicoNode: true})
		}
	}
	return out
}

func (b *builder) nodeWithIP(ip string) *nodeBGP {
	for _, name := range sortedKeys(b.nodes) {
		if n := b.nodes[name]; n.ip[0] == ip || n.ip[1] == ip {
			return n
		}
	}
	return nil
}

// reverseTargets: when this node is the remote end of a BGPPeer (its peerSelector matches us, or
// its peerIP, AS and port are ours), the nodes on the BGPPeer's local side peer with us, so we
// peer with them.
func (b *builder) reverseTargets(p *api.BGPPeer, fi int) []target {
	if !b.isRemoteEnd(p, fi) {
		return nil
	}
	var nodes []*nodeBGP
	switch {
	case p.Spec.NodeSelector != "":
		nodes = b.selectNodes(p.Name, p.Spec.NodeSelector)
	case p.Spec.Node != "":
		if n := b.nodes[p.Spec.Node]; n != nil {
			nodes = []*nodeBGP{n}
		}
	default:
		nodes = b.selectNodes(p.Name, "all()")
	}
	var out []target
	for _, n := range nodes {
		out = append(out, nodeTargets(n, fi)...)
	}
	return out
}

// isRemoteEnd reports whether this node is the remote end of a BGPPeer in family fi.
func (b *builder) isRemoteEnd(p *api.BGPPeer, fi int) bool {
	if p.Spec.PeerSelector != "" {
		return b.matches(p.Name, p.Spec.PeerSelector, b.local)
	}
	ip, port, err := api.SplitPeerIP(p.Spec.PeerIP)
	if err != nil {
		return false
	}
	addr, _ := netip.AddrFromSlice(ip)
	if addr.Unmap().String() != b.local.ip[fi] {
		return false
	}
	as := b.globalAS()
	if p.Spec.ASNumber != nil {
		as = fmt.Sprint(uint32(*p.Spec.ASNumber))
	}
	listen := b.local.port
	if listen == 0 {
		listen = 179
	}
	return as == b.local.as && (port == 0 || uint16(port) == listen)
}

// explicitPeer turns a candidate into a Peer with the BGPPeer's settings.
func (b *builder) explicitPeer(c candidate, fi int, funcs []FilterFunc) Peer {
	spec := &c.peer.Spec
	localIP := b.local.ip[fi]
	p := Peer{
		Name: peerName(c.typ, c.t.ip, c.t.port), Type: c.typ, Comment: "BGPPeer " + c.peer.Name,
		IP: c.t.ip, Port: c.t.port, AS: c.t.as,
		Password:            b.password("BGPPeer "+c.peer.Name, spec.Password),
		GracefulRestartTime: durationSeconds(spec.MaxRestartTime),
	}
	if spec.SourceAddress != "None" {
		p.SourceAddress = localIP
	}
	// Project Calico makes global peerings between Calico nodes unidirectional, like the mesh.
	p.Passive = c.typ == PeerGlobal && c.t.calicoNode && c.t.ip > localIP
	if p.AS == b.local.as && b.local.clusterID != "" && c.t.rrClusterID != b.local.clusterID {
		p.RRClient, p.RRClusterID = true, b.local.clusterID
	}
	switch {
	case spec.NextHopMode == "Self":
		p.NextHop = "self"
	case spec.NextHopMode == "Keep", spec.KeepOriginalNextHop && p.AS != b.local.as:
		p.NextHop = "keep"
	}
	if spec.NumAllowedLocalASNumbers != nil {
		p.AllowLocalAS = *spec.NumAllowedLocalASNumbers
	}
	if spec.TTLSecurity != nil {
		p.TTLSecurity = *spec.TTLSecurity
	}
	p.ImportFilters, p.ExportFilters = b.peerFilterCalls(c.peer.Name, spec.Filters, fi, funcs)
	return p
}

// password reads a BGP password; a password that cannot be read or written into BIRD's
// configuration is left out, with a warning.
func (b *builder) password(what string, pw *api.BGPPassword) string {
	if pw == nil || pw.SecretKeyRef == nil || b.opts.Password == nil {
		return ""
	}
	s, err := b.opts.Password(pw.SecretKeyRef)
	if err != nil {
		b.warn("%s: no password: %v", what, err)
		return ""
	}
	if !birdStringOK(s) {
		b.warn("%s: password contains a quote, backslash or line break, which BIRD cannot take; no password", what)
		return ""
	}
	return s
}

// durationSeconds rounds a duration to whole seconds (0 when unset).
func durationSeconds(d *api.Duration) int {
	if d == nil {
		return 0
	}
	return int(math.Round(d.Seconds()))
}
