package config

import (
	"crypto/sha1"
	"net"
	"net/netip"
	"slices"
	"strings"

	"github.com/calico-host/calico-host/pkg/felix/dataplane"
)

// Project Calico's OpenStack metadata defaults: other values turn the OpenStack special cases on.
var (
	defaultMetadataAddr = netip.MustParseAddr("127.0.0.1")
	defaultMetadataPort = 8775
)

// OpenStack reports whether felix applies its OpenStack special cases (metadata DNAT, DHCP and
// DNS from workloads): an interface prefix "tap", "openstack" in the cluster type, or
// non-default metadata settings.
func (c *Config) OpenStack() bool {
	if slices.Contains(c.InterfacePrefix, "tap") {
		return true
	}
	for _, t := range strings.Split(c.Cluster.Type, ",") {
		if strings.EqualFold(strings.TrimSpace(t), "openstack") {
			return true
		}
	}
	// MetadataAddr "none" (no metadata NAT) does not count.
	return c.MetadataAddr.IsValid() && c.MetadataAddr != defaultMetadataAddr || c.MetadataPort != defaultMetadataPort
}

// VXLANOn says whether the VXLAN device is wanted: VXLANEnabled when set, else whether an IP pool
// uses VXLAN (poolsUseVXLAN, from the pools calc reports).
func (c *Config) VXLANOn(poolsUseVXLAN bool) bool {
	if c.VXLANEnabled != nil {
		return *c.VXLANEnabled
	}
	return poolsUseVXLAN
}

// VXLANMAC is this host's VTEP MAC: the Node's VXLANTunnelMACAddr, else Project Calico's derived
// MAC, 0x66 followed by the first 5 bytes of sha1(hostname) (locally administered, unicast).
func (c *Config) VXLANMAC() string {
	if mac, err := net.ParseMAC(c.Cluster.VXLANTunnelMAC); err == nil && len(mac) == 6 {
		return mac.String()
	}
	return DerivedVXLANMAC(c.FelixHostname, false)
}

// DerivedVXLANMAC computes Project Calico's MAC for a node without VXLANTunnelMACAddr
// (calc/vxlan_resolver.go): "f" + sha1(nodename)[0:5], hashing nodename+"-v6" for IPv6.
func DerivedVXLANMAC(nodename string, ipv6 bool) string {
	if ipv6 {
		nodename += "-v6"
	}
	sum := sha1.Sum([]byte(nodename))
	return net.HardwareAddr(append([]byte("f"), sum[:5]...)).String()
}

// Dataplane translates the configuration into the dataplane's Config.
func (c *Config) Dataplane(poolsUseVXLAN bool) dataplane.Config {
	wgTable, wgTableV6 := c.wireguardTables()
	return dataplane.Config{
		Hostname:                       c.FelixHostname,
		InterfacePrefixes:              slices.Clone(c.InterfacePrefix),
		InterfaceExclude:               slices.Clone(c.InterfaceExclude),
		IPv6Support:                    c.IPv6Support,
		DefaultEndpointToHostAction:    titleCase(c.DefaultEndpointToHostAction),
		FailsafeInbound:                slices.Clone(c.FailsafeInboundHostPorts),
		FailsafeOutbound:               slices.Clone(c.FailsafeOutboundHostPorts),
		DisableConntrackInvalidCheck:   c.DisableConntrackInvalidCheck,
		AllowVXLANPacketsFromWorkloads: c.AllowVXLANPacketsFromWorkloads,
		AllowIPIPPacketsFromWorkloads:  c.AllowIPIPPacketsFromWorkloads,
		FilterDenyAction:               titleCase(c.NftablesFilterDenyAction),
		LogPrefix:                      c.LogPrefix,
		MarkMask:                       c.NftablesMarkMask,
		NATOutgoingAddress:             c.NATOutgoingAddress,
		NATPortRange:                   c.NATPortRange,
		NATOutgoingExcludeHosts:        c.NATOutgoingExclusions == "IPPoolsAndHostIPs",
		ServiceLoopPrevention:          c.ServiceLoopPrevention,
		WorkloadSourceSpoofing:         c.WorkloadSourceSpoofing == "Any",
		FloatingIPs:                    c.FloatingIPs == "Enabled",
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
		IPForwardingDisabled:           c.IPForwarding == "Disabled",
		MTUIfacePattern:                c.MTUIfacePattern,
		RequireMTUFile:                 c.RequireMTUFile,
		IPIPEnabled:                    c.IPIPEnabled,
		IPIPMTU:                        c.IPIPMTU,
		IPIPTunnelAddr:                 c.IPIPTunnelAddr,
		NetNS:                          c.DataplaneNetNS,
		Routes: dataplane.RouteConfig{
			DeviceProtocol: c.DeviceRouteProtocol,
			SourceAddr:     c.DeviceRouteSourceAddress, SourceAddrV6: c.DeviceRouteSourceAddressIPv6,
			KeepExternal:   !c.RemoveExternalRoutes,
			SyncDisabled:   c.RouteSyncDisabled,
			NormalPriority: c.IPv4NormalRoutePriority, NormalPriorityV6: c.IPv6NormalRoutePriority,
			ElevatedPriority: c.IPv4ElevatedRoutePriority, ElevatedPriorityV6: c.IPv6ElevatedRoutePriority,
		},
		LiveMigrationRouteConvergenceTime: c.LiveMigrationRouteConvergenceTime,
		Wireguard: dataplane.WireguardConfig{
			Enabled: c.WireguardEnabled, EnabledV6: c.WireguardEnabledV6,
			InterfaceName: c.WireguardInterfaceName, InterfaceNameV6: c.WireguardInterfaceNameV6,
			ListeningPort: c.WireguardListeningPort, ListeningPortV6: c.WireguardListeningPortV6,
			MTU: c.WireguardMTU, MTUV6: c.WireguardMTUV6, RoutingRulePriority: c.WireguardRoutingRulePriority,
			PersistentKeepAlive: c.WireguardPersistentKeepAlive, ThreadingEnabled: c.WireguardThreadingEnabled,
			HostEncryption: c.WireguardHostEncryptionEnabled,
			RoutingTable:   tableOrInvalid(wgTable), RoutingTableV6: tableOrInvalid(wgTableV6),
		},
	}
}

// tableOrInvalid passes an allocated table on, and -1 (which the dataplane refuses) when the
// ranges held too few tables, so WireGuard fails closed instead of using a table outside them.
func tableOrInvalid(t int) int {
	if t == 0 {
		return -1
	}
	return t
}

// titleCase turns "DROP" into "Drop".
func titleCase(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + strings.ToLower(s[1:])
}
