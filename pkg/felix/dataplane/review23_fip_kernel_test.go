package dataplane

import (
	"fmt"
	"testing"

	"github.com/calico-host/calico-host/pkg/api"
)

// rawOpenStackWEP is an OpenStack workload endpoint of host1 (ipNATs are honoured for them).
func rawOpenStackWEP(vm, iface, ip, nats string) (string, string) {
	name := api.WorkloadEndpointName("host1", "openstack", vm, "eth0")
	return "workloadendpoints/openstack/" + name, fmt.Sprintf(`{"kind":"WorkloadEndpoint","apiVersion":"projectcalico.org/v3",
	  "metadata":{"name":%q,"namespace":"openstack"},
	  "spec":{"orchestrator":"openstack","node":"host1","workload":%q,"endpoint":"eth0","interfaceName":%q,
	  "ipNetworks":["%s/32"],"profiles":["allow-all"],"ipNATs":[%s]}}`, name, vm, iface, ip, nats)
}

// TestKernelFloatingIPMappedAddress (review of issue 23, point 2): an OpenStack endpoint whose
// floating IP is an IPv4-mapped IPv6 address (::ffff:198.18.5.5, valid: it is an IPv4 address
// to the validation, as to Project Calico's) lands in the IPv4 table's floating IP chains (static
// chains) as a 16-byte NAT target; the chains are refused and, being static and holding no
// quarantinable user value, every later apply fails: a deny written afterwards is never
// enforced. One endpoint freezes the host's dataplane.
func TestKernelFloatingIPMappedAddress(t *testing.T) {
	tp := newTopology(t)
	a := tp.addWorkload(t, "a", ifA, ipA)
	tp.addWorkload(t, "b", ifB, ipB)
	listenTCP(t, tp.host, "198.18.0.1", 8080)
	ka, va := rawWEP("a", ifA, ipA, "", `"allow-all"`)
	f := startEtcdFelix(t, tp, map[string]string{ka: va,
		"profiles/allow-all": `{"kind":"Profile","apiVersion":"projectcalico.org/v3","metadata":{"name":"allow-all"},
		  "spec":{"ingress":[{"action":"Allow"}],"egress":[{"action":"Allow"}]}}`})
	f.k.requireProgrammed()
	kb, vb := rawOpenStackWEP("vm1", ifB, ipB, `{"internalIP":"`+ipB+`","externalIP":"::ffff:198.18.5.5"}`)
	f.apply(f.put(kb, vb))
	f.apply(f.put("globalnetworkpolicies/deny-a", `{"kind":"GlobalNetworkPolicy","apiVersion":"projectcalico.org/v3",
	  "metadata":{"name":"deny-a"},"spec":{"selector":"all()","types":["Egress"],"egress":[{"action":"Deny"}]}}`))
	check(t, "a deny written after the endpoint", expectation{"a -> host:8080", func() bool { return canTCP(t, a, "198.18.0.1", 8080) }, false})
}
