package topo

import (
	"context"
	"crypto/sha1"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"strings"

	"github.com/calico-host/calico-host/pkg/api"
)

// What Project Calico's felix programs for VXLAN on a node, one IP version, from
// felix/calc/vxlan_resolver.go (VTEPs), felix/dataplane/linux/vxlan_mgr.go (device, routes),
// felix/vxlanfdb/vxlan_fdb.go (neighbour and FDB entries), felix/routetable (route attributes)
// and felix/dataplane/linux/route_mgr.go (blackholes), with default configuration:
//
//   - device vxlan.calico (IPv6 vxlan-v6.calico): VNI 4096, port 4789, no learning, the Node's
//     address as source with its interface as parent, MTU host MTU - 50 (IPv6 - 70), MAC the
//     Node's vxlanTunnelMACAddr(V6) else 0x66 + SHA-1(node name, IPv6: name + "-v6")[0:5], and
//     the tunnel address as /32 (/128);
//   - for every other node with a tunnel address and a Node address of the family (a VTEP): a
//     permanent neighbour entry tunnel address -> VTEP MAC and a permanent FDB entry (self) VTEP
//     MAC -> Node address;
//   - for every block of a VXLAN pool affine to another node with a VTEP: a route to the block
//     via that node's tunnel address on the device, onlink, protocol DeviceRouteProtocol (3,
//     "boot"), with the device MTU as route MTU;
//   - for every block of a VXLAN pool affine to this node: a blackhole, protocol 80.

// VXLANState is one IP version's VXLAN state of a node, as lines comparable between what
// Project Calico's felix would program (CalicoVXLAN) and a host's kernel (Host.ReadVXLAN).
type VXLANState struct {
	Device     string
	MAC        string
	MTU        int
	VNI, Port  int
	Learning   bool
	Local      netip.Addr // the VXLAN source (the Node's address)
	TunnelAddr netip.Addr // the device's address
	Neighbors  []string   // "<tunnel address> lladdr <MAC> PERMANENT"
	FDB        []string   // "<MAC> dst <node address> self permanent"
	Routes     []string   // "<block> via <tunnel address> dev <device> onlink proto <p> mtu <n>"
	Blackholes []string   // "blackhole <block> proto <p>"
}

// Calico's VXLAN defaults (felix config_params.go, dataplanedefs) and the host MTU of the fabric.
const (
	calicoVNI       = 4096
	calicoVXLANPort = 4789
	fabricMTU       = 1500
)

// CalicoVTEPMAC is the MAC Project Calico's felix gives the VXLAN device of a node whose Node
// names none: 0x66 then the first five bytes of SHA-1 of the node name (+"-v6" for IPv6).
func CalicoVTEPMAC(node string, fam int) string {
	if fam == 6 {
		node += "-v6"
	}
	sum := sha1.Sum([]byte(node))
	return net.HardwareAddr(append([]byte{'f'}, sum[:5]...)).String()
}

// CalicoVXLAN computes what Project Calico's felix would program on node `name` for IP version
// fam, from the datastore as it is now; nil when the node has no tunnel address of the family.
func (f *Fabric) CalicoVXLAN(ctx context.Context, name string, fam int) (*VXLANState, error) {
	st, err := readPCState(ctx, f, name)
	if err != nil {
		return nil, err
	}
	return calicoVXLAN(st, fam), nil
}

func calicoVXLAN(st *pcState, fam int) *VXLANState {
	tunnel := tunnelAddr(st.self, fam)
	if !tunnel.IsValid() {
		return nil
	}
	s := &VXLANState{Device: "vxlan.calico", MTU: fabricMTU - 50, VNI: calicoVNI, Port: calicoVXLANPort,
		Local: nodeAddr(st.self, fam), TunnelAddr: tunnel, MAC: vtepMAC(st.self, fam)}
	if fam == 6 {
		s.Device, s.MTU = "vxlan-v6.calico", fabricMTU-70
	}
	vteps := map[string]netip.Addr{}
	for _, n := range st.nodes {
		t, host := tunnelAddr(n, fam), nodeAddr(n, fam)
		if n.Name == st.self.Name || !t.IsValid() || !host.IsValid() {
			continue
		}
		vteps[n.Name] = t
		mac := vtepMAC(n, fam)
		s.Neighbors = append(s.Neighbors, fmt.Sprintf("%s lladdr %s PERMANENT", t, mac))
		s.FDB = append(s.FDB, fmt.Sprintf("%s dst %s self permanent", mac, host))
	}
	for _, b := range st.blocks {
		if familyOf(b.cidr.Addr()) != fam || !isVXLANPool(st.poolOf(b.cidr)) {
			continue
		}
		if b.node == st.self.Name {
			s.Blackholes = append(s.Blackholes, fmt.Sprintf("blackhole %s proto 80", b.cidr))
		} else if t, ok := vteps[b.node]; ok {
			s.Routes = append(s.Routes, fmt.Sprintf("%s via %s dev %s onlink proto boot mtu %d", b.cidr, t, s.Device, s.MTU))
		}
	}
	s.sort()
	return s
}

func (s *VXLANState) sort() {
	for _, l := range [][]string{s.Neighbors, s.FDB, s.Routes, s.Blackholes} {
		sort.Strings(l)
	}
}

func isVXLANPool(p *api.IPPool) bool {
	return p != nil && (p.Spec.VXLANMode == "Always" || p.Spec.VXLANMode == "CrossSubnet")
}

func tunnelAddr(n *api.Node, fam int) netip.Addr {
	s := n.Spec.IPv4VXLANTunnelAddr
	if fam == 6 {
		s = n.Spec.IPv6VXLANTunnelAddr
	}
	a, _ := netip.ParseAddr(s)
	return a
}

// vtepMAC is the Node's MAC for the family as felix reads it (any form net.ParseMAC accepts),
// else the derived one.
func vtepMAC(n *api.Node, fam int) string {
	s := n.Spec.VXLANTunnelMACAddr
	if fam == 6 {
		s = n.Spec.VXLANTunnelMACAddrV6
	}
	if mac, err := net.ParseMAC(s); err == nil && s != "" {
		return mac.String()
	}
	return CalicoVTEPMAC(n.Name, fam)
}

// syncVXLAN programs what CalicoVXLAN computes for this host, for each IP version, when it
// changed since the last sync (entries that disappear are not removed: the tests never need it).
func (pc *projectCalico) syncVXLAN(ctx context.Context, st *pcState) error {
	for _, fam := range pc.h.f.Families() {
		want := calicoVXLAN(st, fam)
		if want == nil {
			continue
		}
		key := fmt.Sprintf("vxlan-v%d", fam)
		cmds := want.commands(fam)
		text := strings.Join(cmds, "\n")
		if pc.applied[key] == text {
			continue
		}
		if err := pc.ensureVXLANDevice(ctx, want, fam); err != nil {
			return err
		}
		if err := pc.h.NS.runCommands(ctx, cmds); err != nil {
			return err
		}
		pc.applied[key] = text
		pc.logChange("programmed VXLAN:\n  " + strings.Join(cmds, "\n  "))
	}
	return nil
}

func (pc *projectCalico) ensureVXLANDevice(ctx context.Context, s *VXLANState, fam int) error {
	if _, err := pc.h.Exec(ctx, "ip", "link", "show", "dev", s.Device); err == nil {
		return nil
	}
	return pc.h.NS.script(ctx, fmt.Sprintf("link add %s type vxlan id %d dstport %d local %s dev eth0 nolearning",
		s.Device, s.VNI, s.Port, s.Local))
}

// commands are the "ip ..." and "bridge ..." command lines that program the state.
func (s *VXLANState) commands(fam int) []string {
	addr := fmt.Sprintf("ip addr replace %s/32 dev %s", s.TunnelAddr, s.Device)
	if fam == 6 {
		addr = fmt.Sprintf("ip addr replace %s/128 dev %s nodad", s.TunnelAddr, s.Device)
	}
	out := []string{fmt.Sprintf("ip link set %s address %s mtu %d up", s.Device, s.MAC, s.MTU), addr}
	for _, n := range s.Neighbors {
		f := strings.Fields(n) // addr lladdr MAC PERMANENT
		out = append(out, fmt.Sprintf("ip neigh replace %s lladdr %s dev %s nud permanent", f[0], f[2], s.Device))
	}
	for _, e := range s.FDB {
		f := strings.Fields(e) // MAC dst addr self permanent
		out = append(out, fmt.Sprintf("bridge fdb replace %s dev %s dst %s self permanent", f[0], s.Device, f[2]))
	}
	for _, r := range s.Routes {
		out = append(out, "ip route replace "+r)
	}
	for _, b := range s.Blackholes {
		out = append(out, "ip route replace "+b)
	}
	return out
}

// runCommands runs "ip"/"bridge" command lines in the namespace.
func (n *Netns) runCommands(ctx context.Context, lines []string) error {
	for _, l := range lines {
		f := strings.Fields(l)
		if _, err := run(ctx, nil, append([]string{f[0], "-n", n.Name}, f[1:]...)...); err != nil {
			return err
		}
	}
	return nil
}
