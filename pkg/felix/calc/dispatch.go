package calc

import (
	"cmp"
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// as type-asserts a decoded value: (nil, nil) for a deletion, an error for a value of the wrong
// type (which the caller treats as a deletion).
func as[T any](v any) (*T, error) {
	if v == nil {
		return nil, nil
	}
	t, ok := v.(*T)
	if !ok {
		var zero T
		return nil, fmt.Errorf("value is a %T, expected *%T", v, zero)
	}
	return t, nil
}

// applyResource routes a v3 resource to the calculators that use it. On error the object has
// been treated as absent.
func (g *Graph) applyResource(k datastore.ResourceID, v any) error {
	switch k.Kind.Plural {
	case "workloadendpoints":
		return g.onWorkloadEndpoint(k, v)
	case "hostendpoints":
		return g.onHostEndpoint(k, v)
	case "livemigrations":
		return g.onLiveMigration(k, v)
	case "globalnetworksets", "networksets":
		return g.onNetworkSet(k, v)
	case "globalnetworkpolicies", "networkpolicies":
		return g.onPolicy(k, v)
	case "stagedglobalnetworkpolicies", "stagednetworkpolicies", "stagedkubernetesnetworkpolicies":
		if !g.stagedAsEnforced {
			return nil // never enforced: felix keeps them for flow logs' pending verdicts only
		}
		return g.onPolicy(k, v)
	case "tiers":
		return g.onTier(k, v)
	case "profiles":
		return g.onProfile(k, v)
	case "nodes":
		return g.onNode(k, v)
	case "ippools":
		return g.onPool(k, v)
	case "felixconfigurations":
		return g.onFelixConfig(k, v)
	case "bgpconfigurations":
		return g.onBGPConfig(k, v)
	case "bgppeers":
		p, err := as[api.BGPPeer](v)
		g.peers.setPeer(k.Name, p)
		return err
	case "clusterinformations":
		ci, err := as[api.ClusterInformation](v)
		if ci == nil {
			g.config.setCluster(k.Name, nil)
			return err
		}
		g.config.setCluster(k.Name, &ci.Spec)
	}
	return nil
}

func (g *Graph) onWorkloadEndpoint(k datastore.ResourceID, v any) error {
	id := workloadItemPrefix + k.Namespace + "/" + k.Name
	w, err := as[api.WorkloadEndpoint](v)
	var it *item
	var ep *localEndpoint
	if w != nil {
		it, ep, err = workloadItem(g.host, k.Namespace, k.Name, w)
	}
	g.setEndpoint(id, it, ep)
	var node string
	var nets []netip.Prefix
	if w != nil && err == nil {
		node, nets = w.Spec.Node, it.nets
	}
	g.routes.updateWorkload(k.Namespace, k.Name, node, nets)
	return err
}

// onLiveMigration records a LiveMigration and re-resolves the local workload endpoints it
// named before or names now.
func (g *Graph) onLiveMigration(k datastore.ResourceID, v any) error {
	lm, err := as[api.LiveMigration](v)
	owners := g.migration.update(k.Key(), lm)
	for id, ep := range g.endpoints.local {
		if ep.wep == nil {
			continue
		}
		for _, o := range owners {
			if o.names(g.host, ep.wepID) {
				g.endpoints.markDirty(id)
				break
			}
		}
	}
	return err
}

// onHostEndpoint records a host endpoint. One that failed validation is kept without its
// profiles (see hostItem); its problems are logged with the key, once per change of the key.
func (g *Graph) onHostEndpoint(k datastore.ResourceID, v any) error {
	id := hostItemPrefix + k.Name
	inv, _ := v.(*syncer.Invalid)
	v, invalid := unwrapInvalid(v)
	h, err := as[api.HostEndpoint](v)
	if prev := g.endpoints.local[id]; h != nil && inv != nil && prev != nil && prev.hep != nil {
		h = keepHostPlacement(h, prev.hep, g.host, inv)
	}
	var it *item
	var ep *localEndpoint
	var skipped []error
	if h != nil {
		it, ep, skipped = hostItem(g.host, k.Name, h, invalid != nil)
	}
	g.setEndpoint(id, it, ep)
	if invalid == nil {
		return cmp.Or(err, errors.Join(skipped...))
	}
	for _, e := range skipped {
		g.log.Warn().Err(e).Str("key", k.Key()).Msg("Skipping a host endpoint field that cannot be used")
	}
	if it == nil {
		return invalid
	}
	g.log.Error().Err(invalid).Str("key", k.Key()).Bool("local", ep != nil).
		Msg("Host endpoint failed validation; its profiles do not apply: traffic its policies do not allow is dropped (fail closed)")
	return nil
}

// keepHostPlacement is h, an invalid host endpoint of this host as last seen (prev), with what
// says which interface it protects (node, interfaceName, expectedIPs) taken from prev where it
// did not decode: left out, the interface would be unprotected.
func keepHostPlacement(h *api.HostEndpoint, prev *HostEndpoint, host string, inv *syncer.Invalid) *api.HostEndpoint {
	c := *h
	if inv.Undecoded("spec.node") {
		c.Spec.Node = host
	}
	if inv.Undecoded("spec.interfaceName") {
		c.Spec.InterfaceName = prev.InterfaceName
	}
	if inv.Undecoded("spec.expectedIPs") {
		c.Spec.ExpectedIPs = nil
		for _, a := range slices.Concat(prev.ExpectedIPv4Addrs, prev.ExpectedIPv6Addrs) {
			c.Spec.ExpectedIPs = append(c.Spec.ExpectedIPs, a.String())
		}
	}
	return &c
}

// setEndpoint registers an endpoint's item (nil: gone) and its local part (nil: not local).
func (g *Graph) setEndpoint(id string, it *item, ep *localEndpoint) {
	if it == nil {
		g.items.remove(id)
	} else {
		g.items.update(id, it)
	}
	if ep != nil || g.endpoints.local[id] != nil {
		g.endpoints.set(id, ep)
	}
}

// onNetworkSet records a network set. One that failed validation keeps its labels and the
// entries of nets that parse (as in Project Calico): treated as absent, a deny rule selecting it
// would match nothing. Each skipped entry is logged with the key, once per change of the key.
func (g *Graph) onNetworkSet(k datastore.ResourceID, v any) error {
	v, invalid := unwrapInvalid(v)
	var it *item
	var skipped []error
	var err error
	id := netSetItemPrefix + k.Name
	if k.Kind.Plural == "networksets" {
		id = nsNetSetItemPrefix + k.Namespace + "/" + k.Name
		var ns *api.NetworkSet
		if ns, err = as[api.NetworkSet](v); ns != nil {
			it, skipped = netSetItem(k.Namespace, k.Name, ns.Labels, &ns.Spec)
		}
	} else {
		var gns *api.GlobalNetworkSet
		if gns, err = as[api.GlobalNetworkSet](v); gns != nil {
			it, skipped = netSetItem("", k.Name, gns.Labels, &gns.Spec)
		}
	}
	if it == nil {
		g.items.remove(id)
		return err
	}
	if invalid != nil {
		g.log.Warn().Err(invalid).Str("key", k.Key()).Int("nets", len(it.nets)).
			Msg("Network set failed validation; keeping its labels and the entries that parse")
	}
	for _, e := range skipped {
		g.log.Warn().Err(e).Str("key", k.Key()).Msg("Skipping a network set entry that does not parse")
	}
	g.items.update(id, it)
	return nil
}

// policyKinds are calc's kinds of policy (PolicyID.Kind) by plural, and whether they are
// namespaced.
var policyKinds = map[string]struct {
	kind       string
	namespaced bool
}{
	"globalnetworkpolicies":           {"gnp", false},
	"networkpolicies":                 {"np", true},
	"stagedglobalnetworkpolicies":     {"sgnp", false},
	"stagednetworkpolicies":           {"snp", true},
	"stagedkubernetesnetworkpolicies": {"sknp", true},
}

func (g *Graph) onPolicy(k datastore.ResourceID, v any) error {
	pk := policyKinds[k.Kind.Plural]
	kind, key := pk.kind, pk.kind+"/"+k.Name
	if pk.namespaced {
		key = kind + "/" + k.Namespace + "/" + k.Name
	}
	scopeUndecoded := undecoded(v, "spec.selector", "spec.namespaceSelector", "spec.serviceAccountSelector")
	undecodedIn := v
	v, invalid := unwrapInvalid(v)
	view, ok, err := policyView(v)
	if !ok {
		g.policies.remove(key)
		return err
	}
	if pk.namespaced {
		view.Namespace = k.Namespace
	}
	if pk.namespaced && view.Namespace == "" {
		g.policies.remove(key)
		return fmt.Errorf("network policy without namespace")
	}
	if inv, _ := undecodedIn.(*syncer.Invalid); inv != nil && g.policies.policies[key] != nil {
		view = keepPlacement(view, g.policies.policies[key].view, inv)
	}
	p, err := newPolicyInfo(kind, k.Name, view)
	switch {
	case err != nil && invalid == nil:
		g.policies.remove(key)
		return err
	case err != nil || scopeUndecoded:
		return g.onUnscopedPolicy(k, kind, key, view, invalid)
	case invalid != nil:
		g.log.Error().Err(invalid).Str("key", k.Key()).Str("policy", key).
			Msg("Policy failed validation; the endpoints it selects drop the traffic it would decide (fail closed)")
	}
	if invalid != nil {
		p.failClosed(invalid)
	}
	g.policies.update(p)
	return nil
}

// keepPlacement is view with the fields that say where a policy applies (tier, order, types,
// doNotTrack, preDNAT, applyOnForward, selectors) taken from prev, its last enforced version,
// where they did not decode: left zero, they would move its drop after verdicts it came before,
// or off the traffic it applied to.
func keepPlacement(view, prev api.PolicySpecView, inv *syncer.Invalid) api.PolicySpecView {
	keep := func(path string, keepIt func()) {
		if inv.Undecoded("spec." + path) {
			keepIt()
		}
	}
	keep("tier", func() { view.Tier = prev.Tier })
	keep("order", func() { view.Order = prev.Order })
	keep("types", func() { view.Types = prev.Types })
	keep("doNotTrack", func() { view.DoNotTrack = prev.DoNotTrack })
	keep("preDNAT", func() { view.PreDNAT = prev.PreDNAT })
	keep("applyOnForward", func() { view.ApplyOnForward = prev.ApplyOnForward })
	keep("selector", func() { view.Selector = prev.Selector })
	keep("namespaceSelector", func() { view.NamespaceSel = prev.NamespaceSel })
	keep("serviceAccountSelector", func() { view.ServiceAcctSel = prev.ServiceAcctSel })
	return view
}

// policyView returns the common view of a policy value; ok is false for a deletion (nil), a
// staged policy whose stagedAction is Delete (Project Calico's syncer never sends those to felix),
// a staged Kubernetes policy Project Calico's converter fails on (err; its syncer sends nothing
// either) and a value of another type (err).
func policyView(v any) (view api.PolicySpecView, ok bool, err error) {
	switch p := v.(type) {
	case *api.GlobalNetworkPolicy:
		return p.View(), true, nil
	case *api.NetworkPolicy:
		return p.View(), true, nil
	case *api.StagedGlobalNetworkPolicy:
		return p.View(), p.Spec.StagedAction != api.StagedActionDelete, nil
	case *api.StagedNetworkPolicy:
		return p.View(), p.Spec.StagedAction != api.StagedActionDelete, nil
	case *api.StagedKubernetesNetworkPolicy:
		if p.Spec.StagedAction == api.StagedActionDelete {
			return view, false, nil
		}
		view, err := p.View()
		return view, err == nil, err
	case nil:
		return view, false, nil
	}
	return view, false, fmt.Errorf("value is a %T, expected a policy", v)
}

// onUnscopedPolicy handles a policy that failed validation and whose selectors do not parse
// (or did not decode) either, so the endpoints it means cannot be known. If an earlier version of it was enforced,
// it keeps that version's scope as a drop (its verdicts there are never widened). A policy never
// enforced selects nothing, as in Project Calico (absent): one bad object must not block the
// traffic of every endpoint of the host.
func (g *Graph) onUnscopedPolicy(k datastore.ResourceID, kind, key string, view api.PolicySpecView, invalid error) error {
	prev := g.policies.policies[key]
	if prev == nil {
		g.log.Error().Err(invalid).Str("key", k.Key()).Str("policy", key).
			Msg("Policy failed validation and its selector does not parse; it was never enforced, so it selects no endpoint")
		return nil
	}
	view.Selector, view.NamespaceSel, view.ServiceAcctSel = prev.view.Selector, prev.view.NamespaceSel, prev.view.ServiceAcctSel
	p, err := newPolicyInfo(kind, k.Name, view)
	if err != nil { // its tier or namespace is not usable either: its last placement stands
		kept := *prev
		p = &kept
	}
	g.log.Error().Err(invalid).Str("key", k.Key()).Str("policy", key).
		Msg("Policy failed validation and its selector does not parse; the endpoints its last enforced version selected drop the traffic it would decide (fail closed)")
	p.failClosed(invalid)
	g.policies.update(p)
	return nil
}

// onProfile records a profile. One that failed validation is kept as drop-all (its labels
// still apply): treated as absent, the endpoints naming it would fall through to their next
// profile.
func (g *Graph) onProfile(k datastore.ResourceID, v any) error {
	v, invalid := unwrapInvalid(v)
	p, err := as[api.Profile](v)
	if p == nil {
		g.profiles.update(k.Name, nil, nil)
		return err
	}
	if invalid != nil {
		g.log.Error().Err(invalid).Str("key", k.Key()).Str("profile", k.Name).
			Msg("Profile failed validation; the endpoints that name it drop all traffic it would decide (fail closed)")
	}
	g.profiles.update(k.Name, &p.Spec, invalid)
	return nil
}

// unwrapInvalid returns the resource inside a *syncer.Invalid and why it is invalid, or v and
// nil.
func unwrapInvalid(v any) (any, error) {
	if inv, ok := v.(*syncer.Invalid); ok {
		return inv.Value, inv.Err
	}
	return v, nil
}

// undecoded reports whether v is a *syncer.Invalid one of whose values at paths did not decode.
func undecoded(v any, paths ...string) bool {
	inv, _ := v.(*syncer.Invalid)
	return inv.Undecoded(paths...)
}

// onTier records a tier. One that failed validation keeps its order with default action Deny:
// treated as absent, its policies (and their deny rules) would be inactive. When its order did
// not decode, it keeps the order of its last version (none: it is last, as a tier without order).
func (g *Graph) onTier(k datastore.ResourceID, v any) error {
	orderUndecoded := undecoded(v, "spec.order")
	v, invalid := unwrapInvalid(v)
	t, err := as[api.Tier](v)
	if t == nil {
		g.policies.updateTier(k.Name, nil)
		return err
	}
	ti := tierFromAPI(t)
	if prev := g.policies.tier(k.Name); orderUndecoded && !prev.missing {
		ti.order = prev.order
	}
	if invalid != nil {
		ti.defaultAction = api.ActionDeny
		g.log.Error().Err(invalid).Str("key", k.Key()).
			Msg("Tier failed validation; its policies apply at its order, and what they do not decide is dropped (fail closed)")
	}
	g.policies.updateTier(k.Name, &ti)
	return nil
}

// onNode records a Node. One that failed validation is used as far as it parses (as Project
// Calico's felix, which takes a Node's fields one by one): treated as absent, this host's Node
// would stop selecting its selector-scoped FelixConfiguration.
func (g *Graph) onNode(k datastore.ResourceID, v any) error {
	v, invalid := unwrapInvalid(v)
	if invalid != nil {
		g.log.Warn().Err(invalid).Str("key", k.Key()).Msg("Node failed validation; using the fields that parse")
	}
	n, err := as[api.Node](v)
	var ni *nodeInfo
	if n != nil {
		ni = newNodeInfo(k.Name, n)
	}
	g.nodes.update(k.Name, ni)
	g.routes.onNode(k.Name, ni)
	if k.Name == g.host {
		g.config.setNode(ni)
		var labels map[string]string
		if ni != nil {
			labels = ni.labels
		}
		g.peers.setNodeLabels(labels)
		g.updateRouteSource() // its labels choose the selector-scoped FelixConfiguration
	}
	return err
}

// onPool records an IP pool. One that failed validation but whose CIDR parses is used as
// written: treated as absent, traffic to it from natOutgoing pools would be masqueraded and
// routes to its blocks would lose their encapsulation.
func (g *Graph) onPool(k datastore.ResourceID, v any) error {
	v, invalid := unwrapInvalid(v)
	if invalid != nil {
		g.log.Warn().Err(invalid).Str("key", k.Key()).Msg("IP pool failed validation; using it as written where its CIDR parses")
	}
	p, err := as[api.IPPool](v)
	var pool *IPPool
	if p != nil {
		pool, err = newPool(k.Name, p)
	}
	g.pools.update(k.Name, pool)
	g.routes.markAll()
	return err
}

// onFelixConfig records a FelixConfiguration. One that failed validation comes without the
// fields that were invalid on their own (see syncer.FailClosedDecoder): the others apply.
func (g *Graph) onFelixConfig(k datastore.ResourceID, v any) error {
	v, invalid := unwrapInvalid(v)
	if invalid != nil {
		g.log.Warn().Err(invalid).Str("key", k.Key()).
			Msg("FelixConfiguration failed validation; ignoring the fields that are invalid, using the others")
	}
	fc, err := as[api.FelixConfiguration](v)
	if fc == nil {
		_ = g.config.setFelixConfig(k.Name, nil)
		g.updateRouteSource()
		return err
	}
	err = g.config.setFelixConfig(k.Name, fc)
	g.updateRouteSource()
	return err
}

func (g *Graph) onBGPConfig(k datastore.ResourceID, v any) error {
	bc, err := as[api.BGPConfiguration](v)
	var spec *api.BGPConfigurationSpec
	if bc != nil {
		spec = &bc.Spec
	}
	g.config.setBGPConfig(k.Name, spec)
	g.peers.setBGPConfig(k.Name, spec)
	return err
}

// applyBlock handles an IPAM block key.
func (g *Graph) applyBlock(id datastore.BlockID, v any) error {
	b, err := as[api.AllocationBlock](v)
	if err != nil {
		g.routes.updateBlock(id.Key(), nil)
		return err
	}
	if b != nil && b.Deleted {
		b = nil
	}
	return g.routes.updateBlock(id.Key(), b)
}
