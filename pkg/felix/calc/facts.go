package calc

import (
	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// Facts is what felix itself needs to know from calc, besides the dataplane's updates: whether
// the datastore is in sync and ready, the datastore's part of its configuration, whether IP
// pools use VXLAN, and how many local endpoints there are. It is a value; Loop publishes a new
// one whenever any of it changes, so felix never re-derives it from the update batches.
type Facts struct {
	// InSync: the initial snapshot arrived with the syncer in sync (InSync is, or will be, in
	// the dataplane's updates).
	InSync bool
	// SyncerStatus is the status of the syncer's last message.
	SyncerStatus syncer.Status
	Config       DatastoreConfig
	// PoolsUseVXLAN: an enabled IP pool has vxlanMode Always or CrossSubnet.
	PoolsUseVXLAN bool
	// ClusterRoutePools are the types of the IP pools whose cluster routes felix or BIRD may
	// program (IPIP, no-encap), and BIRDClusterRoutes those BIRD programs, as calico-confd reads
	// BGPConfiguration default's programClusterRoutes: felix compares them with its own
	// ProgramClusterRoutes.
	ClusterRoutePools, BIRDClusterRoutes ClusterRoutes
	// Workloads and HostEndpoints count the local endpoints calc has sent to the dataplane.
	Workloads, HostEndpoints int
}

// DatastoreConfig is the datastore's part of felix's configuration: the specs of FelixConfiguration
// `default` (Global), the matching selector-scoped one (Scoped) and `node.<host>` (Node) as decoded (nil when absent; shared, read only),
// ClusterInformation `default` and this host's VXLAN MAC.
type DatastoreConfig struct {
	Global, Node *api.FelixConfigurationSpec
	// Scoped is the spec of the selector-scoped FelixConfiguration (ScopedName) whose
	// nodeSelector matches this host's Node labels, the oldest of ScopedMatches matches (nil when
	// none matches); it ranks between Global and Node.
	Scoped        *api.FelixConfigurationSpec
	ScopedName    string
	ScopedMatches int
	// ClusterInfo: ClusterInformation `default` exists.
	ClusterInfo                             bool
	ClusterType, ClusterGUID, CalicoVersion string
	// DatastoreReady is false without ClusterInformation `default` and true when it exists
	// without the field.
	DatastoreReady bool
	// VXLANTunnelMAC is the Node's stored MAC, else the one Calico computes from the host name
	// ("" without a Node).
	VXLANTunnelMAC string
}

// Facts computes the graph's current facts.
func (g *Graph) Facts() Facts {
	return Facts{
		InSync:        g.inSyncPending || g.inSyncSent,
		SyncerStatus:  g.status,
		Config:        g.config.datastoreConfig(),
		PoolsUseVXLAN: g.pools.useVXLAN(),

		ClusterRoutePools: g.pools.clusterRoutePools(),
		BIRDClusterRoutes: g.config.birdRoutes,
		Workloads:         g.endpoints.workloads,
		HostEndpoints:     g.endpoints.hosts,
	}
}

// useVXLAN reports whether an enabled pool has vxlanMode Always or CrossSubnet.
func (c *poolCalc) useVXLAN() bool {
	for _, p := range c.pools {
		if !p.Disabled && (p.VXLANMode == api.EncapAlways || p.VXLANMode == api.EncapCrossSubnet) {
			return true
		}
	}
	return false
}
