package e2e

import (
	"testing"
	"time"

	"github.com/calico-host/calico-host/test/e2e/topo"
)

const webIngressPolicy = `apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: web-ingress}
spec:
  selector: role == 'web'
  types: [Ingress]
  ingress:
  - {action: Allow, protocol: TCP, source: {selector: role == 'client'}, destination: {ports: [80, 8080]}}
  - {action: Allow, protocol: ICMP, source: {selector: role == 'client'}}
`

const clientEgressPolicy = `apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: client-egress, namespace: default}
spec:
  selector: role == 'client'
  order: 10
  types: [Egress]
  egress:
  - {action: Deny, protocol: TCP, destination: {ports: [8080]}}
  - {action: Allow}
`

// TestPolicyAcrossHosts: policy selectors match endpoints on other hosts, in both directions,
// and follow label changes and deletions.
func TestPolicyAcrossHosts(t *testing.T) {
	forModes(t, func(t *testing.T, mode topo.Mode) {
		requireBinaries(t)
		s := newSystem(t, topo.Options{Hosts: 3, Mode: mode}, topo.StartOptions{Felix: true})
		web := s.workload(s.Host(1), "web", map[string]string{"role": "web"}, 80, 8080)
		client := s.workload(s.Host(2), "client", map[string]string{"role": "client"}, 80)
		other := s.workload(s.Host(3), "other", map[string]string{"role": "other"}, 80)
		local := s.workload(s.Host(1), "local", map[string]string{"role": "client"}, 80)
		s.expect(30*time.Second, tcp(client, web, 80, true), tcp(other, web, 80, true), tcp(web, other, 80, true))

		s.apply(webIngressPolicy)
		s.expect(20*time.Second,
			tcp(client, web, 80, true), tcp(client, web, 8080, true), icmp(client, web, true), tcp(local, web, 80, true),
			tcp(other, web, 80, false), tcp(other, web, 8080, false), icmp(other, web, false), udp(client, web, 80, false),
			tcp(web, other, 80, true)) // egress from web is not restricted

		s.apply(clientEgressPolicy)
		s.expect(20*time.Second, tcp(client, web, 80, true), tcp(client, web, 8080, false), tcp(local, web, 8080, false),
			tcp(client, other, 80, true))

		// A label change on host 3 opens web's ingress on host 1.
		if err := other.SetLabels(s.ctx, map[string]string{"role": "client"}); err != nil {
			t.Fatal(err)
		}
		s.expect(20*time.Second, tcp(other, web, 80, true), tcp(other, web, 8080, false))

		s.calicoctl("delete", "globalnetworkpolicy", "web-ingress")
		s.calicoctl("delete", "networkpolicy", "client-egress", "-n", "default")
		s.expect(20*time.Second, tcp(client, web, 8080, true), udp(client, web, 80, true), tcp(web, client, 80, true))
	})
}
