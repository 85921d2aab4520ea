package e2e

import (
	"testing"
	"time"

	"github.com/calico-host/calico-host/test/e2e/topo"
)

// TestBGPRoutingWithoutFelix: calico-startup, calico-confd and BIRD alone route workloads across
// hosts (no policy is programmed, so everything is allowed).
func TestBGPRoutingWithoutFelix(t *testing.T) {
	requireBinaries(t)
	s := newSystem(t, topo.Options{Hosts: 2, Mode: topo.ModeBGP}, topo.StartOptions{})
	a := s.workload(s.Host(1), "a", nil, 80)
	b := s.workload(s.Host(2), "b", nil, 80)
	s.expect(30*time.Second, tcp(a, b, 80, true), tcp(b, a, 80, true), icmp(a, b, true), udp(b, a, 80, true))
}
