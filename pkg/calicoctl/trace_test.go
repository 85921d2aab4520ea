package calicoctl

import (
	"strings"
	"testing"
)

// traceObjects: host h1 with workloads a and b; a may send anywhere; b takes TCP 80.
const traceObjects = `apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: h1}
spec: {bgp: {ipv4Address: 198.18.0.1/24}}
---
apiVersion: projectcalico.org/v3
kind: WorkloadEndpoint
metadata: {name: h1-k8s-a-eth0, namespace: prod, labels: {app: a}}
spec: {orchestrator: k8s, workload: a, pod: a, node: h1, endpoint: eth0, interfaceName: cali0a, ipNetworks: [10.65.0.1/32]}
---
apiVersion: projectcalico.org/v3
kind: WorkloadEndpoint
metadata: {name: h1-k8s-b-eth0, namespace: prod, labels: {app: b}}
spec: {orchestrator: k8s, workload: b, pod: b, node: h1, endpoint: eth0, interfaceName: cali0b, ipNetworks: [10.65.0.2/32]}
---
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: allow-out}
spec: {selector: all(), types: [Egress], egress: [{action: Allow}]}
---
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: web}
spec: {selector: app == 'b', types: [Ingress], ingress: [{action: Allow, protocol: TCP, destination: {ports: [80]}}]}
`

// TestTrace: calicoctl trace prints the enforced and pending paths and exits 0 when both allow,
// 3 when the enforced policy denies, 4 when only a staged policy would deny; applying the staged
// policy points to calicoctl trace.
func TestTrace(t *testing.T) {
	h := newHarness(t)
	h.ok(traceObjects, "apply", "-f", "-")
	r := h.ok("", "trace", "prod/h1-k8s-a-eth0", "b", "--port", "80")
	for _, want := range []string{"Enforced: ALLOWED", "ingress of b: tier default -> GlobalNetworkPolicy web -> rule 0 -> allow",
		"Pending (staged policies enforced): ALLOWED"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("no %q in\n%s", want, r.stdout)
		}
	}
	if r = h.run("", "trace", "a", "10.65.0.2", "-p", "udp", "--port", "53"); r.code != exitDenied ||
		!strings.Contains(r.stdout, "ingress of prod/h1-k8s-b-eth0: tier default -> end of tier -> deny") {
		t.Errorf("udp/53: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = h.ok("apiVersion: projectcalico.org/v3\nkind: StagedGlobalNetworkPolicy\nmetadata: {name: lockdown}\n"+
		"spec: {order: 1, selector: app == 'b', types: [Ingress], ingress: [{action: Deny}]}\n", "apply", "-f", "-")
	if !strings.Contains(r.stderr, "StagedGlobalNetworkPolicy(lockdown) is stored but not enforced") || !strings.Contains(r.stderr, "calicoctl trace") {
		t.Errorf("apply of a staged policy: %q", r.stderr)
	}
	if r = h.run("", "trace", "a", "b", "--port", "80"); r.code != exitPendingDenied ||
		!strings.Contains(r.stdout, "ingress of b: tier default -> StagedGlobalNetworkPolicy lockdown -> rule 0 -> deny") {
		t.Errorf("with the staged deny: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, args := range [][]string{{"trace", "a"}, {"trace", "a", "b"}, {"trace", "a", "b", "-p", "foo", "--port", "1"},
		{"trace", "a", "nowhere", "--port", "80"}} {
		h.fail("", args...)
	}
}
