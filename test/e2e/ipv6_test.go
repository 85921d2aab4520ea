package e2e

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/test/e2e/topo"
)

// web6Policy lets clients reach web over TCP 80 and ICMPv6 (ICMP for IPv4), and one address
// (set per test) reach web's 8080: selectors and nets resolved across hosts in both families.
const web6Policy = `apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: web6}
spec:
  selector: role == 'web'
  types: [Ingress]
  ingress:
  - {action: Allow, protocol: TCP, source: {selector: role == 'client'}, destination: {ports: [80]}}
  - {action: Allow, protocol: ICMPv6, source: {selector: role == 'client'}}
  - {action: Allow, protocol: ICMP, source: {selector: role == 'client'}}
  - {action: Allow, protocol: TCP, source: {nets: ["%s"]}, destination: {ports: [8080]}}
`

// TestIPv6 runs IPv6 end to end on IPv6-only hosts (no IPv4 address, pool or session; etcd over
// IPv6) and on dual-stack hosts, in BGP and VXLAN mode: BIRD sessions between the hosts' IPv6
// addresses and the IPv6 blocks they learn, or vxlan-v6.calico with the entries Project
// Calico's felix would program; IPv6 workloads from the CNI plugin (calico-ipam assign_ipv6);
// TCP, UDP and ICMPv6 across hosts; policy allowing and denying across hosts by selector and by
// IPv6 net; NAT outgoing of an IPv6 pool (Project Calico masquerades IPv6 too).
func TestIPv6(t *testing.T) {
	for _, stack := range []string{"v6only", "dual"} {
		for _, mode := range []topo.Mode{topo.ModeBGP, topo.ModeVXLAN} {
			t.Run(stack+"/"+string(mode), func(t *testing.T) {
				requireBinaries(t)
				testIPv6(t, topo.Options{Hosts: 2, Mode: mode, IPv6: true, IPv6Only: stack == "v6only"})
			})
		}
	}
}

func testIPv6(t *testing.T, o topo.Options) {
	s := newSystem(t, o, topo.StartOptions{Felix: true})
	s.serve(s.Outside, "outside", 80)
	h1, h2 := s.Host(1), s.Host(2)
	web := s.workload(h1, "web", map[string]string{"role": "web"}, 80, 8080)
	client := s.workload(h2, "client", map[string]string{"role": "client"}, 80)
	other := s.workload(h2, "other", map[string]string{"role": "other"}, 80)
	for _, w := range []*topo.Workload{web, client, other} {
		if !w.IP(6).IsValid() || w.IP(4).IsValid() == o.IPv6Only {
			t.Fatalf("%s has addresses %v (IPv6-only %v)", w.Name, w.IPs, o.IPv6Only)
		}
	}
	s.checkIPv6Routing(web, client)
	s.expect(30*time.Second, v6(tcp(client, web, 80, true), web), v6(udp(client, web, 80, true), web),
		v6(icmp(client, web, true), web), v6(tcp(web, other, 80, true), other), v6(tcp(other, web, 8080, true), web))

	s.apply(fmt.Sprintf(web6Policy, netip.PrefixFrom(other.IP(6), 128)))
	s.apply(clientEgressPolicy) // clients: TCP 8080 denied, the rest allowed
	probes := []topo.Probe{
		v6(tcp(client, web, 80, true), web), v6(icmp(client, web, true), web), v6(tcp(client, web, 8080, false), web),
		v6(tcp(other, web, 80, false), web), v6(icmp(other, web, false), web), v6(udp(client, web, 80, false), web),
		v6(tcp(other, web, 8080, true), web), // allowed by its /128
		v6(tcp(web, other, 80, true), other), // web's egress is not restricted
	}
	if !o.IPv6Only {
		probes = append(probes, tcp(client, web, 80, true), tcp(other, web, 80, false), tcp(other, web, 8080, false))
	}
	s.expect(20*time.Second, probes...)
	s.checkNATOutgoing6(web)
}

// checkIPv6Routing: in BGP mode each host has a session per peer and family, on the peers' IPv6
// addresses for IPv6, and the kernel routes the other host's IPv6 block through it; in VXLAN
// mode vxlan-v6.calico holds what Project Calico's felix would program.
func (s *system) checkIPv6Routing(a, b *topo.Workload) {
	s.t.Helper()
	if s.Opts.Mode == topo.ModeVXLAN {
		for _, h := range s.Hosts {
			for _, fam := range s.Families() {
				s.checkVXLANLikeCalico(h, fam)
			}
		}
		return
	}
	for _, h := range s.Hosts {
		s.checkMeshNeighbours(h)
	}
	s.checkBIRDRoute(b.Host, a.IP(6), a.Host.Addr6)
	s.checkBIRDRoute(a.Host, b.IP(6), b.Host.Addr6)
}

// checkMeshNeighbours: h's BIRD has one Established session per other host and family, whose
// neighbour is that host's address of the family.
func (s *system) checkMeshNeighbours(h *topo.Host) {
	s.t.Helper()
	sessions, err := h.BGPSessions(s.ctx)
	if err != nil {
		s.t.Fatal(err)
	}
	got := map[string]bool{}
	for name, p := range sessions {
		if p.BGPState != "Established" {
			s.t.Errorf("%s: session %s is %s", h.Name, name, p.BGPState)
		}
		got[p.NeighborAddress] = true
	}
	for _, o := range s.Hosts {
		for _, a := range []netip.Addr{o.Addr, o.Addr6} {
			if o != h && a.IsValid() && !got[a.String()] {
				s.t.Errorf("%s: no BGP session with %s (%s); sessions %v", h.Name, o.Name, a, sessions)
			}
		}
	}
}

// checkBIRDRoute waits until h's kernel routes ip through a BIRD route via gw.
func (s *system) checkBIRDRoute(h *topo.Host, ip, gw netip.Addr) {
	s.t.Helper()
	s.eventually(20*time.Second, fmt.Sprintf("%s: BIRD route to %s via %s", h.Name, ip, gw), func() error {
		fam := 4
		if ip.Is6() {
			fam = 6
		}
		routes, err := h.Routes(s.ctx, fam, "proto", "bird")
		if err != nil {
			return err
		}
		for _, r := range routes {
			if p, err := netip.ParsePrefix(r.Dst); err == nil && p.Contains(ip) && p.Bits() < ip.BitLen() && r.Gateway == gw.String() {
				return nil
			}
		}
		return fmt.Errorf("routes %v", routes)
	})
}

// checkNATOutgoing6: the outside (no route to the pools) answers the workload's IPv6 probe only
// while the IPv6 pool has natOutgoing, and then sees the host's IPv6 address.
func (s *system) checkNATOutgoing6(w *topo.Workload) {
	s.t.Helper()
	out := func(want bool) topo.Probe {
		p := toAddr(w.NS, w.Name, topo.OutsideAddr6, "outside(v6)", "tcp", 80, want)
		p.WantClient = w.Host.Addr6
		return p
	}
	s.expect(10*time.Second, out(false))
	s.setPoolNATOutgoing("default-ipv6-ippool", true)
	s.expect(20*time.Second, out(true))
	s.setPoolNATOutgoing("default-ipv6-ippool", false)
	s.expect(20*time.Second, out(false))
}

func (s *system) setPoolNATOutgoing(name string, on bool) {
	s.t.Helper()
	ds, err := s.Datastore()
	if err != nil {
		s.t.Fatal(err)
	}
	pool, err := datastore.GetAs[*api.IPPool](s.ctx, ds, "", name)
	if err != nil {
		s.t.Fatal(err)
	}
	pool.Spec.NATOutgoing = on
	if _, err := ds.Update(s.ctx, pool); err != nil {
		s.t.Fatal(err)
	}
}

// checkVXLANLikeCalico compares h's VXLAN state of a family with what Project Calico's felix
// would program there from the same datastore (topo.CalicoVXLAN), the known differences set
// aside (diffVXLAN).
func (s *system) checkVXLANLikeCalico(h *topo.Host, fam int) {
	s.t.Helper()
	var differences []string
	s.eventually(20*time.Second, fmt.Sprintf("%s: IPv%d VXLAN state as Project Calico's felix programs it", h.Name, fam), func() error {
		want, err := s.CalicoVXLAN(s.ctx, h.Name, fam)
		if err != nil {
			return err
		}
		got, err := h.ReadVXLAN(s.ctx, fam)
		if err != nil {
			return err
		}
		if want == nil || got == nil || len(want.Routes) == 0 {
			return fmt.Errorf("want %+v, got %+v", want, got)
		}
		differences, err = diffVXLAN(*want, *got)
		return err
	})
	s.t.Logf("%s IPv%d VXLAN as Project Calico's felix would program it, but for the known differences %q", h.Name, fam, differences)
}

// Known differences between our felix's VXLAN state and Project Calico's, reported (the
// dataplane is being rewritten elsewhere) and set aside by diffVXLAN, which logs them:
//
//  1. routes through the device carry no route MTU; Calico writes them with the device MTU as
//     route MTU (same packets: the device MTU applies anyway). Both use DeviceRouteProtocol
//     (3, "boot").
//
// The blackholes of this host's own VXLAN blocks ("blackhole <block> proto 80") are the same.
func diffVXLAN(want, got topo.VXLANState) (differences []string, err error) {
	n := 0
	for i, r := range want.Routes {
		if j := strings.Index(r, " mtu "); j >= 0 {
			r = r[:j]
		}
		if r != want.Routes[i] {
			n++
		}
		want.Routes[i] = r
	}
	if n > 0 {
		differences = append(differences, fmt.Sprintf("%d routes: no route MTU (Calico: mtu %d)", n, want.MTU))
	}
	w, g := fmt.Sprintf("%+v", want), fmt.Sprintf("%+v", got)
	if w != g {
		return differences, fmt.Errorf("differ:\nProject Calico: %s\nours:           %s", w, g)
	}
	return differences, nil
}
