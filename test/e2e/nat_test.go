package e2e

import (
	"testing"
	"time"

	"github.com/calico-host/calico-host/test/e2e/topo"
)

// TestNATOutgoing: workloads reach the outside (which has no route to the pools) through their
// host's address while the pool has natOutgoing, not without it; traffic inside the pool is
// never NATed.
func TestNATOutgoing(t *testing.T) {
	forModes(t, func(t *testing.T, mode topo.Mode) {
		requireBinaries(t)
		s := newSystem(t, topo.Options{Hosts: 2, Mode: mode}, topo.StartOptions{Felix: true})
		s.serve(s.Outside, "outside", 80)
		a := s.workload(s.Host(1), "a", nil, 80)
		b := s.workload(s.Host(2), "b", nil, 80)
		out := func(w *topo.Workload, want bool) topo.Probe {
			p := toAddr(w.NS, w.Name, topo.OutsideAddr, "outside", "tcp", 80, want)
			p.WantClient = w.Host.Addr
			return p
		}
		inPool := tcp(a, b, 80, true)
		inPool.WantClient = a.IP(4)
		s.expect(30*time.Second, out(a, true), out(b, true), inPool, toAddr(a.NS, "a", topo.OutsideAddr, "outside", "udp", 80, true))

		s.setNATOutgoing(false)
		s.expect(20*time.Second, out(a, false), out(b, false), inPool)
		s.setNATOutgoing(true)
		s.expect(20*time.Second, out(a, true), out(b, true), inPool)
	})
}

func (s *system) setNATOutgoing(on bool) {
	s.t.Helper()
	s.setPoolNATOutgoing("default-ipv4-ippool", on)
}
