package calc

import (
	"fmt"
	"net"
	"net/netip"
	"reflect"
	"strings"

	"github.com/calico-host/calico-host/pkg/api"
)

// Item ID prefixes: the kind of object an item comes from.
const (
	workloadItemPrefix = "w:" // w:<namespace>/<name>
	hostItemPrefix     = "h:" // h:<name>
	netSetItemPrefix   = "g:" // g:<name> (GlobalNetworkSet)
	nsNetSetItemPrefix = "n:" // n:<namespace>/<name> (NetworkSet)
)

// localEndpoint is one of this host's endpoints: its item plus what the dataplane needs.
type localEndpoint struct {
	wepID    WorkloadEndpointID
	wep      *WorkloadEndpoint // base, without tiers (workloads)
	hep      *HostEndpoint     // base, without tiers (host endpoints)
	profiles []string
}

// workloadItem converts a WorkloadEndpoint into its item and, if it is local, its endpoint.
// Like libcalico's update processor it rejects an endpoint without addresses, drops pcns./pcsa.
// labels (an endpoint cannot claim another namespace) and adds the namespace, orchestrator and
// service-account labels.
func workloadItem(host, ns, name string, w *api.WorkloadEndpoint) (*item, *localEndpoint, error) {
	s := &w.Spec
	if len(s.IPNetworks) == 0 {
		return nil, nil, fmt.Errorf("workload endpoint has no ipNetworks")
	}
	nets, err := parseNets(s.IPNetworks)
	if err != nil {
		return nil, nil, err
	}
	id, node, err := workloadEndpointID(ns, name, s)
	if err != nil {
		return nil, nil, err
	}
	own := endpointLabels(w.Labels)
	own[labelNamespace] = ns
	if _, ok := own[labelOrchestrator]; !ok && s.Orchestrator != "" {
		own[labelOrchestrator] = s.Orchestrator
	}
	if s.ServiceAccountName != "" {
		own[labelServiceAccount] = s.ServiceAccountName
	}
	it := &item{kind: itemWorkload, own: own, parents: s.Profiles, ns: ns, sa: s.ServiceAccountName,
		name: workloadName(id.WorkloadID), nets: nets, ports: workloadPorts(s.Ports), local: node == host}
	if !it.local {
		return it, nil, nil
	}
	ep, err := localWorkload(ns, nets, s)
	if err != nil {
		return nil, nil, err
	}
	return it, &localEndpoint{wepID: id, wep: ep, profiles: s.Profiles}, nil
}

// workloadEndpointID derives the endpoint's ID from its name, as libcalico does
// (<node>-<orchestrator>-<workload>-<endpoint>), falling back to the spec fields, and returns
// the node that owns it (spec.node, else the name's).
func workloadEndpointID(ns, name string, s *api.WorkloadEndpointSpec) (WorkloadEndpointID, string, error) {
	node, orch, wl, ep, err := api.SplitWorkloadEndpointName(name)
	if err != nil {
		if s.Orchestrator == "" || s.Workload == "" || s.Endpoint == "" {
			return WorkloadEndpointID{}, "", err
		}
		orch, wl, ep = s.Orchestrator, s.Workload, s.Endpoint
	}
	if s.Node != "" {
		node = s.Node
	}
	return WorkloadEndpointID{OrchestratorID: orch, WorkloadID: api.WorkloadID(ns, wl), EndpointID: ep}, node, nil
}

// localWorkload builds the dataplane view of a local workload endpoint (without its tiers).
func localWorkload(ns string, nets []netip.Prefix, s *api.WorkloadEndpointSpec) (*WorkloadEndpoint, error) {
	ep := &WorkloadEndpoint{Name: s.InterfaceName, Namespace: ns, ProfileIDs: s.Profiles}
	if s.MAC != "" {
		mac, err := net.ParseMAC(s.MAC)
		if err != nil {
			return nil, fmt.Errorf("invalid mac %q", s.MAC)
		}
		ep.MAC = mac.String()
	}
	for _, n := range nets {
		if n.Addr().Is4() {
			ep.IPv4Nets = append(ep.IPv4Nets, n)
		} else {
			ep.IPv6Nets = append(ep.IPv6Nets, n)
		}
	}
	for _, nat := range s.IPNATs {
		in, err1 := netip.ParseAddr(nat.InternalIP)
		ext, err2 := netip.ParseAddr(nat.ExternalIP)
		if err1 != nil || err2 != nil {
			continue // as libcalico: an unparsable NAT is skipped
		}
		in, ext = in.Unmap(), ext.Unmap() // ::ffff:a.b.c.d is an IPv4 address (To4), as in Project Calico
		if in.Is4() {
			ep.IPv4NAT = append(ep.IPv4NAT, NATInfo{ExtIP: ext, IntIP: in})
		} else {
			ep.IPv6NAT = append(ep.IPv6NAT, NATInfo{ExtIP: ext, IntIP: in})
		}
	}
	var err error
	if ep.AllowSpoofedSourcePrefixes, err = parseNets(s.AllowSpoofedSourcePrefixes); err != nil {
		return nil, err
	}
	return ep, nil
}

// endpointLabels copies an endpoint's labels without the pcns./pcsa. ones.
func endpointLabels(in map[string]string) map[string]string {
	out := make(map[string]string, len(in)+3)
	for k, v := range in {
		if !strings.HasPrefix(k, nsLabelPrefix) && !strings.HasPrefix(k, saLabelPrefix) {
			out[k] = v
		}
	}
	return out
}

// globalLabels copies a non-namespaced object's labels: no pcns./pcsa. labels and no namespace
// label (which would make it look namespaced to global()).
func globalLabels(in map[string]string) map[string]string {
	out := endpointLabels(in)
	delete(out, labelNamespace)
	return out
}

func workloadPorts(in []api.WorkloadEndpointPort) []namedPort {
	var out []namedPort
	for _, p := range in {
		if n, ok := p.Protocol.NumberValue(); ok && p.Name != "" {
			out = append(out, namedPort{name: p.Name, proto: n, port: p.Port})
		}
	}
	return out
}

// hostItem converts a HostEndpoint into its item and, if it is local, its endpoint. A host
// endpoint that failed validation (invalid) keeps what can be checked: its node, an interface
// name that is one, its expected IPs that parse (the others are returned, for the caller to
// log), its named ports and its labels as written, so that policies select it and IP sets hold it
// as before; but its profiles do not apply (traffic no policy decides meets the endpoint's final
// drop). Treated as absent, its interface would be unprotected.
func hostItem(host, name string, h *api.HostEndpoint, invalid bool) (*item, *localEndpoint, []error) {
	s := &h.Spec
	hep := &HostEndpoint{Name: name, InterfaceName: s.InterfaceName, ProfileIDs: s.Profiles}
	var skipped []error
	if invalid && s.InterfaceName != "*" && s.InterfaceName != "" && !api.ValidInterfaceName(s.InterfaceName) {
		hep.InterfaceName = ""
		skipped = append(skipped, fmt.Errorf("spec.interfaceName: invalid interface name %q", s.InterfaceName))
	}
	nets, bad := hostAddrs(hep, s.ExpectedIPs)
	skipped = append(skipped, bad...)
	ports := endpointPorts(s.Ports)
	if !invalid && len(skipped) > 0 {
		return nil, nil, skipped[:1]
	}
	if invalid {
		hep.ProfileIDs = nil
	}
	if hep.InterfaceName == "" && len(nets) == 0 {
		return nil, nil, append(skipped, fmt.Errorf("host endpoint names neither an interface nor an address"))
	}
	// Flow logs name a host endpoint by its node, as Project Calico's felix does (the aggregated
	// name of a HostEndpointKey is its Hostname).
	it := &item{kind: itemHost, own: globalLabels(h.Labels), parents: s.Profiles, name: s.Node, nets: nets, ports: ports,
		local: s.Node == host}
	if !it.local {
		return it, nil, skipped
	}
	return it, &localEndpoint{hep: hep, profiles: hep.ProfileIDs}, skipped
}

// hostAddrs parses a host endpoint's expected IPs into hep and returns them as host prefixes,
// with an error for each one that does not parse.
func hostAddrs(hep *HostEndpoint, ips []string) ([]netip.Prefix, []error) {
	var nets []netip.Prefix
	var bad []error
	for i, ip := range ips {
		a, err := netip.ParseAddr(ip)
		if err != nil || a.Zone() != "" {
			bad = append(bad, fmt.Errorf("spec.expectedIPs[%d]: invalid expectedIP %q", i, ip))
			continue
		}
		a = a.Unmap()
		nets = append(nets, netip.PrefixFrom(a, a.BitLen()))
		if a.Is4() {
			hep.ExpectedIPv4Addrs = append(hep.ExpectedIPv4Addrs, a)
		} else {
			hep.ExpectedIPv6Addrs = append(hep.ExpectedIPv6Addrs, a)
		}
	}
	return nets, bad
}

// endpointPorts returns a host endpoint's named ports (those whose protocol has a number).
func endpointPorts(in []api.EndpointPort) []namedPort {
	var ports []namedPort
	for _, p := range in {
		if n, ok := p.Protocol.NumberValue(); ok && p.Name != "" {
			ports = append(ports, namedPort{name: p.Name, proto: n, port: p.Port})
		}
	}
	return ports
}

// netSetItem converts a GlobalNetworkSet (ns "") or NetworkSet into its item. As in Project
// Calico, an entry of nets that does not parse is skipped (returned, for the caller to log):
// the set keeps its other entries and its labels, so that a rule selecting it still matches
// them.
func netSetItem(ns, name string, labels map[string]string, spec *api.NetworkSetSpec) (*item, []error) {
	nets, skipped := parseNetsSkipping(spec.Nets)
	if ns == "" {
		return &item{kind: itemNetSet, own: globalLabels(labels), name: name, nets: nets}, skipped
	}
	own := endpointLabels(labels)
	own[labelNamespace] = ns
	return &item{kind: itemNetSet, own: own, ns: ns, name: name, nets: nets}, skipped
}

// parseNetsSkipping parses what parseNets does, skipping the entries that do not parse: each
// comes back as an error naming its index.
func parseNetsSkipping(in []string) ([]netip.Prefix, []error) {
	var out []netip.Prefix
	var skipped []error
	for i, s := range in {
		p, err := parsePrefixOrAddr(s)
		if err != nil {
			skipped = append(skipped, fmt.Errorf("spec.nets[%d]: %w", i, err))
			continue
		}
		out = append(out, p.Masked())
	}
	return out, skipped
}

// endpointCalc follows this host's endpoints and emits them with their resolved policy. It
// tells its observers which endpoints exist, as sent, and counts them.
type endpointCalc struct {
	local     map[string]*localEndpoint
	dirty     map[string]struct{}
	sent      map[string]Update // last update sent per item ID
	policies  *policyCalc
	profiles  *profileCalc
	migration *migrationCalc // roles in live migrations
	host      string
	peers     *bgpPeerCalc
	observers []EndpointObserver
	// itemObserver, when set, learns the tiers of the endpoints sent (flow logs).
	itemObserver ItemObserver
	workloads    int // workload endpoints sent
	hosts        int // host endpoints sent
}

// EndpointObserver learns which local endpoints exist (felix's endpoint status reporters). Calc
// calls it from its own goroutine, as endpoints appear in and disappear from its output.
type EndpointObserver interface {
	KnownWorkload(id WorkloadEndpointID, exists bool)
	KnownHostEndpoint(name string, exists bool)
}

// observe adds an observer and tells it about every endpoint sent so far.
func (c *endpointCalc) observe(o EndpointObserver) {
	c.observers = append(c.observers, o)
	for _, id := range sortedKeys(c.sent) {
		tell(o, c.sent[id], true)
	}
}

// known records that an endpoint (its last update) appeared or disappeared.
func (c *endpointCalc) known(u Update, exists bool) {
	n := -1
	if exists {
		n = 1
	}
	if _, ok := u.(HostEndpointUpdate); ok {
		c.hosts += n
	} else {
		c.workloads += n
	}
	for _, o := range c.observers {
		tell(o, u, exists)
	}
}

func tell(o EndpointObserver, u Update, exists bool) {
	switch u := u.(type) {
	case WorkloadEndpointUpdate:
		o.KnownWorkload(u.ID, exists)
	case HostEndpointUpdate:
		o.KnownHostEndpoint(u.Endpoint.Name, exists)
	}
}

func newEndpointCalc() *endpointCalc {
	return &endpointCalc{local: map[string]*localEndpoint{}, dirty: map[string]struct{}{}, sent: map[string]Update{}}
}

func (c *endpointCalc) markDirty(itemID string) { c.dirty[itemID] = struct{}{} }

// set records a local endpoint (nil when it is gone or no longer local).
func (c *endpointCalc) set(itemID string, ep *localEndpoint) {
	var prevProfiles, curProfiles []string
	if old := c.local[itemID]; old != nil {
		prevProfiles = old.profiles
	}
	if ep != nil {
		c.local[itemID] = ep
		curProfiles = ep.profiles
	} else {
		delete(c.local, itemID)
	}
	c.profiles.setRefs(itemID, prevProfiles, curProfiles)
	c.markDirty(itemID)
}

// flush emits the endpoints that changed, and separately the removed ones.
func (c *endpointCalc) flush() (updates, removes []Update) {
	for _, id := range sortedKeys(c.dirty) {
		ep, prev := c.local[id], c.sent[id]
		var cur Update
		if ep != nil {
			cur = c.resolve(id, ep)
		}
		c.tellTiers(id, cur)
		if prev != nil && (cur == nil || endpointKeyChanged(prev, cur)) {
			removes = append(removes, removalFor(prev))
			delete(c.sent, id)
			c.known(prev, false)
			prev = nil
		}
		if cur != nil && (prev == nil || !updatesEqual(prev, cur)) {
			updates = append(updates, cur)
			c.sent[id] = cur
			if prev == nil {
				c.known(cur, true)
			}
		}
	}
	clear(c.dirty)
	return updates, removes
}

// tellTiers tells the item observer the tiers of local endpoint id (cur nil: gone).
func (c *endpointCalc) tellTiers(id string, cur Update) {
	if c.itemObserver != nil {
		c.itemObserver.LocalTiers(id, tiersOf(cur))
	}
}

// resolve builds the update for a local endpoint with its current tiers.
func (c *endpointCalc) resolve(itemID string, ep *localEndpoint) Update {
	tl := c.policies.tiersFor(itemID, ep.hep != nil)
	if ep.hep != nil {
		h := *ep.hep
		h.Tiers, h.UntrackedTiers, h.PreDNATTiers, h.ForwardTiers = tl.normal, tl.untracked, tl.preDNAT, tl.forward
		return HostEndpointUpdate{Endpoint: &h}
	}
	w := *ep.wep
	w.Tiers = tl.normal
	w.LiveMigration = c.migration.role(c.host, ep.wepID)
	w.LocalBGPPeer, w.LocalBGPPeerAddrs = c.peers.peerFor(itemID)
	return WorkloadEndpointUpdate{ID: ep.wepID, Endpoint: &w}
}

func endpointKeyChanged(prev, cur Update) bool {
	switch p := prev.(type) {
	case WorkloadEndpointUpdate:
		c, ok := cur.(WorkloadEndpointUpdate)
		return !ok || c.ID != p.ID
	case HostEndpointUpdate:
		c, ok := cur.(HostEndpointUpdate)
		return !ok || c.Endpoint.Name != p.Endpoint.Name
	}
	return true
}

func removalFor(prev Update) Update {
	if h, ok := prev.(HostEndpointUpdate); ok {
		return HostEndpointRemove{Name: h.Endpoint.Name}
	}
	return WorkloadEndpointRemove{ID: prev.(WorkloadEndpointUpdate).ID}
}

// updatesEqual compares two updates deeply.
func updatesEqual(a, b Update) bool { return reflect.DeepEqual(a, b) }
