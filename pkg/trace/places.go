package trace

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// Place is one end of a trace: a workload endpoint, a host (its own address or a host
// endpoint), or an address no endpoint has (Host ""): the network beyond the hosts.
type Place struct {
	Name  string     // what the user named (an endpoint, a host) or the address
	Host  string     // the host it is on ("" outside)
	Addr  netip.Addr // the address packets use
	Iface string     // the workload's interface on its host ("" for a host or the outside)
}

// Workload says whether the place is a workload endpoint.
func (p Place) Workload() bool { return p.Iface != "" }

// snapshot indexes what places are made of: workload endpoints, host endpoints and nodes.
type snapshot struct {
	weps   []wepPlace
	heps   []hepPlace
	nodes  map[string][]netip.Addr
	byAddr map[netip.Addr]Place // what holds each address: workloads first, then hosts
}

type wepPlace struct {
	ns, name, workload, host, iface string
	addrs                           []netip.Addr
}

type hepPlace struct {
	name, host, iface string
	addrs             []netip.Addr
}

func indexSnapshot(ups []syncer.Update) *snapshot {
	s := &snapshot{nodes: map[string][]netip.Addr{}}
	for _, u := range ups {
		id, ok := u.ID.(datastore.ResourceID)
		if !ok {
			continue
		}
		switch v := u.Value.(type) {
		case *api.WorkloadEndpoint:
			s.weps = append(s.weps, wepPlace{ns: id.Namespace, name: id.Name, workload: v.Spec.Workload,
				host: v.Spec.Node, iface: v.Spec.InterfaceName, addrs: addrsOf(v.Spec.IPNetworks)})
		case *api.HostEndpoint:
			s.heps = append(s.heps, hepPlace{name: id.Name, host: v.Spec.Node, iface: v.Spec.InterfaceName,
				addrs: addrsOf(v.Spec.ExpectedIPs)})
		case *api.Node:
			s.nodes[id.Name] = nodeAddrs(v)
		}
	}
	s.indexAddrs()
	return s
}

// indexAddrs fills byAddr: an address held by several things is the first workload's, else
// the first host endpoint's, else its node's.
func (s *snapshot) indexAddrs() {
	s.byAddr = map[netip.Addr]Place{}
	add := func(a netip.Addr, p Place) {
		if _, ok := s.byAddr[a]; !ok {
			p.Addr = a
			s.byAddr[a] = p
		}
	}
	for _, w := range s.weps {
		for _, a := range w.addrs {
			add(a, Place{Name: w.ns + "/" + w.name, Host: w.host, Iface: w.iface})
		}
	}
	for _, h := range s.heps {
		for _, a := range h.addrs {
			add(a, Place{Name: h.name, Host: h.host})
		}
	}
	nodes := make([]string, 0, len(s.nodes))
	for n := range s.nodes {
		nodes = append(nodes, n)
	}
	slices.Sort(nodes)
	for _, n := range nodes {
		for _, a := range s.nodes[n] {
			add(a, Place{Name: n, Host: n})
		}
	}
}

func addrsOf(ss []string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Addr())
		} else if a, err := netip.ParseAddr(s); err == nil {
			out = append(out, a)
		}
	}
	return out
}

func nodeAddrs(n *api.Node) []netip.Addr {
	if n.Spec.BGP == nil {
		return nil
	}
	return addrsOf([]string{n.Spec.BGP.IPv4Address, n.Spec.BGP.IPv6Address})
}

// place resolves what the user named: an address, a workload endpoint ("<namespace>/<name>",
// its name alone, or its workload's name), a host endpoint or a node. v6 picks the address of
// the second family (when the other end is IPv6).
func (s *snapshot) place(name string, v6 bool) (Place, error) {
	if a, err := netip.ParseAddr(name); err == nil {
		return s.placeOf(a), nil
	}
	if p, ok := s.named(name, v6); ok {
		return p, nil
	}
	return Place{}, fmt.Errorf("%q is no address, workload endpoint, host endpoint or node in the datastore", name)
}

func (s *snapshot) named(name string, v6 bool) (Place, bool) {
	for _, w := range s.weps {
		if name == w.ns+"/"+w.name || name == w.name || name == w.workload || name == w.ns+"/"+w.workload {
			a, ok := pick(w.addrs, v6)
			return Place{Name: name, Host: w.host, Addr: a, Iface: w.iface}, ok
		}
	}
	for _, h := range s.heps {
		if name == h.name {
			a, ok := pick(append(h.addrs, s.nodes[h.host]...), v6)
			return Place{Name: name, Host: h.host, Addr: a}, ok
		}
	}
	if addrs, ok := s.nodes[name]; ok {
		a, ok := pick(addrs, v6)
		return Place{Name: name, Host: name, Addr: a}, ok
	}
	return Place{}, false
}

func pick(addrs []netip.Addr, v6 bool) (netip.Addr, bool) {
	for _, a := range addrs {
		if a.Is6() == v6 {
			return a, true
		}
	}
	return netip.Addr{}, false
}

// placeOf names what holds address a.
func (s *snapshot) placeOf(a netip.Addr) Place {
	if p, ok := s.byAddr[a]; ok {
		return p
	}
	return Place{Name: a.String(), Addr: a}
}

// uplink is the name of the host's interface towards the network: the interface its host
// endpoint names, else eth0.
func (s *snapshot) uplink(host string) string {
	for _, h := range s.heps {
		if h.host == host && h.iface != "" && h.iface != "*" {
			return h.iface
		}
	}
	return "eth0"
}

// localWorkloads are the workload endpoints of host, by interface.
func (s *snapshot) localWorkloads(host string) map[string][]netip.Addr {
	out := map[string][]netip.Addr{}
	for _, w := range s.weps {
		if w.host == host && w.iface != "" {
			out[w.iface] = append(out[w.iface], w.addrs...)
		}
	}
	return out
}

// family reports whether names resolve to IPv6: when either is an IPv6 address (names resolve
// to IPv4 addresses first).
func family(names ...string) bool {
	for _, n := range names {
		if a, err := netip.ParseAddr(n); err == nil && a.Is6() {
			return true
		}
	}
	return false
}
