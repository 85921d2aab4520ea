package calc

import (
	"slices"

	"github.com/calico-host/calico-host/pkg/api"
)

// PoolType is how the routes to an IP pool's blocks are made, as Project Calico's route resolver
// classifies pools (l3_route_resolver.go poolTypeForPool): through VXLAN when vxlanMode is not
// Never, else through IPIP when ipipMode is not Never, else unencapsulated. A pool whose only
// allowed use is LoadBalancer has none: its addresses are not hosts' workloads.
type PoolType uint8

// Pool types.
const (
	PoolNone    PoolType = iota // no pool contains the destination, or a LoadBalancer-only pool
	PoolNoEncap                 // ipipMode and vxlanMode Never
	PoolIPIP                    // ipipMode Always or CrossSubnet, vxlanMode Never
	PoolVXLAN                   // vxlanMode Always or CrossSubnet
)

func (t PoolType) String() string {
	return [...]string{"none", "no-encap", "ipip", "vxlan"}[t]
}

// poolType classifies a pool from its (validated) modes and allowed uses.
func poolType(s *api.IPPoolSpec) PoolType {
	switch {
	case len(s.AllowedUses) == 1 && s.AllowedUses[0] == api.UseLoadBalancer:
		return PoolNone
	case isEncapMode(s.VXLANMode):
		return PoolVXLAN
	case isEncapMode(s.IPIPMode):
		return PoolIPIP
	}
	return PoolNoEncap
}

func isEncapMode(m string) bool { return m == api.EncapAlways || m == api.EncapCrossSubnet }

// ClusterRoutes is a set of the pool types whose cluster routes (the routes to other hosts'
// blocks and the blackholes of this host's) a component programs: programClusterRoutes of
// FelixConfiguration for felix, of BGPConfiguration for BIRD. It only ever holds IPIP and
// no-encap pools: VXLAN pools' routes are always felix's.
type ClusterRoutes uint8

// The pool types of a ClusterRoutes.
const (
	ClusterRoutesIPIP    ClusterRoutes = 1 << iota // pools of type PoolIPIP
	ClusterRoutesNoEncap                           // pools of type PoolNoEncap
)

// ClusterRouteValue is one value of programClusterRoutes and its meaning.
type ClusterRouteValue struct {
	Name  string
	Value ClusterRoutes
}

// ClusterRouteValues are the values of programClusterRoutes, FelixConfiguration's and
// BGPConfiguration's alike (each names what its own component programs), in Project Calico's
// order, with their meaning. Felix's configuration and the reading of BGPConfiguration both use
// this table.
var ClusterRouteValues = []ClusterRouteValue{
	{"Enabled", ClusterRoutesIPIP | ClusterRoutesNoEncap},
	{"Disabled", 0},
	{"EnabledIPIPOnly", ClusterRoutesIPIP},
	{"EnabledNoEncapOnly", ClusterRoutesNoEncap},
}

// Programs reports whether the component programs the cluster routes of pools of type t.
func (c ClusterRoutes) Programs(t PoolType) bool {
	switch t {
	case PoolVXLAN:
		return true
	case PoolIPIP:
		return c&ClusterRoutesIPIP != 0
	case PoolNoEncap:
		return c&ClusterRoutesNoEncap != 0
	}
	return false
}

func (c ClusterRoutes) String() string {
	if i := slices.IndexFunc(ClusterRouteValues, func(v ClusterRouteValue) bool { return v.Value == c }); i >= 0 {
		return ClusterRouteValues[i].Name
	}
	return "invalid"
}

// birdDefault is BGPConfiguration programClusterRoutes' default: BIRD programs unencapsulated
// pools' routes only.
const birdDefault = ClusterRoutesNoEncap

// birdClusterRoutes reads BGPConfiguration default's programClusterRoutes as calico-confd (and
// Project Calico's confd) reads it: spelled exactly as one of the values, else (absent or
// unknown) the default.
func birdClusterRoutes(v *string) ClusterRoutes {
	if v == nil {
		return birdDefault
	}
	for _, cr := range ClusterRouteValues {
		if cr.Name == *v {
			return cr.Value
		}
	}
	return birdDefault
}

// clusterRoutePools is the set of the pool types (IPIP, no-encap) of the pools.
func (c *poolCalc) clusterRoutePools() ClusterRoutes {
	var out ClusterRoutes
	for _, p := range c.pools {
		switch p.Type {
		case PoolIPIP:
			out |= ClusterRoutesIPIP
		case PoolNoEncap:
			out |= ClusterRoutesNoEncap
		}
	}
	return out
}

// Kinds names the pool types of c ("ipip", "no-encap"), for logs.
func (c ClusterRoutes) Kinds() []string {
	var out []string
	for _, t := range []PoolType{PoolIPIP, PoolNoEncap} {
		if c.Programs(t) {
			out = append(out, t.String())
		}
	}
	return out
}
