package dataplane

import (
	"net/netip"
	"testing"

	"github.com/calico-host/calico-host/pkg/felix/calc"
)

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

// TestKernelSpoofingEndpointWithoutInterface (review of issue 23, point 2): an endpoint with no
// interfaceName but allowSpoofedSourcePrefixes (workloadSourceSpoofing Any) cannot be rendered
// into the anti-spoofing chain; the planner's refusal names no element, so the quarantine takes
// every spoofing endpoint of the chain: a, whose exception is fine, has its traffic dropped.
func TestKernelSpoofingEndpointWithoutInterface(t *testing.T) {
	tp := newTopology(t)
	a := tp.addWorkload(t, "a", ifA, ipA)
	b := tp.addWorkload(t, "b", ifB, ipB)
	listenTCP(t, b, ipB, 8080)
	open := profile("open", []calc.Rule{allow()}, []calc.Rule{allow()})
	spoofer := wep("a", ifA, []string{ipA + "/32"}, withProfiles("open"))
	spoofer.Endpoint.AllowSpoofedSourcePrefixes = []netip.Prefix{pfx("10.65.9.0/24")}
	noIface := wep("x", "", []string{"10.65.0.77/32"}, withProfiles("open"))
	noIface.Endpoint.AllowSpoofedSourcePrefixes = []netip.Prefix{pfx("10.65.8.0/24")}
	startDataplane(t, tp, Config{WorkloadSourceSpoofing: true}, open, spoofer, noIface,
		wep("b", ifB, []string{ipB + "/32"}, withProfiles("open")))
	check(t, "a spoofing endpoint beside one without an interface",
		expectation{"a -> b", func() bool { return canTCP(t, a, ipB, 8080) }, true})
}
