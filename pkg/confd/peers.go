package confd

import (
	"fmt"
	"math"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/selector"
)

// peerKey identifies one explicit peering: the first BGPPeer to produce a key wins, global
// peerings before node-specific ones (as Project Calico does).
type peerKey struct {
	ip   netip.Addr
	port uint16
}

// target is the remote end of an explicit peering.
type target struct {
	ip          netip.Addr
	port        uint16
	as          ASN
	rrClusterID netip.Addr
	// byIP: a peerIP that is one of our nodes' addresses (Project Calico's "Calico node" peer:
	// a global one is made unidirectional, as the mesh; selector peerings are not).
	byIP     bool
	workload string // the remote end is this local workload (namespace/name)
}

// candidate is an explicit peering before it becomes a Peer.
type candidate struct {
	typ  string
	t    target
	peer *api.BGPPeer
	// reverse: the peering is the reverse of a BGPPeer whose remote end is this node.
	reverse bool
}

// peers computes this node's sessions in family fi: the mesh, then explicit peerings. A peering
// whose protocol name would repeat another's is left out (BIRD would refuse the whole file).
func (b *builder) peers(fi int, funcs []FilterFunc) []Peer {
	var out []Peer
	names := map[string]string{}
	add := func(p Peer, ok bool) {
		if !ok {
			return
		}
		if prev, dup := names[p.Name.Name()]; dup {
			b.warn("%s: session %s is already made for %s; left out", p.Comment, p.Name.Name(), prev)
			return
		}
		names[p.Name.Name()] = p.Comment.String()
		p.Internal = p.AS == p.localAS(b.local.as)
		if b.strictBind() && !p.SourceAddress.IsValid() {
			// BIRD 2 binds a session's listening socket to its local address, which is also
			// the source of the connections it makes: under bindMode NodeIP every session
			// listens (and so connects) on the node's address, as Project Calico's BIRD
			// listens on it (sourceAddress None cannot leave the source to the kernel then).
			p.SourceAddress = b.local.ip[fi]
		}
		out = append(out, p)
	}
	for _, p := range b.meshPeers(fi) {
		add(p, true)
	}
	for _, c := range b.explicitPeerings(fi) {
		switch {
		case c.t.ip == b.local.ip[fi]:
			// ourselves
		case c.typ == PeerLocalWorkload:
			add(b.workloadPeer(c, funcs))
		default:
			add(b.explicitPeer(c, fi, funcs))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name.Name() < out[j].Name.Name() })
	return out
}

// peerName is Project Calico's BIRD protocol name: Mesh_198_18_0_2, Node_fd00__2_port_1179.
func peerName(typ string, ip netip.Addr, port uint16) (Symbol, error) {
	n := typ + "_" + strings.NewReplacer(".", "_", ":", "_").Replace(ip.String())
	if port != 0 {
		n += fmt.Sprintf("_port_%d", port)
	}
	return newSymbol(n, false)
}

// meshPeers are the node-to-node mesh: every other node with an address in this family, except
// route reflectors. A route reflector itself takes no part in the mesh. Nodes sharing an
// address get one session, the first by name (see peers): BIRD refuses a protocol name twice.
func (b *builder) meshPeers(fi int) []Peer {
	if !b.meshEnabled() || b.local.clusterID.IsValid() {
		return nil
	}
	localIP := b.local.ip[fi]
	password := b.password("node mesh", b.global.NodeMeshPassword)
	restart := b.durationSeconds("BGPConfiguration default: nodeMeshMaxRestartTime", b.global.NodeMeshMaxRestartTime)
	var out []Peer
	for _, name := range sortedKeys(b.nodes) {
		n := b.nodes[name]
		ip := n.ip[fi]
		if name == b.local.name || !ip.IsValid() || ip == localIP || n.clusterID.IsValid() {
			continue
		}
		sym, err := peerName(PeerMesh, ip, 0)
		if err != nil {
			b.warn("node %s: no mesh session: %v", name, err)
			continue
		}
		out = append(out, Peer{
			Name: sym, Type: PeerMesh, Comment: newComment("node-to-node mesh: node " + name),
			IP: ip, Port: n.port, AS: n.as, SourceAddress: localIP,
			Passive:  ip.String() > localIP.String(), // one side connects (string order, as Calico)
			Password: password, GracefulRestartTime: restart,
		})
	}
	return out
}

// explicitPeerings evaluates the BGPPeers for this node: global ones, node-specific ones, then
// the reverse of peerings whose remote end is this node (so Calico-to-Calico peerings are
// symmetric) unless their reversePeering is Manual. A BGPPeer with a localWorkloadSelector peers
// with the local workloads it is paired with (see pairWorkloads), never in reverse, and last: a
// workload address never takes the place of another BGPPeer's session.
func (b *builder) explicitPeerings(fi int) []candidate {
	seen := map[peerKey]bool{}
	var out []candidate
	emit := func(typ string, t target, p *api.BGPPeer, reverse bool) {
		k := peerKey{t.ip, t.port}
		if familyIndex(t.ip) != fi || seen[k] {
			return
		}
		seen[k] = true
		out = append(out, candidate{typ: typ, t: t, peer: p, reverse: reverse})
	}
	names := sortedKeys(b.in.Peers)
	var workloadPeers []*api.BGPPeer
	for _, global := range []bool{true, false} {
		for _, name := range names {
			p := b.in.Peers[name]
			if isGlobal := p.Spec.Node == "" && p.Spec.NodeSelector == ""; isGlobal != global {
				continue
			}
			if !global && !b.appliesToLocal(p) {
				continue
			}
			if p.Spec.LocalWorkloadSelector != "" {
				workloadPeers = append(workloadPeers, p)
				continue
			}
			typ := PeerNode
			if global {
				typ = PeerGlobal
			}
			for _, t := range b.targets(p) {
				emit(typ, t, p, false)
			}
		}
	}
	for _, name := range names {
		p := b.in.Peers[name]
		if p.Spec.ReversePeering == "Manual" || p.Spec.LocalWorkloadSelector != "" {
			continue
		}
		for _, t := range b.reverseTargets(p, fi) {
			emit(PeerNode, t, p, true)
		}
	}
	for _, p := range workloadPeers {
		for _, t := range b.workloadTargets(p, fi) {
			emit(PeerLocalWorkload, t, p, false)
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

// peerAddr parses a BGPPeer's peerIP ("198.18.1.254", "198.18.1.254:1179", "[fd00::1]:1179").
func peerAddr(peerIP string) (netip.Addr, uint16, error) {
	ip, port, err := api.SplitPeerIP(peerIP)
	if err != nil {
		return netip.Addr{}, 0, err
	}
	addr, ok := netip.AddrFromSlice(ip)
	if !ok {
		return netip.Addr{}, 0, fmt.Errorf("invalid peer IP %q", peerIP)
	}
	return addr.Unmap(), uint16(port), nil
}

// peerAS is a BGPPeer's AS number, the global one by default (as Project Calico matches the
// nodes a peerIP names).
func (b *builder) peerAS(p *api.BGPPeer) ASN {
	if p.Spec.ASNumber != nil && *p.Spec.ASNumber != 0 {
		return ASN(*p.Spec.ASNumber)
	}
	return b.globalAS()
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
	ip, port, err := peerAddr(p.Spec.PeerIP)
	if err == nil && !sessionAddr(ip) {
		err = fmt.Errorf("peer IP %s cannot be a BGP neighbor without an interface", ip)
	}
	if via, ok := reachableBy(p); err == nil && ok && via.Is4() != ip.Is4() {
		err = fmt.Errorf("reachableBy %s is not of the peer IP's family; no session", via) // as Project Calico
	}
	if err != nil {
		b.warn("BGPPeer %s: %v", p.Name, err)
		return nil
	}
	t := target{ip: ip, port: port, as: b.peerAS(p)}
	n := b.nodeWithIP(t.ip)
	if n != nil {
		t.byIP = true
		if t.port == 0 && n.as == t.as {
			t.port = n.port // peer with a Calico node on the port it listens on
		}
	}
	if p.Spec.ASNumber == nil || *p.Spec.ASNumber == 0 {
		if n == nil {
			// Project Calico would write "as 0", which BIRD refuses (with every other session).
			b.warn("BGPPeer %s: peer IP %s is no node's address and the BGPPeer has no asNumber; no session", p.Name, ip)
			return nil
		}
		t.as = n.as // a node's address without asNumber: that node's AS
	}
	return []target{t}
}

// nodeTargets are a node's addresses in the given families as peering targets.
func nodeTargets(n *nodeBGP, fams ...int) []target {
	var out []target
	for _, fi := range fams {
		if n.ip[fi].IsValid() {
			out = append(out, target{ip: n.ip[fi], port: n.port, as: n.as, rrClusterID: n.clusterID})
		}
	}
	return out
}

func (b *builder) nodeWithIP(ip netip.Addr) *nodeBGP {
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
	ip, port, err := peerAddr(p.Spec.PeerIP)
	if err != nil || ip != b.local.ip[fi] {
		return false
	}
	listen := b.local.port
	if listen == 0 {
		listen = 179
	}
	return b.peerAS(p) == b.local.as && (port == 0 || port == listen)
}

// explicitPeer turns a candidate into a Peer with the BGPPeer's settings (ok false: it cannot be
// made, with a warning).
func (b *builder) explicitPeer(c candidate, fi int, funcs []FilterFunc) (Peer, bool) {
	spec := &c.peer.Spec
	what := "BGPPeer " + c.peer.Name
	name, err := peerName(c.typ, c.t.ip, c.t.port)
	if err != nil {
		b.warn("%s: no session with %s: %v", what, c.t.ip, err)
		return Peer{}, false
	}
	p := Peer{
		Name: name, Type: c.typ, Comment: newComment(what),
		IP: c.t.ip, Port: c.t.port, AS: c.t.as,
		Password:            b.password(what, spec.Password),
		GracefulRestartTime: b.durationSeconds(what+": maxRestartTime", spec.MaxRestartTime),
	}
	localIP := b.local.ip[fi]
	if spec.SourceAddress != "None" {
		p.SourceAddress = localIP
	}
	// localASNumber applies to peerings with a peerIP, not to peer nodes (Project Calico's rule).
	if spec.LocalASNumber != nil && !c.reverse && spec.PeerSelector == "" {
		p.LocalAS = ASN(*spec.LocalASNumber)
	}
	localAS := p.localAS(b.local.as)
	// Project Calico makes a global peering with a node's address unidirectional, like the mesh
	// (a peering by peerSelector connects from both ends).
	p.Passive = c.typ == PeerGlobal && c.t.byIP && c.t.ip.String() > localIP.String()
	if p.AS == localAS && b.local.clusterID.IsValid() && c.t.rrClusterID != b.local.clusterID {
		p.RRClient, p.RRClusterID = true, b.local.clusterID
	}
	switch {
	case spec.NextHopMode == "Self":
		p.NextHop = NextHopSelf
	case spec.NextHopMode == "Keep", spec.KeepOriginalNextHop && p.AS != localAS:
		p.NextHop = NextHopKeep
	}
	p.KeepaliveTime = b.keepaliveTime(what, spec.KeepaliveTime)
	b.peerRoute(&p, what, c.peer)
	b.peerLimits(&p, what, spec)
	b.peerFilterCalls(&p, c.peer.Name, spec.Filters, funcs)
	return p, true
}

// localAS is the AS this node uses on the session: the BGPPeer's localASNumber, else the node's.
func (p *Peer) localAS(node ASN) ASN {
	if p.LocalAS != 0 {
		return p.LocalAS
	}
	return node
}

// defaultHoldTime is BIRD's hold time when confd.toml's [vars] hold_time does not set one.
const defaultHoldTime = 240

// keepaliveTime rounds a BGPPeer's keepaliveTime to seconds, as Project Calico does. BIRD takes
// 1 up to the hold time; another value is left out (BIRD's default, a third of the hold time)
// with a warning.
func (b *builder) keepaliveTime(what string, d *api.Duration) uint32 {
	if d == nil {
		return 0
	}
	hold := uint32(defaultHoldTime)
	if v, err := strconv.ParseUint(b.opts.Vars["hold_time"], 10, 16); err == nil {
		hold = uint32(v)
	}
	s := math.Round(d.Seconds())
	if s < 1 || s > float64(hold) {
		b.warn("%s: keepaliveTime %s is outside BIRD's 1s to the hold time (%ds); not set", what, d.Duration, hold)
		return 0
	}
	return uint32(s)
}

// reachableBy is a BGPPeer's reachableBy address, if it sets one that parses.
func reachableBy(p *api.BGPPeer) (netip.Addr, bool) {
	if p.Spec.ReachableBy == "" {
		return netip.Addr{}, false
	}
	a, err := netip.ParseAddr(p.Spec.ReachableBy)
	return a.Unmap(), err == nil
}

// peerRoute sets the static route to the peer through the BGPPeer's reachableBy gateway
// (Project Calico's "route <peer>/32 via <reachableBy>"). A gateway of the other family, or one
// BIRD cannot use without an interface, gets no route, with a warning.
func (b *builder) peerRoute(p *Peer, what string, peer *api.BGPPeer) {
	via, ok := reachableBy(peer)
	switch {
	case peer.Spec.ReachableBy == "":
	case !ok || via.Is4() != p.IP.Is4() || !sessionAddr(via):
		b.warn("%s: reachableBy %q cannot route to %s; no route to the peer", what, peer.Spec.ReachableBy, p.IP)
	default:
		p.ReachableBy = via
	}
}

// peerLimits sets allow local as and TTL security, as Project Calico renders them (only values
// above 0); values BIRD cannot take are left out with a warning.
func (b *builder) peerLimits(p *Peer, what string, spec *api.BGPPeerSpec) {
	if n := spec.NumAllowedLocalASNumbers; n != nil && *n > 0 {
		if *n <= math.MaxUint32 {
			p.AllowLocalAS = uint32(*n)
		} else {
			b.warn("%s: numAllowedLocalASNumbers %d is out of range; not set", what, *n)
		}
	}
	if n := spec.TTLSecurity; n != nil && *n > 0 {
		if *n <= math.MaxUint8 {
			p.TTLSecurity = uint8(*n)
		} else {
			b.warn("%s: ttlSecurity %d is out of range 0-255; not set", what, *n)
		}
	}
}

// password reads a BGP password; a password that cannot be read or written into BIRD's
// configuration is left out, with a warning.
func (b *builder) password(what string, pw *api.BGPPassword) *Text {
	if pw == nil || pw.SecretKeyRef == nil || b.opts.Password == nil {
		return nil
	}
	s, err := b.opts.Password(pw.SecretKeyRef)
	if err != nil {
		b.warn("%s: no password: %v", what, err)
		return nil
	}
	t, err := newText(s)
	if err != nil || s == "" {
		b.warn("%s: the password cannot be written into BIRD's configuration (empty, a quote, a backslash or a control character); no password", what)
		return nil
	}
	return &t
}

// durationSeconds rounds a duration to whole seconds (0 when unset, or out of BIRD's range).
func (b *builder) durationSeconds(what string, d *api.Duration) uint32 {
	if d == nil {
		return 0
	}
	s := math.Round(d.Seconds())
	if s < 0 || s > math.MaxUint32 {
		b.warn("%s: %s is out of range; not set", what, d.Duration)
		return 0
	}
	return uint32(s)
}
