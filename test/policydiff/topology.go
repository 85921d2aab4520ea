package policydiff

import (
	"fmt"
	"net/netip"

	"github.com/calico-host/calico-host/pkg/api"
)

// The fixed topology every scenario runs on. Only the objects in etcd change between scenarios;
// the namespaces and veths stay.
//
//	host netns (topo host-1, felix): cali* veths to the workloads, ext0 to the outside
//	workload netns wl0..wl5: eth0 with 10.65.1.1x/32 and fd5c:1:1::1x/128
//	sentinel netns s0, s1: eth0 with 10.65.2.x and fd5c:1:2::x, label "sentinel"
//	outside netns: eth0 198.18.5.1/24, fd5c:ff:5::1/64; the host routes 198.19.0.0/16,
//	  10.65.200.0/24 (remote workloads), fd5c:e::/32 and fd5c:1:200::/64 to it
//
// Remote workloads (node host-9) exist only in etcd: the outside sends with their addresses.
// Host endpoints of host-1 are on ext0 (hep=ext0) and "*" (hep=all), drawn per scenario.

// slot is one workload: its endpoint's fixed identity and addresses.
type slot struct {
	Name     string // wl0, s0, r0 ...
	Iface    string // host side of the veth ("" for remote workloads)
	V4, V6   netip.Addr
	Node     string
	Sentinel bool
}

// uplink is the host's interface to the outside namespace: every address that no local
// workload owns is routed through it.
const uplink = "ext0"

const (
	localNode  = "host-1" // topo names its first host so
	remoteNode = "host-9"
	numLocal   = 6
)

// Addresses outside the host.
var (
	outsideV4     = netip.MustParseAddr("198.18.5.1")
	outsideV6     = netip.MustParseAddr("fd5c:ff:5::1")
	extGatewayV4  = netip.MustParseAddr("198.18.5.254")
	extGatewayV6  = netip.MustParseAddr("fd5c:ff:5::fe")
	outsideRoutes = []string{"198.19.0.0/16", "10.65.200.0/24", "fd5c:e::/32", "fd5c:1:200::/64"}
)

func localSlots() []slot {
	var out []slot
	for i := range numLocal {
		out = append(out, slot{Name: fmt.Sprintf("wl%d", i), Iface: fmt.Sprintf("calidiff%07d", i),
			V4: netip.AddrFrom4([4]byte{10, 65, 1, byte(10 + i)}), V6: netip.MustParseAddr(fmt.Sprintf("fd5c:1:1::%x", 0x10+i)),
			Node: localNode})
	}
	return out
}

func sentinelSlots() []slot {
	var out []slot
	for i := range 2 {
		out = append(out, slot{Name: fmt.Sprintf("s%d", i), Iface: fmt.Sprintf("calisent%07d", i),
			V4: netip.AddrFrom4([4]byte{10, 65, 2, byte(1 + i)}), V6: netip.MustParseAddr(fmt.Sprintf("fd5c:1:2::%x", 1+i)),
			Node: localNode, Sentinel: true})
	}
	return out
}

func remoteSlots() []slot {
	var out []slot
	for i := range 2 {
		out = append(out, slot{Name: fmt.Sprintf("r%d", i),
			V4: netip.AddrFrom4([4]byte{10, 65, 200, byte(1 + i)}), V6: netip.MustParseAddr(fmt.Sprintf("fd5c:1:200::%x", 1+i)),
			Node: remoteNode})
	}
	return out
}

// addr returns the slot's address of a family.
func (s slot) addr(fam int) netip.Addr {
	if fam == 4 {
		return s.V4
	}
	return s.V6
}

// wep is the slot's WorkloadEndpoint in a namespace, shaped as calicoctl or the CNI plugin
// writes it.
func (s slot) wep(ns string, labels map[string]string, profiles []string, ports []api.WorkloadEndpointPort) *api.WorkloadEndpoint {
	cid := "pdiff" + s.Name
	l := map[string]string{api.LabelNamespace: ns, "projectcalico.org/orchestrator": "cni"}
	for k, v := range labels {
		l[k] = v
	}
	w := &api.WorkloadEndpoint{
		TypeMeta:   api.TypeMeta{Kind: "WorkloadEndpoint", APIVersion: api.APIVersion},
		ObjectMeta: api.ObjectMeta{Name: api.WorkloadEndpointName(s.Node, "cni", cid, "eth0"), Namespace: ns, Labels: l},
		Spec: api.WorkloadEndpointSpec{Orchestrator: "cni", Workload: cid, Node: s.Node, ContainerID: cid, Endpoint: "eth0",
			IPNetworks: []string{s.V4.String() + "/32", s.V6.String() + "/128"}, Profiles: profiles,
			InterfaceName: s.Iface, Ports: ports},
	}
	if s.Iface == "" {
		w.Spec.InterfaceName = "caliremote" + s.Name
	}
	return w
}
