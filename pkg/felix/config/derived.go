package config

// The values felix derives from several parameters and the cluster facts, each derived here only.

import (
	"net"
	"net/netip"
	"slices"
	"strings"

	"github.com/calico-host/calico-host/pkg/vtepmac"
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
	return vtepmac.ForNode(c.FelixHostname, false).String()
}

// FlowLogsOn says whether felix collects flow logs: a Goldmane server, the local reporter or the
// file is on.
func (c *Config) FlowLogsOn() bool {
	return c.FlowLogsGoldmaneServer != "" || c.FlowLogsLocalReporter || c.FlowLogsFileEnabled
}
