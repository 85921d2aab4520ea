package confd

import (
	"crypto/sha256"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"

	"github.com/calico-host/calico-host/pkg/api"
)

// DefaultASNumber is Project Calico's AS number when none is configured.
const DefaultASNumber ASN = 64512

// BuildOptions are the node-local settings of Build.
type BuildOptions struct {
	NodeName string
	// RouterID overrides the router id: an IPv4 address or "hash".
	RouterID string
	// Password returns the BGP password a secret key reference points to.
	Password func(ref *api.SecretKeyRef) (string, error)
	// Vars are passed to the templates.
	Vars map[string]string
}

// builder holds the state of one Build.
type builder struct {
	in       *Inputs
	opts     BuildOptions
	global   *api.BGPConfigurationSpec // never nil
	nodeConf *api.BGPConfigurationSpec // never nil
	nodes    map[string]*nodeBGP
	local    *nodeBGP // nil if this node has no Node object
	warnings []string
	// blocked are the BGPFilter directions that cannot be written exactly (see filters.go).
	blocked map[filterDir]bool
	// noSessions: this node's BGP configuration is stored but invalid, so it has no sessions.
	noSessions bool
	// workloads are the local workloads each BGPPeer with a localWorkloadSelector peers with.
	workloads map[string][]localWorkload
}

// nodeBGP is the BGP view of one Node.
type nodeBGP struct {
	name      string
	ip        [2]netip.Addr   // by family index: IPv4, IPv6 (invalid: none)
	subnet    [2]netip.Prefix // the networks of those addresses (an address without a length: itself)
	as        ASN
	clusterID netip.Addr // route reflector cluster ID (invalid: not a reflector)
	wireguard [2]bool    // the node has a WireGuard interface address, by family
	port      uint16     // listen port (0: default)
	labels    map[string]string
}

// families lists the IP families by index.
var families = [2]struct {
	version        int
	channel        string
	suffix, filter string
}{{4, "ipv4", "v4", "V4"}, {6, "ipv6", "v6", "V6"}}

// Build computes the BGP model of opts.NodeName from the datastore inputs. It is pure: bad
// datastore contents become warnings in the model, never errors.
func Build(in *Inputs, opts BuildOptions) *Model {
	b := newBuilder(in, opts)
	m := &Model{
		NodeName:         newComment(opts.NodeName),
		NodeFound:        b.local != nil,
		ASNumber:         b.globalAS(),
		ListenPort:       b.listenPort(opts.NodeName),
		MeshEnabled:      b.meshEnabled(),
		StrictBind:       b.strictBind(),
		BIRDProgramsIPIP: b.clusterRoutePolicy().ipip,
		DirectInterfaces: b.directInterfaces(),
		Vars:             opts.Vars,
	}
	b.setLogging(m)
	if b.local != nil {
		m.ASNumber, m.ClusterID = b.local.as, b.local.clusterID
	} else {
		b.warn("node %q has no Node object in the datastore: no BGP sessions", opts.NodeName)
	}
	m.RouterID = b.routerID()
	for fi := range families {
		m.Families = append(m.Families, b.family(fi))
	}
	for _, w := range dedupe(b.warnings) {
		m.Warnings = append(m.Warnings, newComment(w))
	}
	return m
}

func newBuilder(in *Inputs, opts BuildOptions) *builder {
	b := &builder{in: in, opts: opts, global: &api.BGPConfigurationSpec{}, nodeConf: &api.BGPConfigurationSpec{}}
	if c := in.BGPConfigs["default"]; c != nil {
		b.global = &c.Spec
	}
	if c := in.BGPConfigs["node."+opts.NodeName]; c != nil {
		b.nodeConf = &c.Spec
	}
	for _, name := range sortedKeys(in.InvalidFilters) {
		b.warn("%s; the sessions that use it exchange no routes", in.InvalidFilters[name])
	}
	for _, name := range sortedKeys(in.InvalidPools) {
		b.warn("%s; used as written", in.InvalidPools[name])
	}
	for _, name := range []string{"default", "node." + opts.NodeName} {
		if msg, bad := in.InvalidConfigs[name]; bad {
			b.warn("%s; no BGP sessions until it is valid", msg)
			b.noSessions = true
		}
	}
	b.nodes = map[string]*nodeBGP{}
	for _, name := range sortedKeys(in.Nodes) {
		if n := b.nodeInfo(in.Nodes[name]); n != nil {
			b.nodes[name] = n
		}
	}
	b.local = b.nodes[opts.NodeName]
	b.workloads = b.pairWorkloads()
	return b
}

func (b *builder) warn(format string, args ...any) {
	b.warnings = append(b.warnings, fmt.Sprintf(format, args...))
}

// nodeInfo extracts the BGP fields of a Node (addresses without their prefix length).
func (b *builder) nodeInfo(n *api.Node) *nodeBGP {
	info := &nodeBGP{name: n.Name, as: b.globalAS(), labels: n.Labels, port: b.listenPort(n.Name)}
	if wg := n.Spec.Wireguard; wg != nil {
		info.wireguard = [2]bool{wg.InterfaceIPv4Address != "", wg.InterfaceIPv6Address != ""}
	}
	bgp := n.Spec.BGP
	if bgp == nil {
		return info
	}
	for fi, addr := range []string{bgp.IPv4Address, bgp.IPv6Address} {
		if addr == "" {
			continue
		}
		ip, err := parseAddr(addr)
		if err != nil || familyIndex(ip) != fi || !sessionAddr(ip) {
			b.warn("node %s: ignoring bad BGP address %q", n.Name, addr)
			continue
		}
		info.ip[fi], info.subnet[fi] = ip, netip.PrefixFrom(ip, ip.BitLen())
		if p, err := netip.ParsePrefix(addr); err == nil {
			info.subnet[fi] = p.Masked()
		}
	}
	if bgp.ASNumber != nil {
		info.as = ASN(*bgp.ASNumber)
	}
	if id := bgp.RouteReflectorClusterID; id != "" {
		if a, err := netip.ParseAddr(id); err == nil && a.Is4() {
			info.clusterID = a
		} else {
			b.warn("node %s: ignoring bad route reflector cluster ID %q", n.Name, id)
		}
	}
	return info
}

// parseAddr accepts "198.18.0.1" or "198.18.0.1/24" (no zone; IPv4-mapped IPv6 is IPv4).
func parseAddr(s string) (netip.Addr, error) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Addr().Unmap(), nil
	}
	a, err := netip.ParseAddr(s)
	if err == nil && a.Zone() != "" {
		return netip.Addr{}, fmt.Errorf("address %q has a zone", s)
	}
	return a.Unmap(), err
}

// sessionAddr reports whether BIRD can run a session to or from ip without an interface: not
// unspecified, not IPv6 link-local (BIRD refuses those without "%iface", failing the whole file).
func sessionAddr(ip netip.Addr) bool {
	return ip.IsValid() && !ip.IsUnspecified() && !(ip.Is6() && ip.IsLinkLocalUnicast())
}

func familyIndex(ip netip.Addr) int {
	if ip.Is4() {
		return 0
	}
	return 1
}

func (b *builder) globalAS() ASN {
	if b.global.ASNumber != nil {
		return ASN(*b.global.ASNumber)
	}
	return DefaultASNumber
}

// listenPort is a node's BGP port: its own BGPConfiguration's, else the global one.
func (b *builder) listenPort(node string) uint16 {
	if c := b.in.BGPConfigs["node."+node]; c != nil && c.Spec.ListenPort != 0 {
		return c.Spec.ListenPort
	}
	return b.global.ListenPort
}

// excludeLabel on this node's Node (value "true") keeps it from advertising service addresses,
// as Project Calico's confd (the routes to them are still kept out of its kernel).
const excludeLabel = "node.kubernetes.io/exclude-from-external-load-balancers"

func (b *builder) excludedFromServices() bool {
	return b.local != nil && b.local.labels[excludeLabel] == "true"
}

// strictBind is bindMode NodeIP: BGP sessions listen on the node's address only.
func (b *builder) strictBind() bool { return b.global.BindMode == "NodeIP" }

func (b *builder) meshEnabled() bool {
	return b.global.NodeToNodeMeshEnabled == nil || *b.global.NodeToNodeMeshEnabled
}

// logSettings maps logSeverityScreen to BIRD's debug and log settings.
var logSettings = map[string][2]string{
	"debug":   {"all", "all"},
	"trace":   {"all", "all"},
	"none":    {"", "{ fatal, bug }"},
	"warning": {"{ states }", "{ warning, error, auth, fatal, bug }"},
	"warn":    {"{ states }", "{ warning, error, auth, fatal, bug }"},
	"error":   {"{ states }", "{ error, fatal, bug }"},
	"fatal":   {"{ states }", "{ error, fatal, bug }"},
	"panic":   {"{ states }", "{ error, fatal, bug }"},
	"info":    {"{ states }", "{ info, remote, warning, error, auth, fatal, bug }"},
}

// setLogging sets the logging of the model from logSeverityScreen (node config first).
func (b *builder) setLogging(m *Model) {
	sev := strings.ToLower(b.nodeConf.LogSeverityScreen)
	if sev == "" {
		sev = strings.ToLower(b.global.LogSeverityScreen)
	}
	if _, ok := logSettings[sev]; !ok {
		sev = "info"
	}
	m.LogSeverity = sev
	m.Debug, m.LogClasses = Syntax{s: logSettings[sev][0]}, Syntax{s: logSettings[sev][1]}
}

// directInterfaces excludes the ignored interfaces, workload (cali*) and kube-ipvs interfaces.
func (b *builder) directInterfaces() Syntax {
	var parts []Syntax
	for _, i := range b.global.IgnoredInterfaces {
		t, err := newText(i)
		if err != nil || i == "*" || !api.IsInterfacePattern(i) {
			b.warn("BGPConfiguration default: ignoring bad interface name %q in ignoredInterfaces", i)
			continue
		}
		parts = append(parts, syntaxf("-%s", t))
	}
	return joinSyntax(append(parts, Syntax{s: `-"cali*"`}, Syntax{s: `-"kube-ipvs*"`}, Syntax{s: `"*"`}), ", ")
}

// routerID is the override, else this node's IPv4 address, else a hash of the node name.
func (b *builder) routerID() netip.Addr {
	switch b.opts.RouterID {
	case "hash":
		return hashToIPv4(b.opts.NodeName)
	case "":
	default:
		if a, err := netip.ParseAddr(b.opts.RouterID); err == nil && a.Is4() {
			return a
		}
		b.warn("ignoring bad router id %q", b.opts.RouterID)
	}
	if b.local != nil && b.local.ip[0].IsValid() {
		return b.local.ip[0]
	}
	return hashToIPv4(b.opts.NodeName)
}

// hashToIPv4 derives a router id from a name the way Project Calico does (CALICO_ROUTER_ID=hash).
func hashToIPv4(name string) netip.Addr {
	h := sha256.Sum256([]byte(name))
	first := h[0]
	if first > 223 {
		first -= 32 // stay out of multicast and reserved space
	}
	return netip.AddrFrom4([4]byte{first, h[1], h[2], h[3]})
}

// family builds one family of the model.
func (b *builder) family(fi int) *Family {
	f := &Family{
		Version: families[fi].version,
		Channel: families[fi].channel,
		Suffix:  families[fi].suffix,
	}
	if b.local != nil {
		f.NodeIP = b.local.ip[fi]
	}
	f.Blocks = b.blocks(fi)
	f.ServiceRanges = b.staticRoutes(fi)
	if !b.excludedFromServices() {
		f.StaticRoutes = f.ServiceRanges
	}
	f.ReflectedServices = b.reflectedServices(fi)
	f.Pools = b.pools(fi)
	// Project Calico's confd writes the IPv4 pools' kernel rules only when it knows the node's
	// IPv4 network (IPIP CrossSubnet needs it): a node without an IPv4 address has none.
	f.KernelPoolRules = fi == 1 || (b.local != nil && b.local.ip[0].IsValid())
	f.Communities = b.communities(fi)
	f.Filters = b.filterFuncs(fi)
	if f.NodeIP.IsValid() && !b.noSessions {
		f.Peers = b.peers(fi, f.Filters)
	}
	f.PeerRoutes = b.peerRoutes(f.Peers)
	f.WireguardPeers = b.wireguardPeers(fi)
	prio := b.global.IPv4NormalRoutePriority
	if f.Version == 6 {
		prio = b.global.IPv6NormalRoutePriority
	}
	f.NormalRoutePriority = routePriority(prio)
	f.ElevatedLocalPref = maxRoutePriority - int64(f.NormalRoutePriority)
	return f
}

// wireguardPeers are, when this node runs WireGuard in family fi, the BGP addresses of the other
// nodes that do: felix routes their blocks through the WireGuard device, so BIRD programs no
// route whose next hop is one of them (Project Calico's WireGuard peer kernel filter).
func (b *builder) wireguardPeers(fi int) []netip.Addr {
	if b.local == nil || !b.local.wireguard[fi] {
		return nil
	}
	var out []netip.Addr
	for _, name := range sortedKeys(b.nodes) {
		if n := b.nodes[name]; name != b.local.name && n.wireguard[fi] && n.ip[fi].IsValid() {
			out = append(out, n.ip[fi])
		}
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return slices.Compact(out)
}

// peerRoutes are the routes to the peers that have a reachableBy gateway, one per peer address
// (the first session's gateway wins; BIRD refuses a route twice).
func (b *builder) peerRoutes(peers []Peer) []PeerRoute {
	var out []PeerRoute
	seen := map[netip.Prefix]netip.Addr{}
	for _, p := range peers {
		if !p.ReachableBy.IsValid() {
			continue
		}
		dest := netip.PrefixFrom(p.IP, p.IP.BitLen())
		if via, dup := seen[dest]; dup {
			if via != p.ReachableBy {
				b.warn("%s: a route to %s via %s exists already; not via %s", p.Comment, p.IP, via, p.ReachableBy)
			}
			continue
		}
		seen[dest] = p.ReachableBy
		out = append(out, PeerRoute{Dest: dest, Via: p.ReachableBy, Comment: p.Comment})
	}
	return out
}

// dedupe drops repeated strings, keeping the first of each.
func dedupe(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func sortedKeys[T any](m map[string]T) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
