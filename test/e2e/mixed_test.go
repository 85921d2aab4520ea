package e2e

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/test/e2e/topo"
)

// mixedIngressPolicy: web (on a calico-host host) accepts TCP 80 and ICMP from clients, which
// live on both kinds of host.
const mixedIngressPolicy = `apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: mixed-web}
spec:
  selector: role == 'web'
  types: [Ingress]
  ingress:
  - {action: Allow, protocol: TCP, source: {selector: role == 'client'}, destination: {ports: [80]}}
  - {action: Allow, protocol: ICMP, source: {selector: role == 'client'}}
  - {action: Allow, protocol: ICMPv6, source: {selector: role == 'client'}}
`

// mixedEgressPolicy: clients may not reach 'other' endpoints (on the Project Calico host).
const mixedEgressPolicy = `apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: mixed-client, namespace: default}
spec:
  selector: role == 'client'
  types: [Egress]
  egress:
  - {action: Deny, destination: {selector: role == 'other'}}
  - {action: Allow}
`

// TestMixedCluster: one etcd, hosts 1 and 3 run calico-host, host 2 stands for Project Calico's
// calico-node (topo.Options.ProjectCalico): dual stack, in BGP mode (our BIRD 2 configuration
// and Project Calico's BIRD 1.6 configuration in one node-to-node mesh) and VXLAN mode (our
// VTEPs and Project Calico's). Host 2's address sorts between the others', so its BIRD 1.6
// connects to host 1 and accepts host 3's connection: sessions are opened in both directions.
// Workloads on both kinds of host talk across hosts in both families; policy written with
// calicoctl selects endpoints of both kinds of host (enforced on the calico-host hosts: no
// felix runs on the Project Calico host).
func TestMixedCluster(t *testing.T) {
	forModes(t, func(t *testing.T, mode topo.Mode) {
		requireBinaries(t)
		s := newSystem(t, topo.Options{Hosts: 3, Mode: mode, IPv6: true, ProjectCalico: []int{2}}, topo.StartOptions{Felix: true})
		web := s.workload(s.Host(1), "web", map[string]string{"role": "web"}, 80)
		pcClient := s.workload(s.Host(2), "pc-client", map[string]string{"role": "client"}, 80)
		pcOther := s.workload(s.Host(2), "pc-other", map[string]string{"role": "other"}, 80)
		client := s.workload(s.Host(3), "client", map[string]string{"role": "client"}, 80)
		if mode == topo.ModeBGP {
			s.checkMixedBGP(web, pcClient)
		} else {
			s.checkMixedVXLAN()
		}
		all := []*topo.Workload{web, pcClient, pcOther, client}
		probes := allPairs(80, all...)
		for _, p := range []struct{ from, to *topo.Workload }{{pcClient, web}, {web, pcOther}, {client, pcClient}, {pcOther, client}} {
			probes = append(probes, v6(tcp(p.from, p.to, 80, true), p.to), icmp(p.from, p.to, true), v6(icmp(p.from, p.to, true), p.to))
		}
		s.expect(30*time.Second, probes...)

		s.apply(mixedIngressPolicy)
		s.apply(mixedEgressPolicy)
		s.expect(20*time.Second,
			tcp(pcClient, web, 80, true), v6(tcp(pcClient, web, 80, true), web), icmp(pcClient, web, true), // source on the Calico host
			tcp(client, web, 80, true), v6(icmp(client, web, true), web),
			tcp(pcOther, web, 80, false), v6(tcp(pcOther, web, 80, false), web), icmp(pcOther, web, false),
			tcp(client, pcOther, 80, false), v6(tcp(client, pcOther, 80, false), pcOther), // destination on the Calico host
			tcp(client, pcClient, 80, true), v6(tcp(client, pcClient, 80, true), pcClient),
			tcp(pcOther, client, 80, true)) // client's ingress is open
	})
}

// checkMixedBGP: every session of both kinds of BIRD is Established with the right
// neighbours, each side connected to the other (TCP connections to port 179 in both directions
// on the Project Calico host), and each kernel routes the other kind's blocks through BIRD.
func (s *system) checkMixedBGP(ours, theirs *topo.Workload) {
	s.t.Helper()
	for _, h := range []*topo.Host{s.Host(1), s.Host(3)} {
		s.checkMeshNeighbours(h)
	}
	pc := s.Host(2)
	for _, fam := range s.Families() {
		sessions, err := pc.Bird16Sessions(s.ctx, fam)
		if err != nil {
			s.t.Fatal(err)
		}
		s.t.Logf("%s BIRD 1.6 IPv%d sessions: %v", pc.Name, fam, sessions)
	}
	s.eventually(10*time.Second, "BGP connections in both directions", func() error {
		return s.checkBGPDirections(pc)
	})
	s.checkBIRDRoute(ours.Host, theirs.IP(4), pc.Addr)
	s.checkBIRDRoute(ours.Host, theirs.IP(6), pc.Addr6)
	s.checkBIRDRoute(pc, ours.IP(4), ours.Host.Addr)
	s.checkBIRDRoute(pc, ours.IP(6), ours.Host.Addr6)
	s.checkPeerMetric(pc, ours.IP(4))
}

// checkBGPDirections: the Project Calico host connected to host 1 (lower address: BIRD 1.6 is
// active) and host 3 connected to it (higher address: our BIRD 2 is active), in both families.
func (s *system) checkBGPDirections(pc *topo.Host) error {
	out, err := pc.Exec(s.ctx, "ss", "-Htn", "state", "established", "( sport = :179 or dport = :179 )")
	if err != nil {
		return err
	}
	want := []string{}
	for _, pair := range [][2]netip.Addr{{pc.Addr, s.Host(1).Addr}, {pc.Addr6, s.Host(1).Addr6}} {
		want = append(want, fmt.Sprintf("-> %s", netip.AddrPortFrom(pair[1], 179))) // we connected
	}
	for _, a := range []netip.Addr{s.Host(3).Addr, s.Host(3).Addr6} {
		want = append(want, fmt.Sprintf("<- %s", a)) // they connected to our port 179
	}
	var have []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(l)
		if len(f) < 4 {
			continue
		}
		local, err1 := netip.ParseAddrPort(f[2])
		peer, err2 := netip.ParseAddrPort(f[3])
		if err1 != nil || err2 != nil {
			continue
		}
		if peer.Port() == 179 {
			have = append(have, "-> "+peer.String())
		} else if local.Port() == 179 {
			have = append(have, "<- "+peer.Addr().String())
		}
	}
	for _, w := range want {
		if !strings.Contains(strings.Join(have, "|")+"|", w+"|") {
			return fmt.Errorf("missing %q in %v", w, have)
		}
	}
	return nil
}

// checkPeerMetric logs the metric the Project Calico host's BIRD 1.6 gave a route learnt from
// our BIRD 2 and checks it is the normal route priority (1024), as for a route from a Project
// Calico peer (its kernel filter computes 2147483647 - LOCAL_PREF).
func (s *system) checkPeerMetric(pc *topo.Host, ip netip.Addr) {
	s.t.Helper()
	s.eventually(10*time.Second, "metric of a route learnt from calico-host", func() error {
		routes, err := pc.Routes(s.ctx, 4, "proto", "bird")
		if err != nil {
			return err
		}
		for _, r := range routes {
			if p, err := netip.ParsePrefix(r.Dst); err == nil && p.Contains(ip) {
				if r.Metric != 1024 {
					return fmt.Errorf("route %s has metric %d, want 1024", r.Dst, r.Metric)
				}
				return nil
			}
		}
		return fmt.Errorf("no route to %s in %v", ip, routes)
	})
}

// checkMixedVXLAN: on the calico-host hosts, the VXLAN state of both families is what Project
// Calico's felix would program there (so also towards the Project Calico host's VTEP); our
// Nodes carry VTEPs of the shape Project Calico's felix reads: a tunnel address allocated in
// IPAM under calico-node's handle and attributes, and a MAC that is the one of our device.
func (s *system) checkMixedVXLAN() {
	s.t.Helper()
	ds, err := s.Datastore()
	if err != nil {
		s.t.Fatal(err)
	}
	for _, h := range []*topo.Host{s.Host(1), s.Host(3)} {
		for _, fam := range s.Families() {
			s.checkVXLANLikeCalico(h, fam)
			s.checkOurVTEP(ds, h, fam)
		}
	}
}

// checkOurVTEP: the Node's tunnel address and MAC of a family, as calico-startup wrote them,
// are what Project Calico's felix needs to reach h: the MAC parses (felix uses net.ParseMAC)
// and equals the MAC of h's device, which is also the one Calico would derive; the address is
// h's device address, allocated in IPAM with calico-node's handle and attributes.
func (s *system) checkOurVTEP(ds *datastore.Client, h *topo.Host, fam int) {
	s.t.Helper()
	node, err := datastore.GetAs[*api.Node](s.ctx, ds, "", h.Name)
	if err != nil {
		s.t.Fatal(err)
	}
	addr, mac, handle, typ := node.Spec.IPv4VXLANTunnelAddr, node.Spec.VXLANTunnelMACAddr, "vxlan-tunnel-addr-", "vxlanTunnelAddress"
	if fam == 6 {
		addr, mac, handle, typ = node.Spec.IPv6VXLANTunnelAddr, node.Spec.VXLANTunnelMACAddrV6, "vxlan-v6-tunnel-addr-", "vxlanV6TunnelAddress"
	}
	dev, err := h.ReadVXLAN(s.ctx, fam)
	if err != nil || dev == nil {
		s.t.Fatalf("%s: reading the IPv%d VXLAN device: %v", h.Name, fam, err)
	}
	parsed, err := net.ParseMAC(mac)
	switch {
	case err != nil:
		s.t.Errorf("%s: Node MAC %q does not parse: %v", h.Name, mac, err)
	case parsed.String() != dev.MAC || dev.MAC != topo.CalicoVTEPMAC(h.Name, fam):
		s.t.Errorf("%s: Node MAC %s, device MAC %s, Calico's derived MAC %s", h.Name, mac, dev.MAC, topo.CalicoVTEPMAC(h.Name, fam))
	}
	if a, err := netip.ParseAddr(addr); err != nil || a != dev.TunnelAddr {
		s.t.Errorf("%s: Node tunnel address %q, device address %s", h.Name, addr, dev.TunnelAddr)
	}
	s.checkTunnelAllocation(ds, h.Name, addr, handle+h.Name, typ)
}

// checkTunnelAllocation: addr is allocated in its block under handle with calico-node's
// attributes (node, type).
func (s *system) checkTunnelAllocation(ds *datastore.Client, node, addr, handle, typ string) {
	s.t.Helper()
	a := netip.MustParseAddr(addr)
	kvs, _, err := ds.ListKV(s.ctx, datastore.BlockPrefix, 0)
	if err != nil {
		s.t.Fatal(err)
	}
	for _, kv := range kvs {
		b, err := datastore.Decode(kv.Key, kv.Value, kv.ModRevision)
		blk, ok := b.(*api.AllocationBlock)
		if err != nil || !ok {
			continue
		}
		cidr := netip.MustParsePrefix(blk.CIDR)
		if !cidr.Contains(a) {
			continue
		}
		ord := ordinal(cidr.Addr(), a)
		idx := blk.Allocations[ord]
		if idx == nil {
			s.t.Fatalf("%s: tunnel address %s is not allocated in %s", node, addr, blk.CIDR)
		}
		attr := blk.Attributes[*idx]
		if attr.HandleID == nil || *attr.HandleID != handle || attr.ActiveOwnerAttrs["node"] != node || attr.ActiveOwnerAttrs["type"] != typ {
			s.t.Errorf("%s: tunnel address %s allocated as %+v, want handle %s, node %s, type %s", node, addr, attr, handle, node, typ)
		}
		return
	}
	s.t.Errorf("%s: no block holds tunnel address %s", node, addr)
}

// ordinal is the index of a in the block starting at base.
func ordinal(base, a netip.Addr) int {
	b, x := base.As16(), a.As16()
	n := 0
	for i := 8; i < 16; i++ {
		n = n<<8 | int(x[i]-b[i])
	}
	return n
}
