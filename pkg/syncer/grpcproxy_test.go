package syncer_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/proxy/grpcproxy"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/calico-host/calico-host/pkg/syncer"
)

// startGRPCProxy runs etcd's gRPC proxy (KV and Watch, as `etcd grpc-proxy start` serves them)
// in front of the test's etcd and returns its client URL. Like the real one, it does not answer
// watch progress requests.
func startGRPCProxy(t *testing.T, target *clientv3.Client) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	kv, _ := grpcproxy.NewKvProxy(target)
	w, _ := grpcproxy.NewWatchProxy(ctx, zap.NewNop(), target)
	srv := grpc.NewServer()
	pb.RegisterKVServer(srv, kv)
	pb.RegisterWatchServer(srv, w)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { cancel(); srv.Stop() })
	return "http://" + ln.Addr().String()
}

// TestQuietWatchBehindGRPCProxy: behind an etcd grpc-proxy, which never answers progress
// requests, a watch on a prefix nobody writes is silent. Listed at a revision rounded down (see
// Config.ListQuantum), such a watch starts before etcd's revision: that must not make it look
// stuck (restarted every watch timeout) while nothing is written; and changes still arrive.
func TestQuietWatchBehindGRPCProxy(t *testing.T) {
	s, raw := startEtcd(t)
	for i := range 5 { // etcd's revision is not a multiple of ListQuantum
		put(t, raw, poolPrefix+"p", poolJSON(fmt.Sprintf("10.65.%d.0/24", i)))
	}
	ds := s.Datastore()
	ds.Etcd.Endpoints = []string{startGRPCProxy(t, raw)}
	cfg := syncer.Config{Prefixes: []string{poolPrefix}, WatchTimeout: 300 * time.Millisecond, ListQuantum: 4}
	c := startConsumer(t, newClient(t, ds), cfg)
	c.waitFor(t, "first snapshot", func() bool { return c.snapshots == 1 })
	time.Sleep(1500 * time.Millisecond) // five watch timeouts
	if logs := c.logs.String(); strings.Contains(logs, "interrupted") {
		t.Errorf("a quiet watch behind the proxy was restarted; logs:\n%s", logs)
	}
	rev := put(t, raw, poolPrefix+"q", poolJSON("10.66.0.0/16"))
	c.waitFor(t, "the change under the prefix", func() bool { return c.model[poolPrefix+"q"].Revision == rev })
	c.waitConverged(t, raw)
}
