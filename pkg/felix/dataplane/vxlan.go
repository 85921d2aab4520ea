package dataplane

import (
	"cmp"
	"net"
	"net/netip"
	"slices"
	"strings"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/vxlan"
	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/vtepmac"
)

// Names of the VXLAN devices.
const (
	vxlanDeviceV4 = "vxlan.calico"
	vxlanDeviceV6 = "vxlan-v6.calico"
)

// vxlanFamily is what differs between the IPv4 and IPv6 VXLAN devices.
type vxlanFamily struct {
	fam    nft.IPVersion
	device string
}

var vxlanFamilies = []vxlanFamily{{nft.IPv4, vxlanDeviceV4}, {nft.IPv6, vxlanDeviceV6}}

// hostFacts are this host's tunnel address, underlay address and tunnel MAC for the family.
func (vf vxlanFamily) hostFacts(cfg Config, c *calc.ConfigUpdate) (tunnel, local netip.Addr, mac string) {
	if vf.fam == nft.IPv6 {
		return c.VXLANTunnelAddrV6, c.HostIPv6.Addr(), c.VXLANTunnelMACV6
	}
	return c.VXLANTunnelAddrV4, c.HostIPv4.Addr(), cmp.Or(c.VXLANTunnelMAC, cfg.VXLANTunnelMAC)
}

// vxlanDevices computes the VXLAN devices this host needs: one per family whose VXLAN is on
// (VXLANEnabled, or a pool of that family with vxlanMode Always or CrossSubnet) and whose
// tunnel address calc has reported, with every remote VTEP of that family as a peer.
func vxlanDevices(cfg Config, m *model) []vxlan.Device {
	var out []vxlan.Device
	for _, vf := range vxlanFamilies {
		if vf.fam == nft.IPv6 && !cfg.IPv6Support || !vxlanWanted(cfg, m, vf.fam) {
			continue
		}
		if d, ok := vxlanDevice(cfg, m, vf); ok {
			out = append(out, d)
		}
	}
	return out
}

func vxlanWanted(cfg Config, m *model, f nft.IPVersion) bool {
	if cfg.VXLANEnabled {
		return true
	}
	for _, p := range m.pools {
		if versionOf(p.CIDR.Addr()) == f && (p.VXLANMode == "Always" || p.VXLANMode == "CrossSubnet") {
			return true
		}
	}
	return false
}

func vxlanDevice(cfg Config, m *model, vf vxlanFamily) (vxlan.Device, bool) {
	tunnel, local, macText := vf.hostFacts(cfg, &m.host)
	if !tunnel.IsValid() {
		return vxlan.Device{}, false
	}
	d := vxlan.Device{
		Name: vf.device, VNI: cfg.VXLANVNI, Port: cfg.VXLANPort, MTU: vf.mtu(cfg),
		MAC: vf.macOr(macText, cfg.Hostname), LocalAddr: local, TunnelAddr: tunnel,
	}
	for key, v := range m.vteps {
		if key.v6 != (vf.fam == nft.IPv6) || key.node == cfg.Hostname {
			continue
		}
		d.Peers = append(d.Peers, vxlan.Peer{Node: v.Node, MAC: vf.macOr(v.MAC, v.Node), TunnelAddr: v.TunnelAddr, HostAddr: v.ParentDeviceAddr})
	}
	slices.SortFunc(d.Peers, func(a, b vxlan.Peer) int { return a.TunnelAddr.Compare(b.TunnelAddr) })
	return d, true
}

// macOr parses s, or derives Calico's default VTEP MAC of the family for node.
func (vf vxlanFamily) macOr(s, node string) net.HardwareAddr {
	if mac, err := net.ParseMAC(strings.TrimSpace(s)); err == nil && len(mac) == 6 {
		return mac
	}
	return vtepmac.ForNode(node, vf.fam == nft.IPv6)
}

// mtu is the configured MTU of the family's device (VXLANMTU or VXLANMTUV6; 0: derived from the
// host MTU).
func (vf vxlanFamily) mtu(cfg Config) int {
	if vf.fam == nft.IPv6 {
		return cfg.VXLANMTUV6
	}
	return cfg.VXLANMTU
}
