package main

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/calico-host/calico-host/pkg/felix/calc/calcbench"
	"github.com/calico-host/calico-host/pkg/selector"
	"github.com/calico-host/calico-host/test/e2e/topo"
)

const resources = "/calico/resources/v3/projectcalico.org/"

// dataSet is the loaded data: an etcd data directory to copy for each felix, the host's workload
// interfaces and address, and the changes to make after ready.
type dataSet struct {
	template string
	keys     int
	ifaces   []string
	hostAddr string // the host's address and prefix length, for its eth0
	changes  []change
}

// kv is one etcd key and its value (JSON, as Project Calico stores it).
type kv struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
}

// change is one datastore write and the token its kernel update shows.
type change struct {
	kind, key, token string
	value            []byte
}

// prepare loads the data set into a template etcd and prepares the changes.
func prepare(ctx context.Context, o options, dir string) (*dataSet, error) {
	kvs, err := readData(o)
	if err != nil {
		return nil, err
	}
	ds := &dataSet{template: filepath.Join(dir, "etcd-template"), keys: len(kvs)}
	ds.ifaces, ds.hostAddr = hostFacts(kvs, o.host)
	if ds.changes, err = makeChanges(kvs, o); err != nil {
		return nil, err
	}
	ns, err := topo.NewNetns(ctx, nsName("load", 0))
	if err != nil {
		return nil, err
	}
	defer ns.Delete()
	etcd, err := startEtcd(ctx, ns, "", filepath.Join(dir, "load"))
	if err != nil {
		return nil, err
	}
	defer etcd.Stop()
	if err := put(ctx, ns, kvs); err != nil {
		return nil, err
	}
	etcd.Stop()
	return ds, os.Rename(filepath.Join(dir, "load", "etcd"), ds.template)
}

// readData is calcbench's data set, or the JSON file's.
func readData(o options) ([]kv, error) {
	if o.data == "calcbench" {
		var out []kv
		for _, u := range calcbench.BenchData(o.host, o.local, o.remote, o.policies, o.netsets) {
			val, err := calcbench.Encode(u.Value)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", u.ID.Key(), err)
			}
			out = append(out, kv{Key: u.ID.Key(), Value: val})
		}
		return out, nil
	}
	f, err := os.Open(o.data)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(o.data, ".gz") {
		if r, err = gzip.NewReader(f); err != nil {
			return nil, err
		}
	}
	var out []kv
	return out, json.NewDecoder(r).Decode(&out)
}

// hostFacts are the host's local workload interfaces and its address (its Node's BGP IPv4
// address, else 198.18.0.1/16).
func hostFacts(kvs []kv, host string) (ifaces []string, addr string) {
	addr = "198.18.0.1/16"
	for _, e := range kvs {
		var v struct {
			Spec struct {
				Node, InterfaceName string
				BGP                 struct{ IPv4Address string }
			}
		}
		switch {
		case strings.HasPrefix(e.Key, resources+"workloadendpoints/"):
			if json.Unmarshal(e.Value, &v) == nil && v.Spec.Node == host && v.Spec.InterfaceName != "" {
				ifaces = append(ifaces, v.Spec.InterfaceName)
			}
		case e.Key == resources+"nodes/"+host:
			if json.Unmarshal(e.Value, &v) == nil && v.Spec.BGP.IPv4Address != "" {
				addr = v.Spec.BGP.IPv4Address
			}
		}
	}
	sort.Strings(ifaces)
	return ifaces, addr
}

// makeChanges prepares the changes: alternately a deny rule on a new TCP port appended to the
// ingress rules of a policy that applies to a local endpoint (policies in key order) and a new
// address for a workload endpoint of another host (spread over them).
func makeChanges(kvs []kv, o options) ([]change, error) {
	var remote []kv
	var local []endpoint
	for _, e := range kvs {
		if !strings.HasPrefix(e.Key, resources+"workloadendpoints/") {
			continue
		}
		var ep endpoint
		if json.Unmarshal(e.Value, &ep) != nil {
			continue
		}
		if ep.Spec.Node == o.host {
			local = append(local, ep)
		} else {
			remote = append(remote, e)
		}
	}
	var pols []kv
	for _, e := range kvs {
		if strings.HasPrefix(e.Key, resources) && strings.Contains(e.Key, "networkpolicies/") && appliesIngress(e, local) {
			pols = append(pols, e)
		}
	}
	sort.Slice(pols, func(i, j int) bool { return pols[i].Key < pols[j].Key })
	if len(pols) == 0 || len(remote) == 0 {
		return nil, fmt.Errorf("the data set has %d policies and %d remote workload endpoints; it needs both", len(pols), len(remote))
	}
	var out []change
	for i := range o.changes {
		var c change
		var err error
		if i%2 == 0 {
			c, err = policyChange(pols[i/2%len(pols)], 41000+i)
		} else {
			c, err = endpointChange(remote[(i*37)%len(remote)], netip.AddrFrom4([4]byte{10, 66, byte(i / 250), byte(1 + i%250)}))
		}
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// endpoint is what makeChanges reads of a workload endpoint.
type endpoint struct {
	Metadata struct {
		Namespace string
		Labels    map[string]string
	}
	Spec struct{ Node string }
}

// appliesIngress reports whether policy e has ingress rules that apply to one of the local
// endpoints (its selector matches their labels, with the namespace's label; a namespaced
// policy only in its namespace): a rule added to it then shows in the kernel.
func appliesIngress(e kv, local []endpoint) bool {
	var p struct {
		Metadata struct{ Namespace string }
		Spec     struct {
			Selector string
			Types    []string
		}
	}
	if json.Unmarshal(e.Value, &p) != nil || len(p.Spec.Types) > 0 && !slices.Contains(p.Spec.Types, "Ingress") {
		return false
	}
	sel, err := selector.Parse(p.Spec.Selector)
	if err != nil {
		return false
	}
	namespaced := strings.HasPrefix(e.Key, resources+"networkpolicies/")
	for _, ep := range local {
		if namespaced && ep.Metadata.Namespace != p.Metadata.Namespace {
			continue
		}
		labels := maps.Clone(ep.Metadata.Labels)
		if labels == nil {
			labels = map[string]string{}
		}
		labels[selector.NamespaceLabel] = ep.Metadata.Namespace
		if sel.EvaluateMap(labels) {
			return true
		}
	}
	return false
}

// policyChange appends `deny tcp to port` to the policy's ingress rules.
func policyChange(e kv, port int) (change, error) {
	var v map[string]any
	if err := json.Unmarshal(e.Value, &v); err != nil {
		return change{}, fmt.Errorf("%s: %w", e.Key, err)
	}
	spec, _ := v["spec"].(map[string]any)
	if spec == nil {
		return change{}, fmt.Errorf("%s has no spec", e.Key)
	}
	ingress, _ := spec["ingress"].([]any)
	spec["ingress"] = append(ingress, map[string]any{"action": "Deny", "protocol": "TCP",
		"destination": map[string]any{"ports": []any{port}}})
	val, err := json.Marshal(v)
	return change{kind: "policy", key: e.Key, token: fmt.Sprint(port), value: val}, err
}

// endpointChange gives the endpoint the address a instead of its own.
func endpointChange(e kv, a netip.Addr) (change, error) {
	var v map[string]any
	if err := json.Unmarshal(e.Value, &v); err != nil {
		return change{}, fmt.Errorf("%s: %w", e.Key, err)
	}
	spec, _ := v["spec"].(map[string]any)
	if spec == nil {
		return change{}, fmt.Errorf("%s has no spec", e.Key)
	}
	spec["ipNetworks"] = []any{a.String() + "/32"}
	val, err := json.Marshal(v)
	return change{kind: "endpoint", key: e.Key, token: a.String(), value: val}, err
}

// startEtcd starts an etcd in ns with its data in dir/etcd, copied from template first unless
// template is "".
func startEtcd(ctx context.Context, ns *topo.Netns, template, dir string) (*topo.Proc, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "etcd")
	if template != "" {
		if out, err := exec.Command("cp", "-a", template, data).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("copying the etcd data: %w: %s", err, out)
		}
	}
	p := topo.NewProc("etcd", ns, filepath.Join(dir, "etcd.log"), "etcd", "--name", "fc", "--data-dir", data,
		"--unsafe-no-fsync", "--listen-client-urls", "http://127.0.0.1:2379", "--advertise-client-urls", "http://127.0.0.1:2379",
		"--listen-peer-urls", "http://127.0.0.1:2380", "--initial-advertise-peer-urls", "http://127.0.0.1:2380",
		"--initial-cluster", "fc=http://127.0.0.1:2380")
	if err := p.Start(); err != nil {
		return nil, err
	}
	err := topo.Eventually(ctx, time.Minute, 100*time.Millisecond, func() error {
		code, _, err := ns.HTTPGet(ctx, "127.0.0.1:2379", "/health")
		if err != nil || code != 200 {
			return fmt.Errorf("etcd not healthy (%d, %v)", code, err)
		}
		return nil
	})
	if err != nil {
		p.Stop()
	}
	return p, err
}

// client is an etcd client in ns.
func client(ns *topo.Netns) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{Endpoints: []string{"http://127.0.0.1:2379"}, DialTimeout: 10 * time.Second,
		Logger: zap.NewNop(), DialOptions: dialIn(ns)})
}

// put writes kvs, 100 per transaction.
func put(ctx context.Context, ns *topo.Netns, kvs []kv) error {
	cli, err := client(ns)
	if err != nil {
		return err
	}
	defer cli.Close()
	var ops []clientv3.Op
	for _, e := range kvs {
		ops = append(ops, clientv3.OpPut(e.Key, string(e.Value)))
	}
	for len(ops) > 0 {
		n := min(len(ops), 100)
		if _, err := cli.Txn(ctx).Then(ops[:n]...).Commit(); err != nil {
			return fmt.Errorf("loading the data set: %w", err)
		}
		ops = ops[n:]
	}
	return nil
}

// plug creates the host's interfaces in ns: eth0 with the host's address, and a veth per local
// workload interface (its peer stands for the workload side), all up.
func (ds *dataSet) plug(ctx context.Context, ns *topo.Netns, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "link add eth0 type veth peer name eth0-peer\naddress add %s dev eth0\nlink set eth0-peer up\nlink set eth0 up\n", ds.hostAddr)
	for i, name := range ds.ifaces {
		fmt.Fprintf(&b, "link add %s type veth peer name wp%d\nlink set wp%d up\nlink set %s up\n", name, i, i, name)
	}
	batch := filepath.Join(dir, "links.batch")
	if err := os.WriteFile(batch, []byte(b.String()), 0o644); err != nil {
		return err
	}
	_, err := ns.Exec(ctx, "ip", "-batch", batch)
	return err
}
