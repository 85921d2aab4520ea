package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/flowlog"
	"github.com/calico-host/calico-host/test/e2e/topo"
)

// flowForwardPolicy is host-1's uplink host endpoint and its policy for the traffic it forwards
// (applyOnForward): in, TCP 82 denied; out, TCP 81 to the outside denied; the rest allowed.
const flowForwardPolicy = `apiVersion: projectcalico.org/v3
kind: HostEndpoint
metadata: {name: host-1-eth0, labels: {hep: host-1}}
spec: {node: host-1, interfaceName: eth0, expectedIPs: [198.18.0.1]}
---
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: forward}
spec:
  selector: hep == 'host-1'
  applyOnForward: true
  types: [Ingress, Egress]
  ingress:
  - {action: Deny, protocol: TCP, destination: {ports: [82]}}
  - {action: Allow}
  egress:
  - {action: Deny, protocol: TCP, destination: {nets: [198.18.1.0/24], ports: [81]}}
  - {action: Allow}
`

// TestFlowLogsHostEndpointForward: traffic that host-1 forwards through its uplink's host
// endpoint, to and from its workload, is reported with the rule of the host endpoint's
// applyOnForward policy that decided it: a connection from host-2's workload denied on the way
// in (reporter Dst), connections to the outside allowed and denied on the way out (reporter
// Src). An allowed connection in crosses the host endpoint's policy and then the workload's
// profile; its flow names the last decision, the profile's (a direction's latest path, as
// Project Calico's collector replaces a rule trace by a later one).
func TestFlowLogsHostEndpointForward(t *testing.T) {
	requireBinaries(t)
	s := newSystem(t, topo.Options{Hosts: 2, Mode: topo.ModeBGP, FlowLogsFlush: flowFlush}, topo.StartOptions{Felix: true})
	web := s.workload(s.Host(1), "web", map[string]string{"role": "web"}, 80, 82)
	client := s.workload(s.Host(2), "client", map[string]string{"role": "client"})
	s.serve(s.Outside, "outside", 80, 81)
	toOutside := func(port int, want bool) topo.Probe {
		return toAddr(web.NS, web.Name, topo.OutsideAddr, "outside", "tcp", port, want)
	}
	s.expect(30*time.Second, tcp(client, web, 82, true), toOutside(81, true))
	s.apply(flowForwardPolicy)
	s.expect(30*time.Second, tcp(client, web, 82, false), toOutside(81, false))
	// Only now are the allowed connections sure to cross the host endpoint's chains (a denied
	// probe waits out its timeout, so the policy may have come in while an allowed one ran).
	s.expect(30*time.Second, tcp(client, web, 80, true), toOutside(80, true))

	fwd := func(rule int, action flowlog.Action) string {
		return fmt.Sprintf("%v GlobalNetworkPolicy default/forward rule %d %v", action, rule, action)
	}
	out := func(port int) string {
		return fmt.Sprintf("%v %s>%s tcp/%d", flowlog.Src, web.ContainerID, flowlog.PublicNetwork, port)
	}
	want := map[string]string{
		flowID(flowlog.Dst, client, web, "tcp", 82): fwd(0, flowlog.Deny),
		out(81): fwd(0, flowlog.Deny),
		out(80): fwd(1, flowlog.Allow),
		flowID(flowlog.Dst, client, web, "tcp", 80): "Allow Profile /" + topo.CNINetwork + " rule 0 Allow",
	}
	s.eventually(10*flowFlush+20*time.Second, "host-1's flows of the forwarded connections", func() error {
		return matchFlows(readFlows(t, s.Host(1).Dir), want)
	})
}
