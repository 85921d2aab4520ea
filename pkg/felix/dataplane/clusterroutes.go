package dataplane

import (
	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/routes"
)

// noEncapRoutes routes other hosts' blocks (and tunnel and borrowed addresses) of unencapsulated
// pools when ProgramClusterRoutes gives them to felix (Enabled, EnabledNoEncapOnly), as Project
// Calico's no-encap route manager: via the owning host's address, onlink, on the interface
// holding this host's address of the family (none while there is none); IPv6 ones only with
// IPv6Support. Otherwise BIRD programs them, and felix leaves them alone.
func noEncapRoutes(cfg Config, m *model) []routes.Route {
	if !cfg.Routes.ClusterRoutes.Programs(calc.PoolNoEncap) {
		return nil
	}
	parents := [2]string{parentDevice(m, m.host.HostIPv4.Addr()), parentDevice(m, m.host.HostIPv6.Addr())}
	var out []routes.Route
	for _, r := range m.routes {
		if r.Type == calc.RouteLocalWorkload || r.PoolType != calc.PoolNoEncap || r.Dst.Addr().Is6() && !cfg.IPv6Support {
			continue
		}
		if rt, ok := sameSubnetRoute(r, parents[boolIndex(r.Dst.Addr().Is6())]); ok {
			out = append(out, rt)
		}
	}
	return out
}

// blackholeRoutes are the blackholes of this host's blocks (not single addresses: those are
// workloads' or borrowed) in the pools whose routes felix programs, as each of Project Calico's
// route managers installs them for its own pool type: VXLAN pools' while VXLAN is on for the
// family, IPIP pools' (IPv4) while IPIP is on and ProgramClusterRoutes gives them to felix,
// unencapsulated pools' when it does (IPv6 ones with IPv6Support). Traffic to an unused address
// of the block is dropped here instead of following the default route.
func blackholeRoutes(cfg Config, m *model) []routes.Route {
	var out []routes.Route
	for _, r := range m.routes {
		if r.Type == calc.RouteLocalWorkload && !r.Dst.IsSingleIP() && felixRoutesBlock(cfg, m, r) {
			out = append(out, routes.Route{Dst: r.Dst, Blackhole: true})
		}
	}
	return out
}

// felixRoutesBlock reports whether felix programs the routes of r's pool in r's family.
func felixRoutesBlock(cfg Config, m *model, r *calc.Route) bool {
	v6 := r.Dst.Addr().Is6()
	switch r.PoolType {
	case calc.PoolVXLAN:
		return (!v6 || cfg.IPv6Support) && vxlanWanted(cfg, m, versionOf(r.Dst.Addr()))
	case calc.PoolIPIP:
		return !v6 && cfg.Routes.ClusterRoutes.Programs(calc.PoolIPIP) && ipipWanted(cfg, m)
	case calc.PoolNoEncap:
		return (!v6 || cfg.IPv6Support) && cfg.Routes.ClusterRoutes.Programs(calc.PoolNoEncap)
	}
	return false
}
