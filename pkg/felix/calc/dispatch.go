package calc

import (
	"fmt"
	"net/netip"

	"github.com/calico-host/calico-host/pkg/api"
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
func (g *Graph) applyResource(k resourceKey, v any) error {
	switch k.plural {
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
	case "tiers":
		return g.onTier(k, v)
	case "profiles":
		p, err := as[api.Profile](v)
		if p == nil {
			g.profiles.update(k.name, nil)
			return err
		}
		g.profiles.update(k.name, &p.Spec)
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
		g.peers.setPeer(k.name, p)
		return err
	case "clusterinformations":
		ci, err := as[api.ClusterInformation](v)
		if ci == nil {
			g.config.setCluster(k.name, nil)
			return err
		}
		g.config.setCluster(k.name, &ci.Spec)
	}
	return nil
}

func (g *Graph) onWorkloadEndpoint(k resourceKey, v any) error {
	id := workloadItemPrefix + k.namespace + "/" + k.name
	w, err := as[api.WorkloadEndpoint](v)
	var it *item
	var ep *localEndpoint
	if w != nil {
		it, ep, err = workloadItem(g.host, k.namespace, k.name, w)
	}
	g.setEndpoint(id, it, ep)
	var node string
	var nets []netip.Prefix
	if w != nil && err == nil {
		node, nets = w.Spec.Node, it.nets
	}
	g.routes.updateWorkload(k.namespace, k.name, node, nets)
	return err
}

// onLiveMigration records a LiveMigration and re-resolves the local workload endpoints it
// named before or names now.
func (g *Graph) onLiveMigration(k resourceKey, v any) error {
	lm, err := as[api.LiveMigration](v)
	owners := g.migration.update(k.String(), lm)
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

func (g *Graph) onHostEndpoint(k resourceKey, v any) error {
	id := hostItemPrefix + k.name
	h, err := as[api.HostEndpoint](v)
	var it *item
	var ep *localEndpoint
	if h != nil {
		it, ep, err = hostItem(g.host, k.name, h)
	}
	g.setEndpoint(id, it, ep)
	return err
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

func (g *Graph) onNetworkSet(k resourceKey, v any) error {
	var it *item
	var err error
	id := netSetItemPrefix + k.name
	if k.plural == "networksets" {
		id = nsNetSetItemPrefix + k.namespace + "/" + k.name
		var ns *api.NetworkSet
		if ns, err = as[api.NetworkSet](v); ns != nil {
			it, err = netSetItem(k.namespace, ns.Labels, &ns.Spec)
		}
	} else {
		var gns *api.GlobalNetworkSet
		if gns, err = as[api.GlobalNetworkSet](v); gns != nil {
			it, err = netSetItem("", gns.Labels, &gns.Spec)
		}
	}
	if it == nil {
		g.items.remove(id)
	} else {
		g.items.update(id, it)
	}
	return err
}

func (g *Graph) onPolicy(k resourceKey, v any) error {
	kind, key := "gnp", "gnp/"+k.name
	if k.plural == "networkpolicies" {
		kind, key = "np", "np/"+k.namespace+"/"+k.name
	}
	var view api.PolicySpecView
	var invalid error
	if inv, ok := v.(*syncer.Invalid); ok {
		v, invalid = inv.Value, inv.Err
	}
	switch p := v.(type) {
	case *api.GlobalNetworkPolicy:
		view = p.View()
	case *api.NetworkPolicy:
		view = p.View()
		view.Namespace = k.namespace
	case nil:
		g.policies.remove(key)
		return nil
	default:
		g.policies.remove(key)
		return fmt.Errorf("value is a %T, expected a policy", v)
	}
	if kind == "np" && view.Namespace == "" {
		g.policies.remove(key)
		return fmt.Errorf("network policy without namespace")
	}
	p, err := newPolicyInfo(kind, k.name, view)
	if err != nil {
		g.policies.remove(key)
		if invalid != nil {
			return fmt.Errorf("%w; its selector does not parse either (%w)", invalid, err)
		}
		return err
	}
	if invalid != nil {
		p.failClosed(invalid)
		g.log.Error().Err(invalid).Str("key", k.String()).Str("policy", key).
			Msg("Policy failed validation; the endpoints it selects drop the traffic it would decide (fail closed)")
	}
	g.policies.update(p)
	return nil
}

func (g *Graph) onTier(k resourceKey, v any) error {
	t, err := as[api.Tier](v)
	if t == nil {
		g.policies.updateTier(k.name, nil)
		return err
	}
	ti := tierFromAPI(t)
	g.policies.updateTier(k.name, &ti)
	return nil
}

func (g *Graph) onNode(k resourceKey, v any) error {
	n, err := as[api.Node](v)
	var ni *nodeInfo
	if n != nil {
		ni = newNodeInfo(k.name, n)
	}
	g.nodes.update(k.name, ni)
	g.routes.onNode(k.name, ni)
	if k.name == g.host {
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

func (g *Graph) onPool(k resourceKey, v any) error {
	p, err := as[api.IPPool](v)
	var pool *IPPool
	if p != nil {
		pool, err = newPool(k.name, p)
	}
	g.pools.update(k.name, pool)
	g.routes.markAll()
	return err
}

func (g *Graph) onFelixConfig(k resourceKey, v any) error {
	fc, err := as[api.FelixConfiguration](v)
	if fc == nil {
		_ = g.config.setFelixConfig(k.name, nil)
		g.updateRouteSource()
		return err
	}
	err = g.config.setFelixConfig(k.name, fc)
	g.updateRouteSource()
	return err
}

func (g *Graph) onBGPConfig(k resourceKey, v any) error {
	bc, err := as[api.BGPConfiguration](v)
	var spec *api.BGPConfigurationSpec
	if bc != nil {
		spec = &bc.Spec
	}
	g.config.setBGPConfig(k.name, spec)
	g.peers.setBGPConfig(k.name, spec)
	return err
}

// applyBlock handles an IPAM block key.
func (g *Graph) applyBlock(key string, v any) error {
	b, err := as[api.AllocationBlock](v)
	if err != nil {
		g.routes.updateBlock(key, nil)
		return err
	}
	if b != nil && b.Deleted {
		b = nil
	}
	return g.routes.updateBlock(key, b)
}
