package felix

import "github.com/calico-host/calico-host/pkg/felix/calc"

// clusterRoutesState is what felix last said about who programs the cluster routes of the pool
// types in use: those both felix and BIRD program, those neither does, and those felix leaves
// to BIRD.
type clusterRoutesState struct {
	both, neither, toBIRD calc.ClusterRoutes
}

// clusterRoutesOf compares felix's ProgramClusterRoutes with BIRD's (BGPConfiguration default's
// programClusterRoutes, as calico-confd reads it) for the pool types in use.
func clusterRoutesOf(felix calc.ClusterRoutes, f calc.Facts) clusterRoutesState {
	all := calc.ClusterRoutesIPIP | calc.ClusterRoutesNoEncap
	return clusterRoutesState{
		both:    felix & f.BIRDClusterRoutes & f.ClusterRoutePools,
		neither: all &^ (felix | f.BIRDClusterRoutes) & f.ClusterRoutePools,
		toBIRD:  all &^ felix & f.ClusterRoutePools,
	}
}

// checkClusterRoutes warns, once per change, when ProgramClusterRoutes and BGPConfiguration
// programClusterRoutes disagree for pools in use (both program a pool type: felix's routes
// replace BIRD's and BIRD's come back, as in Project Calico where they fight; neither does: no
// routes to the other hosts' blocks of those pools), and, as Project Calico's felix, when IPIP
// pools' routes are left to BIRD (deprecated there since v3.33).
func (d *Daemon) checkClusterRoutes(f calc.Facts) {
	st := clusterRoutesOf(d.cfg.ProgramClusterRoutes, f)
	if st == d.clusterRoutes {
		return
	}
	d.clusterRoutes = st
	warn := func(pools calc.ClusterRoutes, msg string) {
		d.log.Warn().Str("param", "ProgramClusterRoutes").Stringer("value", d.cfg.ProgramClusterRoutes).
			Stringer("bgp_value", f.BIRDClusterRoutes).Strs("pools", pools.Kinds()).Msg(msg)
	}
	if st.both != 0 {
		warn(st.both, "ProgramClusterRoutes: felix and BIRD (BGPConfiguration default programClusterRoutes) both "+
			"program these pools' cluster routes and fight over them; keep the two consistent")
	}
	if st.neither != 0 {
		warn(st.neither, "ProgramClusterRoutes: neither felix nor BIRD (BGPConfiguration default programClusterRoutes) "+
			"programs these pools' cluster routes: other hosts' workloads in them are unreachable")
	}
	if st.toBIRD&calc.ClusterRoutesIPIP != 0 {
		warn(calc.ClusterRoutesIPIP, "ProgramClusterRoutes leaves the IPIP pools' cluster routes to BIRD, which Project "+
			"Calico deprecated in v3.33; EnabledIPIPOnly (the default) lets felix program them")
	}
}
