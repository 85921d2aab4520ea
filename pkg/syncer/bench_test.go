package syncer_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/rs/zerolog"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/calico-host/calico-host/pkg/config"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/syncer"
)

const benchKeys = 20000

// BenchmarkSnapshot20k measures one resync of 20,000 WorkloadEndpoints: New, Run, paginated list,
// decode and validate every value, deliver the snapshot. By default etcd is embedded, so its
// server-side work and allocations are included; set SYNCER_BENCH_ETCD to the URL of an empty
// external etcd to measure the client side alone.
func BenchmarkSnapshot20k(b *testing.B) {
	ds := benchDatastore(b)
	cli := newClient(b, ds)
	loadWorkloadEndpoints(b, cli.Etcd(), benchKeys)
	for _, pageSize := range []int64{500, 2000} {
		b.Run("page="+strconv.FormatInt(pageSize, 10), func(b *testing.B) {
			// ListQuantum 1: the snapshot is listed at the current revision, so it holds every key
			// (with the default quantum it may come at a rounded revision, followed by the rest).
			cfg := syncer.Config{Prefixes: []string{datastore.ResourcePrefix}, PageSize: pageSize, ListQuantum: 1}
			b.ReportAllocs()
			for b.Loop() {
				if n := firstSnapshot(b, cli, cfg); n != benchKeys {
					b.Fatalf("snapshot has %d keys, want %d", n, benchKeys)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchKeys, "ns/key")
		})
	}
}

func benchDatastore(b *testing.B) config.Datastore {
	if ep := os.Getenv("SYNCER_BENCH_ETCD"); ep != "" {
		d := config.Datastore{Type: "etcdv3", Etcd: config.Etcd{Endpoints: []string{ep}}}
		if err := d.Finish(); err != nil {
			b.Fatal(err)
		}
		return d
	}
	s, _ := startEtcd(b)
	return s.Datastore()
}

// firstSnapshot runs a syncer until its first snapshot and returns the snapshot's size.
func firstSnapshot(b *testing.B, cli *datastore.Client, cfg syncer.Config) int {
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan syncer.Message)
	done := make(chan struct{})
	go func() { defer close(done); syncer.New(cli, cfg, zerolog.Nop()).Run(ctx, out) }()
	defer func() { cancel(); <-done }()
	timeout := time.After(waitTimeout)
	for {
		select {
		case m := <-out:
			if m.Snapshot {
				return len(m.Updates)
			}
		case <-timeout:
			b.Fatalf("no snapshot within %s", waitTimeout)
		}
	}
}

// loadWorkloadEndpoints writes n WorkloadEndpoints (replacing any previous content), 100 per transaction.
func loadWorkloadEndpoints(b *testing.B, raw *clientv3.Client, n int) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := raw.Delete(ctx, datastore.ResourcePrefix, clientv3.WithPrefix()); err != nil {
		b.Fatal(err)
	}
	var ops []clientv3.Op
	for i := range n {
		ns, name := "ns"+strconv.Itoa(i%10), "host--a-openstack-instance--"+strconv.Itoa(i)+"-tap"+strconv.Itoa(i)
		ops = append(ops, clientv3.OpPut(wepKey(ns, name), wepJSON(ns, name, i)))
		if len(ops) == 100 || i == n-1 {
			if _, err := raw.Txn(ctx).Then(ops...).Commit(); err != nil {
				b.Fatalf("loading endpoints: %v", err)
			}
			ops = ops[:0]
		}
	}
}
