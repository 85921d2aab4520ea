package calc

import (
	"net"
	"net/netip"
	"reflect"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/vtepmac"
)

// nodeInfo is what the graph needs of a Node.
type nodeInfo struct {
	name       string
	ipv4, ipv6 netip.Prefix // bgp.ipv4Address / ipv6Address, address with its subnet
	labels     map[string]string
	vxlan      [2]netip.Addr // tunnel address per family (index 0: IPv4, 1: IPv6)
	ipip       netip.Addr    // bgp.ipv4IPIPTunnelAddr
	mac        [2]string     // stored VXLAN MAC per family ("" when unset)
	wgKey      [2]string     // published WireGuard public key per family
	wgAddr     [2]netip.Addr // WireGuard tunnel address per family
}

// newNodeInfo converts a Node; unparsable addresses are treated as absent.
func newNodeInfo(name string, n *api.Node) *nodeInfo {
	ni := &nodeInfo{name: name, labels: n.Labels}
	if b := n.Spec.BGP; b != nil {
		ni.ipv4 = parseHostPrefix(b.IPv4Address, 4)
		ni.ipv6 = parseHostPrefix(b.IPv6Address, 6)
		ni.ipip = parseAddrFamily(b.IPv4IPIPTunnelAddr, 4)
	}
	ni.vxlan[0] = parseAddrFamily(n.Spec.IPv4VXLANTunnelAddr, 4)
	ni.vxlan[1] = parseAddrFamily(n.Spec.IPv6VXLANTunnelAddr, 6)
	ni.mac[0], ni.mac[1] = parseMAC(n.Spec.VXLANTunnelMACAddr), parseMAC(n.Spec.VXLANTunnelMACAddrV6)
	ni.wgKey[0], ni.wgKey[1] = n.Status.WireguardPublicKey, n.Status.WireguardPublicKeyV6
	if w := n.Spec.Wireguard; w != nil {
		ni.wgAddr[0] = parseAddrFamily(w.InterfaceIPv4Address, 4)
		ni.wgAddr[1] = parseAddrFamily(w.InterfaceIPv6Address, 6)
	}
	return ni
}

// parseMAC returns a stored MAC in canonical form, or "" (computed instead) when it is not one
// (only a Node that failed validation has such a MAC).
func parseMAC(s string) string {
	m, err := net.ParseMAC(s)
	if err != nil || len(m) != 6 {
		return ""
	}
	return m.String()
}

// parseHostPrefix parses "198.18.0.1/24" (keeping the address) or a bare address of a family.
func parseHostPrefix(s string, fam int) netip.Prefix {
	if s == "" {
		return netip.Prefix{}
	}
	p, err := parsePrefixOrAddr(s)
	if err != nil || familyOf(p.Addr()) != fam {
		return netip.Prefix{}
	}
	return p
}

func parseAddrFamily(s string, fam int) netip.Addr {
	a, err := netip.ParseAddr(s)
	if err != nil || familyOf(a.Unmap()) != fam {
		return netip.Addr{}
	}
	return a.Unmap()
}

// addr returns the node's address of a family (invalid when it has none).
func (n *nodeInfo) addr(fam int) netip.Addr {
	if fam == 4 {
		return n.ipv4.Addr()
	}
	return n.ipv6.Addr()
}

// vxlanMAC returns the node's VXLAN MAC for a family: the stored one, else Calico's computed
// one, 0x66 followed by the first 5 bytes of SHA-1 of the node name (name + "-v6" for IPv6).
func (n *nodeInfo) vxlanMAC(fam int) string {
	i := 0
	if fam == 6 {
		i = 1
	}
	if n.mac[i] != "" {
		return n.mac[i]
	}
	return vtepmac.ForNode(n.name, fam == 6).String()
}

// nodeCalc emits HostMetadata for every node and the VTEPs of the other nodes.
type nodeCalc struct {
	host      string
	nodes     map[string]*nodeInfo
	dirty     map[string]struct{}
	sentHosts map[string]*HostMetadata
	sentVTEPs map[string][2]*VTEP
}

func newNodeCalc(host string) *nodeCalc {
	return &nodeCalc{host: host, nodes: map[string]*nodeInfo{}, dirty: map[string]struct{}{},
		sentHosts: map[string]*HostMetadata{}, sentVTEPs: map[string][2]*VTEP{}}
}

// update records a node (nil when deleted).
func (c *nodeCalc) update(name string, n *nodeInfo) {
	if n == nil {
		delete(c.nodes, name)
	} else {
		c.nodes[name] = n
	}
	c.dirty[name] = struct{}{}
}

// flush returns host and VTEP changes.
func (c *nodeCalc) flush() (hostUpd, hostRem, vtepUpd, vtepRem []Update) {
	for _, name := range sortedKeys(c.dirty) {
		n := c.nodes[name]
		var hm *HostMetadata
		if n != nil {
			hm = &HostMetadata{Hostname: name, IPv4Addr: n.ipv4, IPv6Addr: n.ipv6, Labels: n.labels,
				WireguardPublicKey: n.wgKey[0], WireguardPublicKeyV6: n.wgKey[1], WireguardAddrV4: n.wgAddr[0], WireguardAddrV6: n.wgAddr[1]}
		}
		switch prev := c.sentHosts[name]; {
		case hm == nil && prev != nil:
			hostRem = append(hostRem, HostMetadataRemove{Hostname: name})
			delete(c.sentHosts, name)
		case hm != nil && !reflect.DeepEqual(prev, hm):
			hostUpd = append(hostUpd, HostMetadataUpdate{Host: hm})
			c.sentHosts[name] = hm
		}
		u, r := c.flushVTEPs(name, n)
		vtepUpd, vtepRem = append(vtepUpd, u...), append(vtepRem, r...)
	}
	clear(c.dirty)
	return hostUpd, hostRem, vtepUpd, vtepRem
}

// flushVTEPs diffs a node's desired VTEPs against those sent.
func (c *nodeCalc) flushVTEPs(name string, n *nodeInfo) (upd, rem []Update) {
	sent := c.sentVTEPs[name]
	for i, fam := range []int{4, 6} {
		var want *VTEP
		if n != nil && name != c.host && n.vxlan[i].IsValid() && n.addr(fam).IsValid() {
			want = &VTEP{Node: name, MAC: n.vxlanMAC(fam), TunnelAddr: n.vxlan[i], ParentDeviceAddr: n.addr(fam)}
		}
		switch {
		case want == nil && sent[i] != nil:
			rem = append(rem, VTEPRemove{Node: name, IPv6: fam == 6})
		case want != nil && (sent[i] == nil || *sent[i] != *want):
			upd = append(upd, VTEPUpdate{VTEP: want})
		}
		sent[i] = want
	}
	if sent == [2]*VTEP{} {
		delete(c.sentVTEPs, name)
	} else {
		c.sentVTEPs[name] = sent
	}
	return upd, rem
}
