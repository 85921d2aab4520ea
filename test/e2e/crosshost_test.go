package e2e

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/calico-host/calico-host/test/e2e/topo"
)

// forModes runs fn as one subtest per routing mode.
func forModes(t *testing.T, fn func(t *testing.T, mode topo.Mode)) {
	for _, m := range []topo.Mode{topo.ModeBGP, topo.ModeVXLAN} {
		t.Run(string(m), func(t *testing.T) { fn(t, m) })
	}
}

// TestCrossHost: workloads on three hosts reach each other (same host and across hosts) over
// TCP, UDP and ICMP, in IPv4 and IPv6, under the network's default profile.
func TestCrossHost(t *testing.T) {
	forModes(t, func(t *testing.T, mode topo.Mode) {
		requireBinaries(t)
		s := newSystem(t, topo.Options{Hosts: 3, Mode: mode, IPv6: true}, topo.StartOptions{Felix: true})
		a := s.workload(s.Host(1), "a1", nil, 80)
		b := s.workload(s.Host(1), "b1", nil, 80)
		c := s.workload(s.Host(2), "c2", nil, 80)
		d := s.workload(s.Host(3), "d3", nil, 80)
		probes := allPairs(80, a, b, c, d)
		probes = append(probes, udp(a, c, 80, true), udp(d, b, 80, true), icmp(c, d, true), icmp(a, b, true))
		for _, p := range []struct{ from, to *topo.Workload }{{a, c}, {c, d}, {d, b}} {
			probes = append(probes, v6(tcp(p.from, p.to, 80, true), p.to), v6(icmp(p.from, p.to, true), p.to))
		}
		s.expect(30*time.Second, probes...)
		s.checkNotified()
	})
}

// checkNotified asserts every daemon told systemd it is ready and has a status line.
func (s *system) checkNotified() {
	s.t.Helper()
	for _, h := range s.Hosts {
		for _, p := range []*topo.Proc{h.Startup, h.Confd, h.Felix} {
			if p == nil {
				continue
			}
			s.eventually(20*time.Second, p.Name+" READY=1", func() error {
				if !p.Notify.Ready() || p.Notify.Status() == "" {
					return fmt.Errorf("ready %v, status %q", p.Notify.Ready(), p.Notify.Status())
				}
				return nil
			})
			s.t.Logf("%s: STATUS=%s", p.Name, p.Notify.Status())
		}
	}
}

// v6 turns a probe to a workload into one to its IPv6 address.
func v6(p topo.Probe, to *topo.Workload) topo.Probe {
	p.To, p.ToName = to.IP(6), to.Name+"(v6)"
	if !p.To.IsValid() {
		p.To = netip.IPv6Unspecified()
	}
	return p
}
