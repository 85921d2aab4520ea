package fleet

import (
	"context"
	"encoding/json"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/felix/calc/calcbench"
)

// EndpointsPerHost is the number of workload endpoints of every host of the fleet.
const EndpointsPerHost = 20

// Shape is a fleet's datastore: hosts, each with EndpointsPerHost workload endpoints (and their
// IPAM blocks and block affinities), and a number of policies, as calcbench generates them.
type Shape struct {
	Hosts, Policies, NetSets int
}

func (s Shape) bench() calcbench.Shape {
	return calcbench.Shape{Host: HostName(0), Local: EndpointsPerHost, Remote: (s.Hosts - 1) * EndpointsPerHost,
		PerHost: EndpointsPerHost, Policies: s.Policies, NetSets: s.NetSets}
}

// HostName is the name of host i (0 is calcbench's local host, the others its remote hosts).
func HostName(i int) string {
	if i == 0 {
		return "host-0"
	}
	return calcbench.RemoteHost(i - 1)
}

// encode turns a calcbench value into what Project Calico's tools store.
func encode(v any) ([]byte, error) {
	if r, ok := v.(api.Resource); ok {
		if r.GetObjectMeta().CreationTimestamp == "" {
			r.GetObjectMeta().CreationTimestamp = "2026-01-01T00:00:00Z"
		}
		return datastore.EncodeResource(r)
	}
	return json.Marshal(v)
}

// Load writes the fleet's datastore (100 puts per transaction) and returns the number of keys.
func Load(ctx context.Context, cli *clientv3.Client, s Shape) (int, error) {
	var ops []clientv3.Op
	for _, u := range s.bench().Updates() {
		val, err := encode(u.Value)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", u.ID.Key(), err)
		}
		ops = append(ops, clientv3.OpPut(u.ID.Key(), string(val)))
		if b, ok := u.Value.(*api.AllocationBlock); ok && b.Affinity != nil {
			host := (*b.Affinity)[len("host:"):]
			ops = append(ops, clientv3.OpPut(datastore.AffinityKey(host, b.CIDR), `{"state":"confirmed","deleted":false}`))
		}
	}
	n := len(ops)
	for len(ops) > 0 {
		k := min(len(ops), 100)
		if _, err := cli.Txn(ctx).Then(ops[:k]...).Commit(); err != nil {
			return 0, fmt.Errorf("loading the datastore: %w", err)
		}
		ops = ops[k:]
	}
	return n, nil
}

// Change is the i-th change of a churn: alternately a remote workload endpoint moved to another
// role (IP set members change on every host whose policies select that role) and an endpoint of
// another host relabelled back, so that the datastore keeps its shape. It returns the key and
// the value to write.
func (s Shape) Change(i int) (string, string, error) {
	b := s.bench()
	remote := b.Remote
	if remote == 0 {
		return "", "", fmt.Errorf("a churn needs at least two hosts")
	}
	j := (i * 7919) % remote // spread over hosts
	role := calcbench.Roles[(i/remote+j+1)%len(calcbench.Roles)]
	u := b.RemoteEndpoint(j, role)
	val, err := encode(u.Value)
	return u.ID.Key(), string(val), err
}
