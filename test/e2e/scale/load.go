package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/felix/calc/calcbench"
	"github.com/calico-host/calico-host/test/e2e/topo"
)

// loadBenchData writes calcbench's data set into etcd (100 puts per transaction) and returns
// the number of keys and the local workloads' interface names.
func loadBenchData(ctx context.Context, cli *clientv3.Client, shape calcbench.Shape) (int, []string, error) {
	var ops []clientv3.Op
	var ifaces []string
	for _, u := range shape.Updates() {
		val, err := calcbench.Encode(u.Value)
		if err != nil {
			return 0, nil, fmt.Errorf("%s: %w", u.ID.Key(), err)
		}
		ops = append(ops, clientv3.OpPut(u.ID.Key(), string(val)))
		if w, ok := u.Value.(*api.WorkloadEndpoint); ok && w.Spec.Node == shape.Host {
			ifaces = append(ifaces, w.Spec.InterfaceName)
		}
	}
	n := len(ops)
	for len(ops) > 0 {
		k := min(len(ops), 100)
		if _, err := cli.Txn(ctx).Then(ops[:k]...).Commit(); err != nil {
			return 0, nil, err
		}
		ops = ops[k:]
	}
	return n, ifaces, nil
}

// plugInterfaces creates a veth pair per local workload interface in the host's namespace (the
// peer stands for the container side), both ends up, so that felix programs every endpoint.
func plugInterfaces(ctx context.Context, h *topo.Host, ifaces []string) error {
	var b strings.Builder
	for i, name := range ifaces {
		peer := fmt.Sprintf("wl%d", i)
		fmt.Fprintf(&b, "link add %s type veth peer name %s\nlink set %s up\nlink set %s up\n", name, peer, peer, name)
	}
	_, err := h.NS.ExecInput(ctx, []byte(b.String()), nil, "ip", "-batch", "-")
	return err
}

// waitReady polls felix's readiness every 20 ms and returns how long it took from start.
func waitReady(ctx context.Context, h *topo.Host, start time.Time, timeout time.Duration) (time.Duration, error) {
	err := topo.Eventually(ctx, timeout, 20*time.Millisecond, func() error { return h.FelixReady(ctx) })
	return time.Since(start), err
}
