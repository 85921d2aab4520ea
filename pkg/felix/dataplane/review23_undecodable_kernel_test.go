package dataplane

import (
	"strings"
	"testing"
)

// TestKernelUndecodableObjectsNeverWiden (review of issue 23, point 1): objects that do not even
// decode (one field of the wrong JSON shape, as etcdctl, an older or a newer tool could write)
// are absent, and their absence widens what is allowed, the same hole as the invalid objects of
// TestKernelInvalidObjectsNeverWiden by another path. Each object is first written valid (the
// deny holds), then with one bad field:
//   - a GlobalNetworkSet with a numeric label value ("rev": 2): the Deny rule selecting it
//     matches nothing;
//   - a GlobalNetworkPolicy with one reversed port range ("9000:8000", decoded since 8fd2817;
//     before it, the policy decoded and failed validation, so it was kept as a drop): its Deny
//     vanishes;
//   - a Tier whose order is a string: it becomes a missing tier, after the default tier, whose
//     Allow now decides before the tier's Deny.
func TestKernelUndecodableObjectsNeverWiden(t *testing.T) {
	const ifC, ipC, ifD, ipD = "cali0000000000c", "10.65.0.3", "cali0000000000d", "10.65.0.4"
	tp := newTopology(t)
	a := tp.addWorkload(t, "a", ifA, ipA)
	for _, w := range []struct{ name, iface, ip string }{{"b", ifB, ipB}, {"c", ifC, ipC}, {"d", ifD, ipD}} {
		listenTCP(t, tp.addWorkload(t, w.name, w.iface, w.ip), w.ip, 8080)
	}
	gns := func(extra string) string {
		return `{"kind":"GlobalNetworkSet","apiVersion":"projectcalico.org/v3",
		  "metadata":{"name":"blocked","labels":{"role":"blocked"` + extra + `}},"spec":{"nets":["` + ipA + `/32"]}}`
	}
	gnp := func(ports string) string {
		return `{"kind":"GlobalNetworkPolicy","apiVersion":"projectcalico.org/v3","metadata":{"name":"deny-port"},
		  "spec":{"selector":"role == 't-port'","types":["Ingress"],
		  "ingress":[{"action":"Deny","source":{"nets":["` + ipA + `/32"]}},
		             {"action":"Deny","protocol":"TCP","destination":{"ports":[` + ports + `]}}]}}`
	}
	tier := func(order string) string {
		return `{"kind":"Tier","apiVersion":"projectcalico.org/v3","metadata":{"name":"sec"},
		  "spec":{"order":` + order + `,"defaultAction":"Pass"}}`
	}
	values := map[string]string{
		"profiles/allow-all": `{"kind":"Profile","apiVersion":"projectcalico.org/v3","metadata":{"name":"allow-all"},
		  "spec":{"ingress":[{"action":"Allow"}],"egress":[{"action":"Allow"}]}}`,
		"globalnetworksets/blocked": gns(""),
		"globalnetworkpolicies/deny-set": `{"kind":"GlobalNetworkPolicy","apiVersion":"projectcalico.org/v3",
		  "metadata":{"name":"deny-set"},"spec":{"selector":"role == 't-set'","types":["Ingress"],
		  "ingress":[{"action":"Deny","source":{"selector":"role == 'blocked'"}},{"action":"Allow"}]}}`,
		"globalnetworkpolicies/deny-port": gnp(`"9000:9001"`),
		"tiers/sec":                       tier("10"),
		"globalnetworkpolicies/sec.deny-a": `{"kind":"GlobalNetworkPolicy","apiVersion":"projectcalico.org/v3",
		  "metadata":{"name":"sec.deny-a"},"spec":{"tier":"sec","selector":"role == 't-tier'","types":["Ingress"],
		  "ingress":[{"action":"Deny","source":{"nets":["` + ipA + `/32"]}}]}}`,
		"globalnetworkpolicies/default.allow-t-tier": `{"kind":"GlobalNetworkPolicy","apiVersion":"projectcalico.org/v3",
		  "metadata":{"name":"default.allow-t-tier"},"spec":{"tier":"default","selector":"role == 't-tier'","types":["Ingress"],
		  "ingress":[{"action":"Allow"}]}}`,
	}
	for _, w := range []struct{ ctr, iface, ip, labels string }{
		{"a", ifA, ipA, ""},
		{"b", ifB, ipB, `"role":"t-set"`},
		{"c", ifC, ipC, `"role":"t-port"`},
		{"d", ifD, ipD, `"role":"t-tier"`},
	} {
		k, v := rawWEP(w.ctr, w.iface, w.ip, w.labels, `"allow-all"`)
		values[k] = v
	}
	f := startEtcdFelix(t, tp, values)
	f.k.requireProgrammed()
	tcp := func(to string) func() bool { return func() bool { return canTCP(t, a, to, 8080) } }
	check(t, "valid objects",
		expectation{"a -> b (deny by set)", tcp(ipB), false},
		expectation{"a -> c (deny by policy)", tcp(ipC), false},
		expectation{"a -> d (deny by tier sec)", tcp(ipD), false})

	f.apply(f.put("globalnetworksets/blocked", gns(`,"rev":2`)))
	f.apply(f.put("globalnetworkpolicies/deny-port", gnp(`"9000:8000"`)))
	f.apply(f.put("tiers/sec", tier(`"10"`)))
	check(t, "undecodable objects",
		expectation{"a -> b (set with a numeric label)", tcp(ipB), false},
		expectation{"a -> c (policy with a reversed port range)", tcp(ipC), false},
		expectation{"a -> d (tier with a string order)", tcp(ipD), false})
}

// TestKernelUndecodableHostEndpointStaysProtected: a host endpoint whose named port does not fit
// a uint16 does not decode; absent, its interface is unprotected and a port its profile never
// allowed opens (an invalid one stays protected: TestKernelInvalidHostEndpointStaysProtected).
func TestKernelUndecodableHostEndpointStaysProtected(t *testing.T) {
	tp := newTopology(t)
	listenTCP(t, tp.host, "198.18.0.1", 9090)
	hep := func(port string) string {
		return `{"kind":"HostEndpoint","apiVersion":"projectcalico.org/v3","metadata":{"name":"host1-eth0"},
		  "spec":{"node":"host1","interfaceName":"eth0","expectedIPs":["198.18.0.1"],"profiles":["only-8080"],
		  "ports":[{"name":"web","protocol":"TCP","port":` + port + `}]}}`
	}
	f := startEtcdFelix(t, tp, map[string]string{
		"profiles/only-8080": `{"kind":"Profile","apiVersion":"projectcalico.org/v3","metadata":{"name":"only-8080"},
		  "spec":{"ingress":[{"action":"Allow","protocol":"TCP","destination":{"ports":[8080]}}],"egress":[{"action":"Allow"}]}}`,
		"hostendpoints/host1-eth0": hep("8080"),
	})
	f.k.requireProgrammed()
	port := func(p int) func() bool { return func() bool { return canTCP(t, tp.fabric, "198.18.0.1", p) } }
	check(t, "valid host endpoint", expectation{"fabric -> host:9090", port(9090), false})
	f.apply(f.put("hostendpoints/host1-eth0", strings.Replace(hep("8080"), "8080}", "80800}", 1)))
	check(t, "host endpoint with a port that is not a uint16", expectation{"fabric -> host:9090", port(9090), false})
}
