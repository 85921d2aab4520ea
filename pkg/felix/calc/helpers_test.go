package calc

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/selector"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// ---- object builders ----

func resKey(plural, ns, name string) string {
	if ns != "" {
		return datastore.ResourcePrefix + plural + "/" + ns + "/" + name
	}
	return datastore.ResourcePrefix + plural + "/" + name
}

func up(key string, v any) syncer.Update { return syncer.Update{ID: datastore.IDOf(key), Value: v} }
func del(key string) syncer.Update       { return syncer.Update{ID: datastore.IDOf(key)} }

type wepOpt func(*api.WorkloadEndpoint)

func withProfiles(p ...string) wepOpt { return func(w *api.WorkloadEndpoint) { w.Spec.Profiles = p } }
func withPorts(ps ...api.WorkloadEndpointPort) wepOpt {
	return func(w *api.WorkloadEndpoint) { w.Spec.Ports = ps }
}
func withSA(sa string) wepOpt {
	return func(w *api.WorkloadEndpoint) { w.Spec.ServiceAccountName = sa }
}

// wep builds a WorkloadEndpoint update for container ctr on node in namespace ns.
func wep(ns, node, ctr string, labels map[string]string, ips []string, opts ...wepOpt) syncer.Update {
	name := api.WorkloadEndpointName(node, "cni", ctr, "eth0")
	w := &api.WorkloadEndpoint{ObjectMeta: api.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: api.WorkloadEndpointSpec{Orchestrator: "cni", Node: node, Workload: ctr, ContainerID: ctr,
			Endpoint: "eth0", InterfaceName: "cali" + ctr, IPNetworks: ips}}
	for _, o := range opts {
		o(w)
	}
	return up(resKey("workloadendpoints", ns, name), w)
}

func wepKey(ns, node, ctr string) string {
	return resKey("workloadendpoints", ns, api.WorkloadEndpointName(node, "cni", ctr, "eth0"))
}

func wepID(ns, ctr string) WorkloadEndpointID {
	return WorkloadEndpointID{OrchestratorID: "cni", WorkloadID: ns + "/" + ctr, EndpointID: "eth0"}
}

func hep(name, node, iface string, labels map[string]string, ips []string, profiles ...string) syncer.Update {
	return up(resKey("hostendpoints", "", name), &api.HostEndpoint{ObjectMeta: api.ObjectMeta{Name: name, Labels: labels},
		Spec: api.HostEndpointSpec{Node: node, InterfaceName: iface, ExpectedIPs: ips, Profiles: profiles}})
}

func gnp(name string, spec api.GlobalNetworkPolicySpec) syncer.Update {
	return up(resKey("globalnetworkpolicies", "", name), &api.GlobalNetworkPolicy{ObjectMeta: api.ObjectMeta{Name: name}, Spec: spec})
}

func np(ns, name string, spec api.NetworkPolicySpec) syncer.Update {
	return up(resKey("networkpolicies", ns, name), &api.NetworkPolicy{ObjectMeta: api.ObjectMeta{Name: name, Namespace: ns}, Spec: spec})
}

func profile(name string, labels map[string]string, ingress, egress []api.Rule) syncer.Update {
	return up(resKey("profiles", "", name), &api.Profile{ObjectMeta: api.ObjectMeta{Name: name},
		Spec: api.ProfileSpec{LabelsToApply: labels, Ingress: ingress, Egress: egress}})
}

func tier(name string, order *float64, action string) syncer.Update {
	return up(resKey("tiers", "", name), &api.Tier{ObjectMeta: api.ObjectMeta{Name: name},
		Spec: api.TierSpec{Order: order, DefaultAction: action}})
}

func gns(name string, labels map[string]string, nets ...string) syncer.Update {
	return up(resKey("globalnetworksets", "", name), &api.GlobalNetworkSet{ObjectMeta: api.ObjectMeta{Name: name, Labels: labels},
		Spec: api.NetworkSetSpec{Nets: nets}})
}

func netset(ns, name string, labels map[string]string, nets ...string) syncer.Update {
	return up(resKey("networksets", ns, name), &api.NetworkSet{ObjectMeta: api.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: api.NetworkSetSpec{Nets: nets}})
}

func node(name, ipv4, vxlan string) syncer.Update {
	n := &api.Node{ObjectMeta: api.ObjectMeta{Name: name}, Spec: api.NodeSpec{IPv4VXLANTunnelAddr: vxlan}}
	if ipv4 != "" {
		n.Spec.BGP = &api.NodeBGPSpec{IPv4Address: ipv4}
	}
	return up(resKey("nodes", "", name), n)
}

func pool(name, cidr, vxlan string, nat bool) syncer.Update {
	return up(resKey("ippools", "", name), &api.IPPool{ObjectMeta: api.ObjectMeta{Name: name},
		Spec: api.IPPoolSpec{CIDR: cidr, VXLANMode: vxlan, NATOutgoing: nat}})
}

// block builds an IPAM block affine to owner; held maps ordinals to the node holding them.
func block(cidr, owner string, held map[int]string) syncer.Update {
	p := netip.MustParsePrefix(cidr)
	size := 1 << (p.Addr().BitLen() - p.Bits())
	b := &api.AllocationBlock{CIDR: cidr, Allocations: make([]*int, size)}
	if owner != "" {
		a := "host:" + owner
		b.Affinity = &a
	}
	for ord := 0; ord < size; ord++ {
		n, ok := held[ord]
		if !ok {
			continue
		}
		idx := len(b.Attributes)
		b.Attributes = append(b.Attributes, api.AllocationAttribute{ActiveOwnerAttrs: map[string]string{"node": n}})
		b.Allocations[ord] = &idx
	}
	fam := "ipv4"
	if p.Addr().Is6() {
		fam = "ipv6"
	}
	return up(datastore.BlockPrefix+fam+"/block/"+fmt.Sprintf("%s-%d", p.Addr(), p.Bits()), b)
}

func rule(action string, mods ...func(*api.Rule)) api.Rule {
	r := api.Rule{Action: action}
	for _, m := range mods {
		m(&r)
	}
	return r
}

func proto(s string) func(*api.Rule) {
	return func(r *api.Rule) { p := api.ProtocolFromString(s); r.Protocol = &p }
}
func srcSel(s string) func(*api.Rule) { return func(r *api.Rule) { r.Source.Selector = s } }
func dstSel(s string) func(*api.Rule) { return func(r *api.Rule) { r.Destination.Selector = s } }
func dstPorts(ps ...string) func(*api.Rule) {
	return func(r *api.Rule) {
		for _, p := range ps {
			port, err := api.ParsePort(p)
			if err != nil {
				panic(err)
			}
			r.Destination.Ports = append(r.Destination.Ports, port)
		}
	}
}

// sel returns the IP set ID of a selector.
func sel(s string) string { return selector.MustParse(s).UniqueID() }

// ---- running the graph ----

func newTestGraph(host string) *Graph { return New(host, zerolog.Nop()) }

// snapshot feeds a snapshot message (status InSync).
func snapshot(g *Graph, ups ...syncer.Update) {
	g.OnMessage(syncer.Message{Status: syncer.InSync, Snapshot: true, Updates: ups})
}

// feed feeds an incremental message.
func feed(g *Graph, ups ...syncer.Update) {
	g.OnMessage(syncer.Message{Status: syncer.InSync, Updates: ups})
}

// ---- the dataplane model ----

// dpModel is the dataplane's view: the latest value of every ID, built by applying batches. It
// checks that each batch respects dependency order and never removes what it does not have.
type dpModel struct {
	Config   *ConfigUpdate
	IPSets   map[string]map[IPSetMember]bool
	SetTypes map[string]IPSetType
	Policies map[PolicyID]*Policy
	Profiles map[string]*Profile
	WEPs     map[WorkloadEndpointID]*WorkloadEndpoint
	HEPs     map[string]*HostEndpoint
	Pools    map[string]*IPPool
	Hosts    map[string]*HostMetadata
	Routes   map[netip.Prefix]*Route
	VTEPs    map[string]*VTEP
	Services []string
	InSync   bool
}

func newModel() *dpModel {
	return &dpModel{IPSets: map[string]map[IPSetMember]bool{}, SetTypes: map[string]IPSetType{},
		Policies: map[PolicyID]*Policy{}, Profiles: map[string]*Profile{}, WEPs: map[WorkloadEndpointID]*WorkloadEndpoint{},
		HEPs: map[string]*HostEndpoint{}, Pools: map[string]*IPPool{}, Hosts: map[string]*HostMetadata{},
		Routes: map[netip.Prefix]*Route{}, VTEPs: map[string]*VTEP{}}
}

// flushInto flushes the graph into the model and returns the batch.
func flushInto(t *testing.T, g *Graph, m *dpModel) []Update {
	t.Helper()
	batch := g.Flush()
	if err := m.apply(batch); err != nil {
		t.Fatalf("bad batch: %v\n%s", err, dumpBatch(batch))
	}
	return batch
}

func dumpBatch(batch []Update) string {
	s := ""
	for _, u := range batch {
		s += fmt.Sprintf("  %T %+v\n", u, u)
	}
	return s
}

func (m *dpModel) apply(batch []Update) error {
	for i, u := range batch {
		if err := m.applyOne(u); err != nil {
			return fmt.Errorf("update %d (%T): %w", i, u, err)
		}
	}
	return nil
}

func (m *dpModel) applyOne(u Update) error {
	switch u := u.(type) {
	case ConfigUpdate:
		m.Config = &u
	case IPSetUpdate, IPSetDelta, IPSetRemove:
		return m.applySet(u)
	case ActivePolicyUpdate:
		if err := m.setsExist(u.Policy.InboundRules, u.Policy.OutboundRules); err != nil {
			return err
		}
		m.Policies[u.ID] = u.Policy
	case ActivePolicyRemove:
		return m.removePolicy(u.ID)
	case ActiveProfileUpdate:
		if err := m.setsExist(u.Profile.InboundRules, u.Profile.OutboundRules); err != nil {
			return err
		}
		m.Profiles[u.Name] = u.Profile
	case ActiveProfileRemove:
		return m.removeProfile(u.Name)
	case WorkloadEndpointUpdate:
		if err := m.refsExist(u.Endpoint.ProfileIDs, u.Endpoint.Tiers); err != nil {
			return err
		}
		m.WEPs[u.ID] = u.Endpoint
	case HostEndpointUpdate:
		e := u.Endpoint
		for _, tl := range [][]TierInfo{e.Tiers, e.UntrackedTiers, e.PreDNATTiers, e.ForwardTiers} {
			if err := m.refsExist(e.ProfileIDs, tl); err != nil {
				return err
			}
		}
		m.HEPs[e.Name] = e
	default:
		return m.applyNet(u)
	}
	return nil
}

func (m *dpModel) applySet(u Update) error {
	switch u := u.(type) {
	case IPSetUpdate:
		s := map[IPSetMember]bool{}
		for _, mem := range u.Members {
			s[mem] = true
		}
		m.IPSets[u.ID], m.SetTypes[u.ID] = s, u.Type
	case IPSetDelta:
		s := m.IPSets[u.ID]
		if s == nil {
			return fmt.Errorf("delta for unknown set %s", u.ID)
		}
		for _, mem := range u.Removed {
			if !s[mem] {
				return fmt.Errorf("set %s: removing absent member %v", u.ID, mem)
			}
			delete(s, mem)
		}
		for _, mem := range u.Added {
			if s[mem] {
				return fmt.Errorf("set %s: adding present member %v", u.ID, mem)
			}
			s[mem] = true
		}
	case IPSetRemove:
		if m.IPSets[u.ID] == nil {
			return fmt.Errorf("removing unknown set %s", u.ID)
		}
		if m.setInUse(u.ID) {
			return fmt.Errorf("removing set %s still in use", u.ID)
		}
		delete(m.IPSets, u.ID)
		delete(m.SetTypes, u.ID)
	}
	return nil
}

func (m *dpModel) applyNet(u Update) error {
	switch u := u.(type) {
	case IPPoolUpdate:
		m.Pools[u.Pool.Name] = u.Pool
	case IPPoolRemove:
		return removeKnown(m.Pools, u.Name)
	case HostMetadataUpdate:
		m.Hosts[u.Host.Hostname] = u.Host
	case HostMetadataRemove:
		return removeKnown(m.Hosts, u.Hostname)
	case RouteUpdate:
		m.Routes[u.Route.Dst] = u.Route
	case RouteRemove:
		return removeKnown(m.Routes, u.Dst)
	case VTEPUpdate:
		m.VTEPs[vtepKey(u.VTEP.Node, u.VTEP.TunnelAddr.Is6())] = u.VTEP
	case VTEPRemove:
		return removeKnown(m.VTEPs, vtepKey(u.Node, u.IPv6))
	case WorkloadEndpointRemove:
		return removeKnown(m.WEPs, u.ID)
	case HostEndpointRemove:
		return removeKnown(m.HEPs, u.Name)
	case ServiceCIDRsUpdate:
		m.Services = u.CIDRs
	case InSync:
		if m.InSync {
			return fmt.Errorf("second InSync")
		}
		m.InSync = true
	default:
		return fmt.Errorf("unknown update type %T", u)
	}
	return nil
}

func vtepKey(node string, v6 bool) string { return fmt.Sprintf("%s/%v", node, v6) }

func removeKnown[K comparable, V any](m map[K]V, k K) error {
	if _, ok := m[k]; !ok {
		return fmt.Errorf("removing unknown %v", k)
	}
	delete(m, k)
	return nil
}

func ruleSetIDs(r *Rule) []string {
	var ids []string
	for _, l := range [][]string{r.SrcIPSetIDs, r.NotSrcIPSetIDs, r.DstIPSetIDs, r.NotDstIPSetIDs,
		r.SrcNamedPortIPSetIDs, r.NotSrcNamedPortIPSetIDs, r.DstNamedPortIPSetIDs, r.NotDstNamedPortIPSetIDs} {
		ids = append(ids, l...)
	}
	return ids
}

func (m *dpModel) setsExist(lists ...[]Rule) error {
	for _, rules := range lists {
		for i := range rules {
			for _, id := range ruleSetIDs(&rules[i]) {
				if m.IPSets[id] == nil {
					return fmt.Errorf("rule uses unknown set %s", id)
				}
			}
		}
	}
	return nil
}

func (m *dpModel) setInUse(id string) bool {
	uses := func(rules []Rule) bool {
		for i := range rules {
			for _, s := range ruleSetIDs(&rules[i]) {
				if s == id {
					return true
				}
			}
		}
		return false
	}
	for _, p := range m.Policies {
		if uses(p.InboundRules) || uses(p.OutboundRules) {
			return true
		}
	}
	for _, p := range m.Profiles {
		if uses(p.InboundRules) || uses(p.OutboundRules) {
			return true
		}
	}
	return false
}

func (m *dpModel) refsExist(profiles []string, tiers []TierInfo) error {
	for _, p := range profiles {
		if m.Profiles[p] == nil {
			return fmt.Errorf("endpoint uses unknown profile %s", p)
		}
	}
	for _, t := range tiers {
		for _, id := range append(append([]PolicyID{}, t.IngressPolicies...), t.EgressPolicies...) {
			if m.Policies[id] == nil {
				return fmt.Errorf("endpoint uses unknown policy %v", id)
			}
		}
	}
	return nil
}

func (m *dpModel) policyInUse(id PolicyID) bool {
	check := func(tiers []TierInfo) bool {
		for _, t := range tiers {
			for _, p := range append(append([]PolicyID{}, t.IngressPolicies...), t.EgressPolicies...) {
				if p == id {
					return true
				}
			}
		}
		return false
	}
	for _, w := range m.WEPs {
		if check(w.Tiers) {
			return true
		}
	}
	for _, h := range m.HEPs {
		if check(h.Tiers) || check(h.UntrackedTiers) || check(h.PreDNATTiers) || check(h.ForwardTiers) {
			return true
		}
	}
	return false
}

func (m *dpModel) removePolicy(id PolicyID) error {
	if m.policyInUse(id) {
		return fmt.Errorf("removing policy %v still in use", id)
	}
	return removeKnown(m.Policies, id)
}

func (m *dpModel) removeProfile(name string) error {
	for _, w := range m.WEPs {
		for _, p := range w.ProfileIDs {
			if p == name {
				return fmt.Errorf("removing profile %s still in use", name)
			}
		}
	}
	for _, h := range m.HEPs {
		for _, p := range h.ProfileIDs {
			if p == name {
				return fmt.Errorf("removing profile %s still in use", name)
			}
		}
	}
	return removeKnown(m.Profiles, name)
}

// modelDiff compares two models (InSync aside).
func modelDiff(a, b *dpModel) string {
	return cmp.Diff(a, b, cmpopts.EquateEmpty(), cmpopts.IgnoreFields(dpModel{}, "InSync"),
		cmp.Comparer(func(x, y netip.Addr) bool { return x == y }),
		cmp.Comparer(func(x, y netip.Prefix) bool { return x == y }))
}

// members returns a set's members as strings, for assertions.
func (m *dpModel) members(id string) []string {
	var out []string
	for _, mem := range sortedMembers(m.IPSets[id]) {
		if mem.Port != 0 {
			out = append(out, fmt.Sprintf("%s,%d:%d", mem.Prefix.Addr(), mem.Protocol, mem.Port))
		} else {
			out = append(out, mem.Prefix.String())
		}
	}
	return out
}
