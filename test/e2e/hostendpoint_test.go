package e2e

import (
	"testing"
	"time"

	"github.com/calico-host/calico-host/test/e2e/topo"
)

const hostEndpoint = `apiVersion: projectcalico.org/v3
kind: HostEndpoint
metadata: {name: host-2-eth0, labels: {hep: host-2}}
spec: {node: host-2, interfaceName: eth0, expectedIPs: [198.18.0.2]}
`

const hostPolicy = `apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: host-2-services}
spec:
  selector: hep == 'host-2'
  types: [Ingress, Egress]
  ingress:
  - {action: Allow, protocol: TCP, source: {nets: [198.18.0.0/24]}, destination: {ports: [8080]}}
  egress:
  - {action: Allow}
`

// TestHostEndpoints: a host endpoint on eth0 denies traffic to the host by default except the
// failsafe ports (BGP and etcd keep working), policy opens chosen ports to chosen sources, and
// workload traffic forwarded through the host is unaffected.
func TestHostEndpoints(t *testing.T) {
	forModes(t, func(t *testing.T, mode topo.Mode) {
		requireBinaries(t)
		s := newSystem(t, topo.Options{Hosts: 3, Mode: mode}, topo.StartOptions{Felix: true})
		h1, h2 := s.Host(1), s.Host(2)
		s.serve(h2.NS, "host-2", 8080, 9000)
		s.serve(h1.NS, "host-1", 8080)
		a := s.workload(h1, "a", nil, 80)
		b := s.workload(h2, "b", nil, 80)
		toH2 := func(from *topo.Netns, name string, port int, want bool) topo.Probe {
			return toAddr(from, name, h2.Addr, "host-2", "tcp", port, want)
		}
		s.expect(30*time.Second, toH2(h1.NS, "host-1", 8080, true), toH2(s.Outside, "outside", 9000, true), tcp(a, b, 80, true))

		s.apply(hostEndpoint)
		s.expect(20*time.Second, toH2(h1.NS, "host-1", 8080, false), toH2(s.Outside, "outside", 9000, false),
			toAddr(h2.NS, "host-2", h1.Addr, "host-1", "tcp", 8080, false), // egress denied too
			tcp(a, b, 80, true), tcp(b, a, 80, true)) // forwarded workload traffic is not host traffic

		s.apply(hostPolicy)
		s.expect(20*time.Second, toH2(h1.NS, "host-1", 8080, true), toH2(s.Host(3).NS, "host-3", 8080, true),
			toH2(h1.NS, "host-1", 9000, false), toH2(s.Outside, "outside", 8080, false),
			toAddr(h2.NS, "host-2", h1.Addr, "host-1", "tcp", 8080, true), tcp(a, b, 80, true))

		// Failsafes: host-2 still talks BGP and etcd, so it still gets updates.
		if mode == topo.ModeBGP {
			if err := h2.WaitBGPEstablished(s.ctx, 2); err != nil {
				t.Fatal(err)
			}
		}
		if err := h2.FelixReady(s.ctx); err != nil {
			t.Fatal(err)
		}
		s.calicoctl("delete", "hostendpoint", "host-2-eth0")
		s.expect(20*time.Second, toH2(s.Outside, "outside", 9000, true), toH2(h1.NS, "host-1", 9000, true))
	})
}
