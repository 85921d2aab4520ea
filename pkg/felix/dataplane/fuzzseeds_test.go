package dataplane

// fuzzSeeds start FuzzPolicyToKernel: kinds index fuzzKeys (0 GNP, 1 NP, 2 profile, 3 global
// network set, 4 network set, 5 the local workload's profile).
var fuzzSeeds = []struct {
	kind uint8
	json string
}{
	{0, `{"kind":"GlobalNetworkPolicy","apiVersion":"projectcalico.org/v3","metadata":{"name":"fz"},"spec":{"selector":"role == 'web'","order":10,
	  "ingress":[{"action":"Allow","protocol":"TCP","source":{"selector":"role == 'db'","nets":["10.65.1.0/24","fd5c::/64"]},"destination":{"ports":[80,"http","1000:2000"]}},
	  {"action":"Deny","protocol":"UDP","notProtocol":"TCP","source":{"notNets":["10.0.0.0/8"],"notPorts":[53]}},
	  {"action":"Log"},{"action":"Deny","protocol":"ICMP","icmp":{"type":8,"code":0},"notICMP":{"type":3,"code":1}},
	  {"action":"Pass","ipVersion":6,"protocol":"ICMPv6","icmp":{"type":128}}],
	  "egress":[{"action":"Allow","destination":{"namespaceSelector":"all()","selector":"has(role)"}},{"action":"Deny","destination":{"serviceAccounts":{"names":["a"]}}}]}}`},
	{0, `{"kind":"GlobalNetworkPolicy","apiVersion":"projectcalico.org/v3","metadata":{"name":"fz"},"spec":{"selector":"((((role == 'web'))))","types":["Ingress"],
	  "ingress":[{"action":"Deny","source":{"nets":["10.1.0.0/99"]}},{"action":"Allow"}]}}`},
	{0, `{"kind":"GlobalNetworkPolicy","apiVersion":"projectcalico.org/v3","metadata":{"name":"fz"},"spec":{"selector":"app in {'fz','x'} && !has(foo)","doNotTrack":true,"applyOnForward":true,
	  "ingress":[{"action":"Allow","protocol":"SCTP","destination":{"ports":[1,2,3,5,8,13,21,34,55,89,144,233,377,610,987,1597]}}]}}`},
	{1, `{"kind":"NetworkPolicy","apiVersion":"projectcalico.org/v3","metadata":{"name":"fz","namespace":"ns1"},"spec":{"selector":"all()","types":["Egress"],
	  "egress":[{"action":"Allow","protocol":17,"destination":{"selector":"role == 'db'","ports":["http"]}},{"action":"Deny","destination":{"nets":["0.0.0.0/0","::/0"]}}]}}`},
	{2, `{"kind":"Profile","apiVersion":"projectcalico.org/v3","metadata":{"name":"fz"},"spec":{"ingress":[{"action":"Allow","source":{"selector":"role == 'web'"}}],"labelsToApply":{"p":"fz"}}}`},
	{3, `{"kind":"GlobalNetworkSet","apiVersion":"projectcalico.org/v3","metadata":{"name":"fz","labels":{"role":"db"}},"spec":{"nets":["10.66.0.0/16","10.66.1.1/32","fd5c:1::/48"]}}`},
	{4, `{"kind":"NetworkSet","apiVersion":"projectcalico.org/v3","metadata":{"name":"fz","namespace":"ns1","labels":{"role":"db"}},"spec":{"nets":["198.18.0.0/15","::ffff:10.0.0.1/128"]}}`},
	{5, `{"kind":"Profile","apiVersion":"projectcalico.org/v3","metadata":{"name":"kns.ns1"},"spec":{"ingress":[{"action":"Deny","protocol":"TCP","source":{"notSelector":"role == 'db'"},"destination":{"notPorts":["http",22]}},{"action":"Allow"}],"egress":[{"action":"Allow"}]}}`},
}
