package dataplane

import "testing"

// TestKernelWorkloadEndpointWithoutInterface (review of issue 23): a workload endpoint with no
// interfaceName (valid: the field is optional) is programmed or skipped without stopping the
// dataplane; its neighbour keeps being programmed.
func TestKernelWorkloadEndpointWithoutInterface(t *testing.T) {
	tp := newTopology(t)
	a := tp.addWorkload(t, "a", ifA, ipA)
	listenTCP(t, tp.host, "198.18.0.1", 8080)
	ka, va := rawWEP("a", ifA, ipA, "", `"allow-all"`)
	kx, vx := rawWEP("x", "", "10.65.0.77", "", `"allow-all"`)
	f := startEtcdFelix(t, tp, map[string]string{ka: va, kx: vx,
		"profiles/allow-all": `{"kind":"Profile","apiVersion":"projectcalico.org/v3","metadata":{"name":"allow-all"},
		  "spec":{"ingress":[{"action":"Allow"}],"egress":[{"action":"Allow"}]}}`})
	f.apply(f.put("globalnetworkpolicies/deny-a", `{"kind":"GlobalNetworkPolicy","apiVersion":"projectcalico.org/v3",
	  "metadata":{"name":"deny-a"},"spec":{"selector":"all()","types":["Egress"],"egress":[{"action":"Deny"}]}}`))
	check(t, "a deny written after the endpoint", expectation{"a -> host:8080", func() bool { return canTCP(t, a, "198.18.0.1", 8080) }, false})
}
