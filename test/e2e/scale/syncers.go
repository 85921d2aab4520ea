package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/syncer"
	"github.com/calico-host/calico-host/test/e2e/topo"
)

// syncerReport is what n felix syncers cost etcd.
type syncerReport struct {
	Via               string
	Syncers           int
	InSync            time.Duration // until every syncer delivered its snapshot
	Watchers, Streams float64       // on the etcd server once in sync
	Burst             int
	CaughtUp          time.Duration // from the burst's first write until every syncer saw its last
	ServerRSS         int64
	// Resources of each phase (initial sync, burst): etcd server CPU seconds and gRPC bytes
	// sent, grpc-proxy CPU seconds (proxy runs only).
	Sync, BurstUse usage
}

type usage struct{ ServerCPU, SentMB, ProxyCPU float64 }

// meter samples the counters behind usage.
type meter struct {
	ctx          context.Context
	f            *topo.Fabric
	proxy        *topo.Proc
	cpu, sent, p float64
}

func newMeter(ctx context.Context, f *topo.Fabric, proxy *topo.Proc) *meter {
	m := &meter{ctx: ctx, f: f, proxy: proxy}
	m.lap()
	return m
}

// lap returns the usage since the previous lap.
func (m *meter) lap() usage {
	cpu := cpuSeconds(m.f.Etcd.Members[0].Pid())
	sent := serverMetric(m.ctx, m.f, "etcd_network_client_grpc_sent_bytes_total")
	p := 0.0
	if m.proxy != nil {
		p = cpuSeconds(m.proxy.Pid())
	}
	u := usage{ServerCPU: cpu - m.cpu, SentMB: (sent - m.sent) / 1e6, ProxyCPU: p - m.p}
	m.cpu, m.sent, m.p = cpu, sent, p
	return u
}

// felixSyncer is one syncer with felix's prefixes on its own connection.
type felixSyncer struct {
	cli    *clientv3.Client
	s      *syncer.Syncer
	inSync atomic.Bool
	rev    atomic.Int64
}

func newClient(f *topo.Fabric, endpoint string) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 10 * time.Second, Logger: zap.NewNop(),
		DialKeepAliveTime: 10 * time.Second, DialKeepAliveTimeout: 5 * time.Second,
		DialOptions: []grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return f.NS.DialContext(ctx, "tcp", addr)
		})}})
}

func (fs *felixSyncer) run(ctx context.Context) {
	out := make(chan syncer.Message, 16)
	go fs.s.Run(ctx, out)
	snapshot := false
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-out:
			fs.rev.Store(max(fs.rev.Load(), m.Revision))
			snapshot = snapshot || m.Snapshot
			if m.Status == syncer.InSync && snapshot { // InSync may follow the snapshot (see syncer.Message)
				fs.inSync.Store(true)
			}
		}
	}
}

// runSyncers starts n syncers against endpoint, waits until all are in sync, writes a burst of
// changes and waits until all have seen them, measuring the etcd server throughout.
func runSyncers(ctx context.Context, f *topo.Fabric, via, endpoint string, n, burst int, proxy *topo.Proc) (syncerReport, error) {
	r := syncerReport{Via: via, Syncers: n, Burst: burst}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m := newMeter(ctx, f, proxy)
	var all []*felixSyncer
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	start := time.Now()
	for range n {
		cli, err := newClient(f, endpoint)
		if err != nil {
			return r, err
		}
		defer cli.Close()
		fs := &felixSyncer{cli: cli, s: syncer.New(datastore.NewFromEtcd(cli),
			syncer.Config{Prefixes: []string{datastore.ResourcePrefix, datastore.BlockPrefix}}, zerolog.Nop())}
		all = append(all, fs)
		wg.Go(func() { fs.run(ctx) })
	}
	if err := topo.Eventually(ctx, 5*time.Minute, 50*time.Millisecond, func() error {
		return countMissing(all, func(fs *felixSyncer) bool { return fs.inSync.Load() }, "in sync")
	}); err != nil {
		return r, err
	}
	r.InSync = time.Since(start)
	r.Sync = m.lap()
	r.Watchers = serverMetric(ctx, f, "etcd_debugging_mvcc_watcher_total")
	r.Streams = serverMetric(ctx, f, "etcd_debugging_mvcc_watch_stream_total")
	last, took, err := writeBurst(ctx, f, burst)
	if err != nil {
		return r, err
	}
	if err := topo.Eventually(ctx, 5*time.Minute, 10*time.Millisecond, func() error {
		return countMissing(all, func(fs *felixSyncer) bool { return fs.rev.Load() >= last }, "caught up")
	}); err != nil {
		return r, err
	}
	r.CaughtUp = time.Since(took)
	r.BurstUse = m.lap()
	r.ServerRSS = f.Etcd.Members[0].Rss()
	return r, nil
}

func countMissing(all []*felixSyncer, ok func(*felixSyncer) bool, what string) error {
	missing := 0
	for _, fs := range all {
		if !ok(fs) {
			missing++
		}
	}
	if missing > 0 {
		return fmt.Errorf("%d of %d syncers not %s", missing, len(all), what)
	}
	return nil
}

// writeBurst rewrites `burst` network sets (valid changes every felix receives) as fast as one
// client can, and returns the last revision and when the burst started.
func writeBurst(ctx context.Context, f *topo.Fabric, burst int) (int64, time.Time, error) {
	ds, err := f.Datastore()
	if err != nil {
		return 0, time.Time{}, err
	}
	start := time.Now()
	var last int64
	for i := range burst {
		key := fmt.Sprintf("%sglobalnetworksets/scale-burst-%d", datastore.ResourcePrefix, i%50)
		val := fmt.Sprintf(`{"kind":"GlobalNetworkSet","apiVersion":"projectcalico.org/v3","metadata":{"name":"scale-burst-%d",`+
			`"creationTimestamp":"2026-01-01T00:00:00Z","labels":{"burst":"%d"}},"spec":{"nets":["198.51.100.%d/32"]}}`, i%50, i, i%250)
		resp, err := ds.Etcd().Put(ctx, key, val)
		if err != nil {
			return 0, start, err
		}
		last = resp.Header.Revision
	}
	return last, start, nil
}

// serverMetric reads one metric (summed over labels) from the etcd server; 0 if unavailable.
func serverMetric(ctx context.Context, f *topo.Fabric, name string) float64 {
	code, body, err := f.NS.HTTPGet(ctx, f.Etcd.Addrs[0]+":2379", "/metrics")
	if err != nil || code != 200 {
		return 0
	}
	v, _ := topo.SumMetric(body, name)
	return v
}

// cpuSeconds is the user+system CPU time of a process.
func cpuSeconds(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(data)
	fields := strings.Fields(s[strings.LastIndex(s, ")")+2:]) // after "pid (comm) "
	if len(fields) < 13 {
		return 0
	}
	var utime, stime float64
	fmt.Sscan(fields[11], &utime)
	fmt.Sscan(fields[12], &stime)
	return (utime + stime) / 100 // USER_HZ
}

// startProxy runs "etcd grpc-proxy" (the Debian etcd binary) in the fabric namespace.
func startProxy(ctx context.Context, f *topo.Fabric) (*topo.Proc, string, error) {
	addr := f.Etcd.Addrs[0] + ":23790"
	p := f.NewProc("grpc-proxy", "etcd", "grpc-proxy", "start", "--endpoints="+f.Etcd.EndpointList(), "--listen-addr="+addr)
	if err := p.Start(); err != nil {
		return nil, "", err
	}
	err := topo.Eventually(ctx, 30*time.Second, 100*time.Millisecond, func() error {
		c, err := f.NS.DialContext(ctx, "tcp", addr)
		if err == nil {
			c.Close()
		}
		return err
	})
	return p, "http://" + addr, err
}
