package dataplane

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/calico-host/calico-host/pkg/api"
	store "github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/datastore/etcdtest"
	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/netnstest"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// etcdFelix is felix's read path from a real etcd into a real dataplane: the syncer with felix's
// decoder, the calculation graph for host1, and a kernelDP on the topology's host.
type etcdFelix struct {
	t    *testing.T
	cli  *clientv3.Client
	msgs chan syncer.Message
	g    *calc.Graph
	rev  int64 // the revision the graph has
	k    *kernelDP
}

// startEtcdFelix starts etcd, writes the raw values (key suffix under the v3 resource prefix ->
// JSON, as etcdctl would), and runs the pipeline until the dataplane applied them.
func startEtcdFelix(t *testing.T, tp *topology, values map[string]string) *etcdFelix {
	t.Helper()
	srv := etcdtest.Start(t)
	f := &etcdFelix{t: t, cli: srv.Client(), msgs: make(chan syncer.Message, 16), g: calc.New("host1", testLogger(t))}
	var rev int64
	for k, v := range values {
		rev = f.put(k, v)
	}
	ds, err := store.New(srv.Datastore())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := syncer.New(ds, syncer.Config{Prefixes: []string{store.ResourcePrefix}, Decoder: syncer.FailClosedDecoder}, testLogger(t))
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx, f.msgs) }()
	t.Cleanup(func() { cancel(); <-done })
	f.catchUp(rev)
	f.k = startDataplane(t, tp, Config{}, f.g.Flush()...)
	return f
}

func (f *etcdFelix) put(key, value string) int64 {
	f.t.Helper()
	r, err := f.cli.Put(context.Background(), store.ResourcePrefix+key, value)
	if err != nil {
		f.t.Fatal(err)
	}
	return r.Header.Revision
}

// catchUp feeds the graph the syncer's messages until it has revision rev.
func (f *etcdFelix) catchUp(rev int64) {
	f.t.Helper()
	for f.rev < rev {
		select {
		case m := <-f.msgs:
			f.g.OnMessage(m)
			f.rev = max(f.rev, m.Revision)
		case <-time.After(10 * time.Second):
			f.t.Fatalf("the syncer did not deliver revision %d (at %d)", rev, f.rev)
		}
	}
}

// apply waits until the graph has revision rev and the dataplane applied what it flushed.
func (f *etcdFelix) apply(rev int64) {
	f.t.Helper()
	f.catchUp(rev)
	if ups := f.g.Flush(); len(ups) > 0 {
		f.k.send(ups...)
	}
}

// delete deletes a key and waits until the dataplane applied the result.
func (f *etcdFelix) delete(key string) {
	f.t.Helper()
	r, err := f.cli.Delete(context.Background(), store.ResourcePrefix+key)
	if err != nil {
		f.t.Fatal(err)
	}
	f.apply(r.Header.Revision)
}

// rawWEP is a workload endpoint of host1 in namespace ns1 as stored in etcd.
func rawWEP(ctr, iface, ip, labels, profiles string) (string, string) {
	name := api.WorkloadEndpointName("host1", "cni", ctr, "eth0")
	return "workloadendpoints/ns1/" + name, fmt.Sprintf(`{"kind":"WorkloadEndpoint","apiVersion":"projectcalico.org/v3",
	  "metadata":{"name":%q,"namespace":"ns1","labels":{%s}},
	  "spec":{"orchestrator":"cni","node":"host1","workload":%q,"endpoint":"eth0","interfaceName":%q,
	  "ipNetworks":["%s/32"],"profiles":[%s]}}`, name, labels, ctr, iface, ip, profiles)
}

// TestKernelInvalidObjectsNeverWiden writes, as etcdctl or an older tool could, objects that
// fail validation and proves with packets that none of them widens what is allowed:
//   - a network set with one bad CIDR among good ones still feeds the Deny rule selecting it
//     (it was treated as absent: the rule matched nothing and the Allow behind it let the
//     blocked source in);
//   - an endpoint with profiles [deny-a (invalid), allow-all] drops both ways (deny-a had no
//     rules, so allow-all decided); with [allow-all, deny-a] allow-all decides first;
//   - an endpoint naming a profile that is deleted drops both ways (same fall-through).
func TestKernelInvalidObjectsNeverWiden(t *testing.T) {
	const ifC, ipC, ifD, ipD, ifE, ipE = "cali0000000000c", "10.65.0.3", "cali0000000000d", "10.65.0.4", "cali0000000000e", "10.65.0.5"
	const ifF, ipF = "cali0000000000f", "10.65.0.6"
	tp := newTopology(t)
	a := tp.addWorkload(t, "a", ifA, ipA)
	b := tp.addWorkload(t, "b", ifB, ipB)
	c := tp.addWorkload(t, "c", ifC, ipC)
	d := tp.addWorkload(t, "d", ifD, ipD)
	e := tp.addWorkload(t, "e", ifE, ipE)
	fw := tp.addWorkload(t, "f", ifF, ipF)
	for _, w := range []struct {
		ns *netnstest.NS
		ip string
	}{{a, ipA}, {b, ipB}, {d, ipD}, {e, ipE}, {fw, ipF}} {
		listenTCP(t, w.ns, w.ip, 8080)
	}
	values := map[string]string{
		"profiles/allow-all": `{"kind":"Profile","apiVersion":"projectcalico.org/v3","metadata":{"name":"allow-all"},
		  "spec":{"ingress":[{"action":"Allow"}],"egress":[{"action":"Allow"}]}}`,
		"profiles/p-del": `{"kind":"Profile","apiVersion":"projectcalico.org/v3","metadata":{"name":"p-del"},
		  "spec":{"ingress":[{"action":"Allow"}],"egress":[{"action":"Allow"}]}}`,
		"profiles/deny-a": `{"kind":"Profile","apiVersion":"projectcalico.org/v3","metadata":{"name":"deny-a"},
		  "spec":{"ingress":[{"action":"Deny","source":{"nets":["198.18.0.0/99"]}}],"egress":[{"action":"Deny"}]}}`,
		"globalnetworksets/blocked": `{"kind":"GlobalNetworkSet","apiVersion":"projectcalico.org/v3",
		  "metadata":{"name":"blocked","labels":{"role":"blocked"}},"spec":{"nets":["` + ipA + `/32","10.1.0.0/99"]}}`,
		"globalnetworkpolicies/deny-blocked": `{"kind":"GlobalNetworkPolicy","apiVersion":"projectcalico.org/v3",
		  "metadata":{"name":"deny-blocked"},"spec":{"selector":"role == 'target'","types":["Ingress"],
		  "ingress":[{"action":"Deny","source":{"selector":"role == 'blocked'"}},{"action":"Allow"}]}}`,
	}
	for _, w := range []struct{ ctr, iface, ip, labels, profiles string }{
		{"a", ifA, ipA, "", `"allow-all"`},
		{"b", ifB, ipB, `"role":"target"`, `"allow-all"`},
		{"c", ifC, ipC, "", `"allow-all"`},
		{"d", ifD, ipD, "", `"deny-a","allow-all"`},
		{"e", ifE, ipE, "", `"p-del","allow-all"`},
		{"f", ifF, ipF, "", `"allow-all","deny-a"`},
	} {
		k, v := rawWEP(w.ctr, w.iface, w.ip, w.labels, w.profiles)
		values[k] = v
	}
	f := startEtcdFelix(t, tp, values)
	f.k.requireProgrammed()
	tcp := func(from *netnstest.NS, to string) func() bool {
		return func() bool { return canTCP(t, from, to, 8080) }
	}
	check(t, "network set with a bad CIDR",
		expectation{"a (in the set) -> b", tcp(a, ipB), false},
		expectation{"c (not in the set) -> b", tcp(c, ipB), true})
	check(t, "profiles [deny-a (invalid), allow-all]",
		expectation{"a -> d", tcp(a, ipD), false},
		expectation{"d -> a", tcp(d, ipA), false})
	check(t, "profiles [allow-all, deny-a (invalid)]",
		expectation{"a -> f", tcp(a, ipF), true},
		expectation{"f -> a", tcp(fw, ipA), true})
	check(t, "profiles [p-del, allow-all] while p-del exists",
		expectation{"a -> e", tcp(a, ipE), true},
		expectation{"e -> a", tcp(e, ipA), true})

	f.delete("profiles/p-del")
	check(t, "profiles [p-del (deleted), allow-all]",
		expectation{"a -> e", tcp(a, ipE), false},
		expectation{"e -> a", tcp(e, ipA), false},
		expectation{"c -> b (unrelated)", tcp(c, ipB), true})

	// A workload endpoint that stops validating is absent, as in Project Calico: its interface
	// is an unknown workload interface, dropped both ways.
	k, v := rawWEP("c", ifC, ipC, "", `"allow-all"`)
	f.apply(f.put(k, strings.Replace(v, `"endpoint":"eth0"`, `"endpoint":"eth0","mac":"not-a-mac"`, 1)))
	check(t, "invalid workload endpoint", expectation{"c -> b", tcp(c, ipB), false})
}

// TestKernelInvalidHostEndpointStaysProtected: a host endpoint that stops validating (here an
// expected IP that is not one) keeps protecting its interface: treated as absent, the interface
// was unprotected and a port its profile never allowed became reachable.
func TestKernelInvalidHostEndpointStaysProtected(t *testing.T) {
	tp := newTopology(t)
	listenTCP(t, tp.host, "198.18.0.1", 8080)
	listenTCP(t, tp.host, "198.18.0.1", 9090)
	hep := func(ips string) string {
		return `{"kind":"HostEndpoint","apiVersion":"projectcalico.org/v3","metadata":{"name":"host1-eth0"},
		  "spec":{"node":"host1","interfaceName":"eth0","expectedIPs":[` + ips + `],"profiles":["only-8080"]}}`
	}
	f := startEtcdFelix(t, tp, map[string]string{
		"profiles/only-8080": `{"kind":"Profile","apiVersion":"projectcalico.org/v3","metadata":{"name":"only-8080"},
		  "spec":{"ingress":[{"action":"Allow","protocol":"TCP","destination":{"ports":[8080]}}],"egress":[{"action":"Allow"}]}}`,
		"hostendpoints/host1-eth0": hep(`"198.18.0.1"`),
	})
	f.k.requireProgrammed()
	port := func(p int) func() bool { return func() bool { return canTCP(t, tp.fabric, "198.18.0.1", p) } }
	check(t, "valid host endpoint", expectation{"fabric -> host:8080", port(8080), true},
		expectation{"fabric -> host:9090", port(9090), false})

	f.apply(f.put("hostendpoints/host1-eth0", hep(`"198.18.0.1","198.18.0.300"`)))
	check(t, "host endpoint with a bad expected IP", expectation{"fabric -> host:9090", port(9090), false})
}
