package felix

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/felix/calc/calcbench"
)

// TestLoadBenchData is the loader of scripts/felix-ready-time.sh, not a test (it is skipped
// unless BENCH_ETCD_ENDPOINTS is set): it writes calcbench's data set
// (BENCH_SPEC="host,local,remote,policies,netsets") into that etcd and the names of the host's
// workload interfaces, one a line, into BENCH_IFACES.
func TestLoadBenchData(t *testing.T) {
	endpoints := os.Getenv("BENCH_ETCD_ENDPOINTS")
	if endpoints == "" {
		t.Skip("loader for scripts/felix-ready-time.sh; set BENCH_ETCD_ENDPOINTS to run it")
	}
	var host string
	var local, remote, policies, netsets int
	if _, err := fmt.Sscanf(strings.ReplaceAll(os.Getenv("BENCH_SPEC"), ",", " "), "%s %d %d %d %d",
		&host, &local, &remote, &policies, &netsets); err != nil {
		t.Fatalf("BENCH_SPEC=%q: want host,local,remote,policies,netsets: %v", os.Getenv("BENCH_SPEC"), err)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: strings.Split(endpoints, ","), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	var ops []clientv3.Op
	var ifaces []string
	for _, u := range calcbench.BenchData(host, local, remote, policies, netsets) {
		val, err := calcbench.Encode(u.Value)
		if err != nil {
			t.Fatalf("%s: %v", u.ID.Key(), err)
		}
		ops = append(ops, clientv3.OpPut(u.ID.Key(), string(val)))
		if w, ok := u.Value.(*api.WorkloadEndpoint); ok && w.Spec.Node == host {
			ifaces = append(ifaces, w.Spec.InterfaceName)
		}
	}
	for len(ops) > 0 { // etcd's default limit is 128 operations per transaction
		n := min(len(ops), 100)
		if _, err := cli.Txn(context.Background()).Then(ops[:n]...).Commit(); err != nil {
			t.Fatal(err)
		}
		ops = ops[n:]
	}
	if path := os.Getenv("BENCH_IFACES"); path != "" {
		if err := os.WriteFile(path, []byte(strings.Join(ifaces, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
