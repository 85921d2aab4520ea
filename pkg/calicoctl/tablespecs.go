package calicoctl

import (
	"fmt"
	"strconv"

	"github.com/calico-host/calico-host/pkg/api"
)

// tableSpecs are Project Calico's ps-style tables per kind (NAME and NAMESPACE are added by
// tableSpecFor).
var tableSpecs = map[string]tableSpec{
	"IPPool": {
		normal: []string{"NAME", "CIDR", "SELECTOR"},
		wide:   []string{"NAME", "CIDR", "NAT", "IPIPMODE", "VXLANMODE", "DISABLED", "DISABLEBGPEXPORT", "SELECTOR", "ASSIGNMENTMODE"},
		cols: map[string]column{
			"CIDR":             pool(func(s *api.IPPoolSpec) string { return s.CIDR }),
			"NAT":              pool(func(s *api.IPPoolSpec) string { return boolStr(s.NATOutgoing) }),
			"IPIPMODE":         pool(func(s *api.IPPoolSpec) string { return orDefault(s.IPIPMode, api.EncapNever) }),
			"VXLANMODE":        pool(func(s *api.IPPoolSpec) string { return orDefault(s.VXLANMode, api.EncapNever) }),
			"DISABLED":         pool(func(s *api.IPPoolSpec) string { return boolStr(s.Disabled) }),
			"DISABLEBGPEXPORT": pool(func(s *api.IPPoolSpec) string { return boolStr(s.DisableBGPExport) }),
			"SELECTOR":         pool(func(s *api.IPPoolSpec) string { return s.NodeSelector }),
			"ASSIGNMENTMODE":   pool(func(s *api.IPPoolSpec) string { return orDefault(s.AssignmentMode, "<nil>") }),
		},
	},
	"IPReservation": {
		normal: []string{"NAME"},
		wide:   []string{"NAME", "CIDRS"},
		cols: map[string]column{
			"CIDRS": func(r api.Resource, _ *tableContext) string {
				return joinTruncate(r.(*api.IPReservation).Spec.ReservedCIDRs, 80)
			},
		},
	},
	"Node": {
		normal: []string{"NAME"},
		wide:   []string{"NAME", "ASN", "IPV4", "IPV6"},
		cols: map[string]column{
			"ASN": func(r api.Resource, t *tableContext) string {
				b := r.(*api.Node).Spec.BGP
				switch {
				case b == nil:
					return ""
				case b.ASNumber == nil:
					return "(" + t.globalASNumber() + ")"
				}
				return asn(b.ASNumber)
			},
			"IPV4": nodeBGP(func(b *api.NodeBGPSpec) string { return b.IPv4Address }),
			"IPV6": nodeBGP(func(b *api.NodeBGPSpec) string { return b.IPv6Address }),
		},
	},
	"ClusterInformation": {
		normal: []string{"NAME", "CLUSTERGUID", "CLUSTERTYPE", "CALICOVERSION", "DATASTOREREADY"},
		wide:   []string{"NAME", "CLUSTERGUID", "CLUSTERTYPE", "CALICOVERSION", "DATASTOREREADY"},
		cols: map[string]column{
			"CLUSTERGUID":    clusterInfo(func(s *api.ClusterInformationSpec) string { return s.ClusterGUID }),
			"CLUSTERTYPE":    clusterInfo(func(s *api.ClusterInformationSpec) string { return s.ClusterType }),
			"CALICOVERSION":  clusterInfo(func(s *api.ClusterInformationSpec) string { return s.CalicoVersion }),
			"DATASTOREREADY": clusterInfo(func(s *api.ClusterInformationSpec) string { return boolPtr(s.DatastoreReady) }),
		},
	},
	"BGPConfiguration": {
		normal: []string{"NAME", "LOGSEVERITY", "MESHENABLED", "ASNUMBER"},
		wide:   []string{"NAME", "LOGSEVERITY", "MESHENABLED", "ASNUMBER"},
		cols: map[string]column{
			"LOGSEVERITY": bgpConfig(func(s *api.BGPConfigurationSpec) string { return s.LogSeverityScreen }),
			"MESHENABLED": bgpConfig(func(s *api.BGPConfigurationSpec) string {
				if s.NodeToNodeMeshEnabled == nil {
					return "-"
				}
				return boolStr(*s.NodeToNodeMeshEnabled)
			}),
			"ASNUMBER": bgpConfig(func(s *api.BGPConfigurationSpec) string {
				if s.ASNumber == nil {
					return "-"
				}
				return asn(s.ASNumber)
			}),
		},
	},
	"BGPPeer": {
		normal: []string{"NAME", "PEERIP", "NODE", "ASN"},
		wide:   []string{"NAME", "PEERIP", "NODE", "ASN"},
		cols: map[string]column{
			"PEERIP": bgpPeer(func(s *api.BGPPeerSpec) string { return s.PeerIP }),
			"NODE": bgpPeer(func(s *api.BGPPeerSpec) string {
				switch {
				case s.Node != "":
					return s.Node
				case s.NodeSelector != "":
					return s.NodeSelector
				}
				return "(global)"
			}),
			"ASN": bgpPeer(func(s *api.BGPPeerSpec) string { return asn(s.ASNumber) }),
		},
	},
	"BGPFilter": {
		normal: []string{"NAME", "NUMEXPORTV4", "NUMIMPORTV4", "NUMEXPORTV6", "NUMIMPORTV6"},
		wide:   []string{"NAME", "NUMEXPORTV4", "NUMIMPORTV4", "NUMEXPORTV6", "NUMIMPORTV6"},
		cols: map[string]column{
			"NUMEXPORTV4": bgpFilter(func(s *api.BGPFilterSpec) int { return len(s.ExportV4) }),
			"NUMIMPORTV4": bgpFilter(func(s *api.BGPFilterSpec) int { return len(s.ImportV4) }),
			"NUMEXPORTV6": bgpFilter(func(s *api.BGPFilterSpec) int { return len(s.ExportV6) }),
			"NUMIMPORTV6": bgpFilter(func(s *api.BGPFilterSpec) int { return len(s.ImportV6) }),
		},
	},
	"Tier": {
		normal: []string{"NAME", "ORDER"},
		wide:   []string{"NAME", "ORDER"},
		cols: map[string]column{
			"ORDER": func(r api.Resource, _ *tableContext) string { return floatPtr(r.(*api.Tier).Spec.Order) },
		},
	},
	"GlobalNetworkPolicy":       policyTable(),
	"NetworkPolicy":             policyTable(),
	"StagedGlobalNetworkPolicy": policyTable(),
	"StagedNetworkPolicy":       policyTable(),
	"StagedKubernetesNetworkPolicy": {
		normal: []string{"NAME"},
		wide:   []string{"NAME", "PODSELECTOR"},
		cols: map[string]column{
			"PODSELECTOR": func(r api.Resource, _ *tableContext) string {
				return r.(*api.StagedKubernetesNetworkPolicy).Spec.PodSelector.String()
			},
		},
	},
	"Profile": {
		normal: []string{"NAME"},
		wide:   []string{"NAME", "LABELS"},
		cols: map[string]column{
			"LABELS": func(r api.Resource, _ *tableContext) string { return joinMap(r.(*api.Profile).Spec.LabelsToApply) },
		},
	},
	"GlobalNetworkSet": netSetTable(),
	"NetworkSet":       netSetTable(),
	"HostEndpoint": {
		normal: []string{"NAME", "NODE"},
		wide:   []string{"NAME", "NODE", "INTERFACE", "IPS", "PROFILES"},
		cols: map[string]column{
			"NODE":      hep(func(s *api.HostEndpointSpec) string { return s.Node }),
			"INTERFACE": hep(func(s *api.HostEndpointSpec) string { return s.InterfaceName }),
			"IPS":       hep(func(s *api.HostEndpointSpec) string { return joinTruncate(s.ExpectedIPs, 0) }),
			"PROFILES":  hep(func(s *api.HostEndpointSpec) string { return joinTruncate(s.Profiles, 0) }),
		},
	},
	"WorkloadEndpoint": {
		normal: []string{"WORKLOAD", "NODE", "NETWORKS", "INTERFACE"},
		wide:   []string{"NAME", "WORKLOAD", "NODE", "NETWORKS", "INTERFACE", "PROFILES", "NATS"},
		cols: map[string]column{
			"WORKLOAD":     wep(func(s *api.WorkloadEndpointSpec) string { return orDefault(s.Workload, s.Pod) }),
			"NODE":         wep(func(s *api.WorkloadEndpointSpec) string { return s.Node }),
			"ORCHESTRATOR": wep(func(s *api.WorkloadEndpointSpec) string { return s.Orchestrator }),
			"NETWORKS":     wep(func(s *api.WorkloadEndpointSpec) string { return joinTruncate(s.IPNetworks, 0) }),
			"INTERFACE":    wep(func(s *api.WorkloadEndpointSpec) string { return s.InterfaceName }),
			"PROFILES":     wep(func(s *api.WorkloadEndpointSpec) string { return joinTruncate(s.Profiles, 0) }),
			"NATS": wep(func(s *api.WorkloadEndpointSpec) string {
				nats := make([]string, len(s.IPNATs))
				for i, n := range s.IPNATs {
					nats[i] = fmt.Sprintf("{%s %s}", n.InternalIP, n.ExternalIP)
				}
				return joinTruncate(nats, 0)
			}),
		},
	},
	"IPAMConfiguration": {
		normal: []string{"NAME", "STRICTAFFINITY", "AUTOALLOCATEBLOCKS"},
		wide:   []string{"NAME", "STRICTAFFINITY", "AUTOALLOCATEBLOCKS", "MAXBLOCKSPERHOST"},
		cols: map[string]column{
			"STRICTAFFINITY":     ipamConfig(func(s *api.IPAMConfigurationSpec) string { return boolStr(s.StrictAffinity) }),
			"AUTOALLOCATEBLOCKS": ipamConfig(func(s *api.IPAMConfigurationSpec) string { return boolStr(s.AutoAllocateBlocks) }),
			"MAXBLOCKSPERHOST":   ipamConfig(func(s *api.IPAMConfigurationSpec) string { return strconv.Itoa(s.MaxBlocksPerHost) }),
		},
	},
}

func policyTable() tableSpec {
	return tableSpec{
		normal: []string{"NAME", "TIER"},
		wide:   []string{"NAME", "TIER", "ORDER", "SELECTOR"},
		cols: map[string]column{
			"TIER":     policyCol(func(v api.PolicySpecView) string { return v.Tier }),
			"ORDER":    policyCol(func(v api.PolicySpecView) string { return floatPtr(v.Order) }),
			"SELECTOR": policyCol(func(v api.PolicySpecView) string { return v.Selector }),
		},
	}
}

func netSetTable() tableSpec {
	return tableSpec{
		normal: []string{"NAME"},
		wide:   []string{"NAME", "NETS"},
		cols: map[string]column{
			"NETS": func(r api.Resource, _ *tableContext) string {
				switch s := r.(type) {
				case *api.GlobalNetworkSet:
					return joinTruncate(s.Spec.Nets, 80)
				case *api.NetworkSet:
					return joinTruncate(s.Spec.Nets, 80)
				}
				return ""
			},
		},
	}
}

// Typed accessors turning a spec function into a column.

func pool(f func(*api.IPPoolSpec) string) column {
	return func(r api.Resource, _ *tableContext) string { return f(&r.(*api.IPPool).Spec) }
}

func nodeBGP(f func(*api.NodeBGPSpec) string) column {
	return func(r api.Resource, _ *tableContext) string {
		if b := r.(*api.Node).Spec.BGP; b != nil {
			return f(b)
		}
		return ""
	}
}

func clusterInfo(f func(*api.ClusterInformationSpec) string) column {
	return func(r api.Resource, _ *tableContext) string { return f(&r.(*api.ClusterInformation).Spec) }
}

func bgpConfig(f func(*api.BGPConfigurationSpec) string) column {
	return func(r api.Resource, _ *tableContext) string { return f(&r.(*api.BGPConfiguration).Spec) }
}

func bgpPeer(f func(*api.BGPPeerSpec) string) column {
	return func(r api.Resource, _ *tableContext) string { return f(&r.(*api.BGPPeer).Spec) }
}

func bgpFilter(f func(*api.BGPFilterSpec) int) column {
	return func(r api.Resource, _ *tableContext) string { return strconv.Itoa(f(&r.(*api.BGPFilter).Spec)) }
}

func hep(f func(*api.HostEndpointSpec) string) column {
	return func(r api.Resource, _ *tableContext) string { return f(&r.(*api.HostEndpoint).Spec) }
}

func wep(f func(*api.WorkloadEndpointSpec) string) column {
	return func(r api.Resource, _ *tableContext) string { return f(&r.(*api.WorkloadEndpoint).Spec) }
}

func ipamConfig(f func(*api.IPAMConfigurationSpec) string) column {
	return func(r api.Resource, _ *tableContext) string { return f(&r.(*api.IPAMConfiguration).Spec) }
}

func policyCol(f func(api.PolicySpecView) string) column {
	return func(r api.Resource, _ *tableContext) string {
		if p, ok := r.(interface{ View() api.PolicySpecView }); ok {
			return f(p.View())
		}
		return ""
	}
}
