package dataplane

import (
	"fmt"
	"slices"

	"github.com/calico-host/calico-host/pkg/felix/config"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/rules"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/wireguard"
	"github.com/calico-host/calico-host/pkg/nft"
)

// DefaultMTUFile is where the workload MTU is written for the CNI plugin, as Project Calico does.
const DefaultMTUFile = "/var/lib/calico/mtu"

// NewConfig is the dataplane's part of felix's resolved configuration: its values as the
// parameter table typed them, and the derived ones (VXLAN on when poolsUseVXLAN says an IP pool
// uses it and VXLANEnabled is not set, the OpenStack special cases, the VTEP MAC, WireGuard's
// tables), with felix's file and table names.
func NewConfig(c *config.Config, poolsUseVXLAN bool) Config {
	wgTable, wgTableV6 := c.WireguardTables()
	return Config{
		Hostname:                       c.FelixHostname,
		InterfacePrefixes:              slices.Clone(c.InterfacePrefix),
		InterfaceExclude:               slices.Clone(c.InterfaceExclude),
		IPv6Support:                    c.IPv6Support,
		DefaultEndpointToHostAction:    c.DefaultEndpointToHostAction,
		FailsafeInbound:                slices.Clone(c.FailsafeInboundHostPorts),
		FailsafeOutbound:               slices.Clone(c.FailsafeOutboundHostPorts),
		DisableConntrackInvalidCheck:   c.DisableConntrackInvalidCheck,
		AllowVXLANPacketsFromWorkloads: c.AllowVXLANPacketsFromWorkloads,
		AllowIPIPPacketsFromWorkloads:  c.AllowIPIPPacketsFromWorkloads,
		FilterDenyReject:               c.FilterDenyReject,
		LogPrefix:                      c.LogPrefix,
		MarkMask:                       c.NftablesMarkMask,
		NATOutgoingAddress:             c.NATOutgoingAddress,
		NATPortRange:                   c.NATPortRange,
		NATOutgoingExcludeHosts:        c.NATOutgoingExcludeHosts,
		ServiceLoopPrevention:          c.ServiceLoopPrevention,
		WorkloadSourceSpoofing:         c.WorkloadSourceSpoofing,
		FloatingIPs:                    c.FloatingIPs,
		OpenStack:                      c.OpenStack(),
		MetadataAddr:                   c.MetadataAddr,
		MetadataPort:                   uint16(c.MetadataPort),
		NftablesRefreshInterval:        c.NftablesRefreshInterval,
		RouteRefreshInterval:           c.RouteRefreshInterval,
		InterfaceRefreshInterval:       c.InterfaceRefreshInterval,
		VXLANEnabled:                   c.VXLANOn(poolsUseVXLAN),
		VXLANVNI:                       c.VXLANVNI,
		VXLANPort:                      c.VXLANPort,
		VXLANMTU:                       c.VXLANMTU,
		VXLANMTUV6:                     c.VXLANMTUV6,
		VXLANTunnelMAC:                 c.VXLANMAC(),
		IPForwardingDisabled:           c.IPForwardingDisabled,
		MTUIfacePattern:                c.MTUIfacePattern,
		RequireMTUFile:                 c.RequireMTUFile,
		IPIPEnabled:                    c.IPIPEnabled,
		IPIPMTU:                        c.IPIPMTU,
		IPIPTunnelAddr:                 c.IPIPTunnelAddr,
		MTUFile:                        DefaultMTUFile,
		TableName:                      DefaultTable,
		NetNS:                          c.DataplaneNetNS,
		Routes: RouteConfig{
			DeviceProtocol: c.DeviceRouteProtocol,
			SourceAddr:     c.DeviceRouteSourceAddress, SourceAddrV6: c.DeviceRouteSourceAddressIPv6,
			KeepExternal:   !c.RemoveExternalRoutes,
			SyncDisabled:   c.RouteSyncDisabled,
			NormalPriority: c.IPv4NormalRoutePriority, NormalPriorityV6: c.IPv6NormalRoutePriority,
			ElevatedPriority: c.IPv4ElevatedRoutePriority, ElevatedPriorityV6: c.IPv6ElevatedRoutePriority,
			ClusterRoutes: c.ProgramClusterRoutes,
		},
		LiveMigrationRouteConvergenceTime: c.LiveMigrationRouteConvergenceTime,
		Wireguard: WireguardConfig{
			Enabled: c.WireguardEnabled, EnabledV6: c.WireguardEnabledV6,
			InterfaceName: c.WireguardInterfaceName, InterfaceNameV6: c.WireguardInterfaceNameV6,
			ListeningPort: c.WireguardListeningPort, ListeningPortV6: c.WireguardListeningPortV6,
			MTU: c.WireguardMTU, MTUV6: c.WireguardMTUV6, RoutingRulePriority: c.WireguardRoutingRulePriority,
			PersistentKeepAlive: c.WireguardPersistentKeepAlive, ThreadingEnabled: c.WireguardThreadingEnabled,
			HostEncryption: c.WireguardHostEncryptionEnabled,
			RoutingTable:   wgTable, RoutingTableV6: wgTableV6,
			KeyFile: wireguard.DefaultKeyFile, KeyFileV6: wireguard.DefaultKeyFileV6,
		},
	}
}

// check refuses a configuration that was not built by NewConfig (or lacks what NewConfig sets):
// the dataplane never substitutes defaults of its own.
func (c Config) check() error {
	var missing []string
	for _, f := range []struct {
		name  string
		unset bool
	}{
		{"InterfacePrefixes", len(c.InterfacePrefixes) == 0},
		{"MTUIfacePattern", c.MTUIfacePattern == nil},
		{"NftablesRefreshInterval", c.NftablesRefreshInterval <= 0},
		{"RouteRefreshInterval", c.RouteRefreshInterval <= 0},
		{"InterfaceRefreshInterval", c.InterfaceRefreshInterval <= 0},
		{"VXLANVNI", c.VXLANVNI == 0},
		{"VXLANPort", c.VXLANPort == 0},
		{"DeviceRouteProtocol", c.Routes.DeviceProtocol == 0},
		{"MTUFile", c.MTUFile == ""},
		{"TableName", c.TableName == ""},
		{"Wireguard.KeyFile", c.Wireguard.KeyFile == "" || c.Wireguard.KeyFileV6 == ""},
	} {
		if f.unset {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%v not set (build the Config with NewConfig)", missing)
	}
	return nil
}

// rulesConfig is the configuration of the renderers.
func (c Config) rulesConfig() (*rules.Config, error) {
	marks, err := rules.MarksFromMask(c.MarkMask)
	if err != nil {
		return nil, err
	}
	return &rules.Config{
		IPv6: c.IPv6Support, WorkloadPrefixes: c.InterfacePrefixes, Marks: marks,
		EndpointToHost: c.DefaultEndpointToHostAction, FailsafeIn: c.FailsafeInbound, FailsafeOut: c.FailsafeOutbound,
		DropInvalid:             !c.DisableConntrackInvalidCheck,
		AllowVXLANFromWorkloads: c.AllowVXLANPacketsFromWorkloads,
		AllowIPIPFromWorkloads:  c.AllowIPIPPacketsFromWorkloads,
		VXLANPort:               uint16(c.VXLANPort),
		WireguardPortV4:         c.wgPort(nft.IPv4),
		WireguardPortV6:         c.wgPort(nft.IPv6),
		WireguardHostMark:       c.wgHostMark(),
		WireguardIfaces:         []string{c.Wireguard.InterfaceName, c.Wireguard.InterfaceNameV6},
		Reject:                  c.FilterDenyReject,
		LogPrefix:               c.LogPrefix,
		NATOutgoingAddress:      c.NATOutgoingAddress.Unmap(), // an IPv4-mapped address is IPv4
		NATPortRange:            c.NATPortRange,
		NATExcludeHosts:         c.NATOutgoingExcludeHosts,
		ServiceLoop:             c.ServiceLoopPrevention,
		OpenStack:               c.OpenStack, MetadataAddr: c.MetadataAddr, MetadataPort: c.MetadataPort,
	}, nil
}
