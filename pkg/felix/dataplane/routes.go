package dataplane

import (
	"cmp"
	"net/netip"
	"slices"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/routes"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/vxlan"
	"github.com/calico-host/calico-host/pkg/ipip"
	"github.com/calico-host/calico-host/pkg/nft"
)

// desiredRoutes computes the routes this host programs: each local workload address (and
// floating IP) through its interface once the interface is up, and the remote blocks of VXLAN
// pools through the VXLAN device to the owning host's VTEP, those of IPIP pools (see
// ipipRoutes; through tunl0 only when ipipReady, skipped counts the others) and of
// unencapsulated pools (noEncapRoutes) when ProgramClusterRoutes gives them to felix, the
// blackholes of this host's blocks in those pools, and the extra routes (WireGuard's, in its own
// table). BIRD programs the cluster routes ProgramClusterRoutes leaves to it.
func desiredRoutes(cfg Config, m *model, mig *migrations, devs []vxlan.Device, ipipReady bool, extra []routes.Route) (_ []routes.Route, skipped int) {
	var out []routes.Route
	for id, ep := range m.weps {
		out = append(out, workloadRoutes(cfg, m, id, ep, mig.mode(id))...)
	}
	out = append(out, vxlanRoutes(cfg, m, devs)...)
	ipipOut, skipped := ipipRoutes(cfg, m, ipipReady)
	out = append(out, ipipOut...)
	out = append(out, noEncapRoutes(cfg, m)...)
	out = append(out, blackholeRoutes(cfg, m)...)
	setSource(cfg, out)
	out = append(out, extra...)
	slices.SortFunc(out, func(a, b routes.Route) int {
		return cmp.Or(cmp.Compare(a.Table, b.Table), a.Dst.Addr().Compare(b.Dst.Addr()), cmp.Compare(a.Dst.Bits(), b.Dst.Bits()), cmp.Compare(a.Dev, b.Dev))
	})
	return slices.CompactFunc(out, func(a, b routes.Route) bool { return a.Dst == b.Dst && a.Table == b.Table }), skipped
}

// routeOwnership is Project Calico's ownership policy of the main table for this configuration:
// the workload interfaces, RemoveExternalRoutes, DeviceRouteProtocol, the VXLAN devices (even
// while VXLAN is off, so that their routes are cleaned up), and BIRD's routes through tunl0 while
// ProgramClusterRoutes gives the IPIP pools' routes to felix.
func (c Config) routeOwnership() routes.Ownership {
	w := c.Wireguard
	o := routes.NewOwnership(c.Routes.DeviceProtocol, c.InterfacePrefixes, !c.Routes.KeepExternal,
		[]string{vxlan.DeviceV4, vxlan.DeviceV6}, w.RoutingTable, w.RoutingTableV6)
	if c.Routes.ClusterRoutes.Programs(calc.PoolIPIP) {
		o.BIRDDevices = []string{ipip.DeviceName}
	}
	return o
}

// workloadRoutes routes a local workload's addresses (and floating IPs) through its interface, as
// Project Calico's endpoint manager: DeviceRouteProtocol, metric NormalRoutePriority of the family,
// or ElevatedRoutePriority while a workload that migrated here converges; none while the target
// of a live migration has not announced itself yet (see migrations).
func workloadRoutes(cfg Config, m *model, id calc.WorkloadEndpointID, ep *calc.WorkloadEndpoint, mode routeMode) []routes.Route {
	if !m.ifaceUp(ep.Name) || mode == routesHeld {
		return nil
	}
	var out []routes.Route
	owner := "workload endpoint " + id.OrchestratorID + "/" + id.WorkloadID + "/" + id.EndpointID
	nets, nats := ep.IPv4Nets, ep.IPv4NAT
	if cfg.IPv6Support {
		nets, nats = slices.Concat(nets, ep.IPv6Nets), slices.Concat(nats, ep.IPv6NAT)
	}
	add := func(dst netip.Prefix) {
		metric := cfg.Routes.priority(dst.Addr().Is6(), mode == routesElevated)
		out = append(out, routes.Route{Dst: dst, Dev: ep.Name, Scope: routes.ScopeLink,
			Metric: metric, Protocol: cfg.Routes.DeviceProtocol, Owner: owner})
	}
	for _, n := range nets {
		add(n.Masked())
	}
	for _, n := range nats {
		add(hostPrefix(n.ExtIP))
	}
	return out
}

// priority is the metric of a route to a local workload.
func (r RouteConfig) priority(v6, elevated bool) int {
	switch {
	case elevated && v6:
		return r.ElevatedPriorityV6
	case elevated:
		return r.ElevatedPriority
	case v6:
		return r.NormalPriorityV6
	}
	return r.NormalPriority
}

// setSource gives every main-table route DeviceRouteSourceAddress(IPv6) as src, as Project
// Calico's main route tables do.
func setSource(cfg Config, rs []routes.Route) {
	for i := range rs {
		switch {
		case rs[i].Table != 0 || rs[i].Src.IsValid():
		case rs[i].Dst.Addr().Is4():
			rs[i].Src = cfg.Routes.SourceAddr
		default:
			rs[i].Src = cfg.Routes.SourceAddrV6
		}
	}
}

// vxlanRoutes routes remote blocks (and tunnel addresses) of VXLAN pools, in mode Always or
// CrossSubnet across subnets, through the device of their family; as Project Calico's felix,
// CrossSubnet routes within this host's subnet go unencapsulated via the other host's address
// on the interface holding this host's address of that family (none while there is none).
// Routes through the device carry DeviceRouteProtocol (Calico's route table default); the
// same-subnet ones our other protocol.
func vxlanRoutes(cfg Config, m *model, devs []vxlan.Device) []routes.Route {
	var out []routes.Route
	parents := [2]string{parentDevice(m, m.host.HostIPv4.Addr()), parentDevice(m, m.host.HostIPv6.Addr())}
	for _, r := range m.routes {
		if r.Type == calc.RouteLocalWorkload || r.PoolType != calc.PoolVXLAN {
			continue
		}
		fam := versionOf(r.Dst.Addr())
		if r.VXLANMode == "CrossSubnet" && r.SameSubnet {
			if rt, ok := sameSubnetRoute(r, parents[boolIndex(fam == nft.IPv6)]); ok {
				out = append(out, rt)
			}
			continue
		}
		i := slices.IndexFunc(devs, func(d vxlan.Device) bool { return versionOf(d.TunnelAddr) == fam })
		vtep := m.vteps[vtepKey{r.DstNode, fam == nft.IPv6}]
		if i < 0 || vtep == nil || !vtep.TunnelAddr.IsValid() {
			continue
		}
		out = append(out, routes.Route{Dst: r.Dst, Dev: devs[i].Name, Gateway: vtep.TunnelAddr, Onlink: true,
			Protocol: cfg.Routes.DeviceProtocol})
	}
	return out
}
