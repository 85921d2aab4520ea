package topo

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
)

// Etcd is the datastore: devetcd members running in the fabric namespace, on addresses of br0.
type Etcd struct {
	f       *Fabric
	Members []*Proc
	// Endpoints are the client URLs of every member.
	Endpoints []string
	Addrs     []string // member IPs
}

// memberAddr is the br0 address of member i (0-based): 198.18.0.254 alone, else .251-.253.
func memberAddr(i, n int) string {
	if n == 1 {
		return FabricAddr.String()
	}
	return fmt.Sprintf("198.18.0.%d", 251+i)
}

// startEtcd starts n members and waits until the cluster answers.
func startEtcd(ctx context.Context, f *Fabric, n int) (*Etcd, error) {
	e := &Etcd{f: f}
	var cluster []string
	for i := 0; i < n; i++ {
		addr := memberAddr(i, n)
		if f.Opts.IPv6Only {
			addr = "[" + FabricAddr6.String() + "]" // one member (checked by Options.fill)
		}
		e.Addrs = append(e.Addrs, addr)
		e.Endpoints = append(e.Endpoints, "http://"+addr+":2379")
		cluster = append(cluster, fmt.Sprintf("m%d=http://%s:2380", i, addr))
		if n > 1 {
			if err := f.NS.script(ctx, "addr add "+addr+"/24 dev br0"); err != nil {
				return nil, err
			}
		}
	}
	if err := os.MkdirAll(f.LogDir(), 0o755); err != nil {
		return nil, err
	}
	for i := 0; i < n; i++ {
		args := []string{filepath.Join(f.Opts.Bin, "devetcd"), "-name", fmt.Sprintf("m%d", i),
			"-data-dir", filepath.Join(f.Dir, "etcd", fmt.Sprintf("m%d", i)),
			"-listen-client", e.Endpoints[i], "-listen-peer", fmt.Sprintf("http://%s:2380", e.Addrs[i]),
			"-initial-cluster", strings.Join(cluster, ",")}
		if n > 1 {
			args = append(args, "-tick-ms", "50", "-election-ms", "500")
		}
		log := filepath.Join(f.LogDir(), fmt.Sprintf("etcd-m%d.log", i))
		if n == 1 {
			log = filepath.Join(f.LogDir(), "etcd.log")
		}
		p := newProc(fmt.Sprintf("etcd-m%d", i), f.NS, log, nil, args...)
		if err := p.Start(); err != nil {
			return nil, err
		}
		f.undo.push(func() { p.Stop() })
		e.Members = append(e.Members, p)
	}
	return e, e.WaitHealthy(ctx, 60*time.Second)
}

// Client is a raw etcd client for the test itself (through the fabric namespace), closed on
// the fabric's Close.
func (e *Etcd) Client(dialTimeout time.Duration) (*clientv3.Client, error) {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   e.Endpoints,
		DialTimeout: dialTimeout,
		Logger:      zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return e.f.NS.DialContext(ctx, "tcp", addr)
		}),
			// Reconnect quickly after an outage, so that the test's own writes are not delayed by
			// gRPC's exponential backoff (up to 2 minutes by default).
			grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoff.Config{BaseDelay: 100 * time.Millisecond,
				Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second}, MinConnectTimeout: 2 * time.Second}),
		},
	})
	if err != nil {
		return nil, fmt.Errorf("etcd client for %v: %w", e.Endpoints, err)
	}
	return cli, nil
}

// WaitHealthy waits until every running member answers a linearizable read.
func (e *Etcd) WaitHealthy(ctx context.Context, timeout time.Duration) error {
	return Eventually(ctx, timeout, 200*time.Millisecond, func() error {
		for i, ep := range e.Endpoints {
			if !e.Members[i].Running() {
				continue
			}
			if err := e.ping(ctx, ep); err != nil {
				return fmt.Errorf("etcd member %s: %w", ep, err)
			}
		}
		return nil
	})
}

func (e *Etcd) ping(ctx context.Context, ep string) error {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 2 * time.Second, Logger: zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return e.f.NS.DialContext(ctx, "tcp", addr)
		})}})
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err = cli.Get(ctx, "health-probe")
	return err
}

// Stop stops every member (SIGTERM). Start brings them back with the same data.
func (e *Etcd) Stop() {
	for _, m := range e.Members {
		m.Stop()
	}
}

// Start starts every stopped member and waits until the cluster answers.
func (e *Etcd) Start(ctx context.Context) error {
	for _, m := range e.Members {
		if !m.Running() {
			if err := m.Start(); err != nil {
				return err
			}
		}
	}
	return e.WaitHealthy(ctx, 60*time.Second)
}

// Leader returns the index of the current leader.
func (e *Etcd) Leader(ctx context.Context) (int, error) {
	cli, err := e.Client(5 * time.Second)
	if err != nil {
		return -1, err
	}
	defer cli.Close()
	return LeaderOf(ctx, cli, e.Members, e.Endpoints)
}

// LeaderOf returns the index of the running member (members[i], with client address
// endpoints[i]) that reports itself leader.
func LeaderOf(ctx context.Context, cli *clientv3.Client, members []*Proc, endpoints []string) (int, error) {
	for i, ep := range endpoints {
		if !members[i].Running() {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		st, err := cli.Status(cctx, ep)
		cancel()
		if err == nil && st.Leader == st.Header.MemberId {
			return i, nil
		}
	}
	return -1, fmt.Errorf("no member reports itself leader")
}

// Compact compacts the history up to the current revision (physically) and returns it.
func (e *Etcd) Compact(ctx context.Context) (int64, error) {
	cli, err := e.Client(5 * time.Second)
	if err != nil {
		return 0, err
	}
	defer cli.Close()
	return CompactNow(ctx, cli)
}

// CompactNow compacts the history of cli's cluster up to its current revision (physically)
// and returns that revision.
func CompactNow(ctx context.Context, cli *clientv3.Client) (int64, error) {
	resp, err := cli.Get(ctx, "compact-probe")
	if err != nil {
		return 0, err
	}
	if _, err := cli.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		return 0, fmt.Errorf("compacting at %d: %w", resp.Header.Revision, err)
	}
	return resp.Header.Revision, nil
}

// EndpointList is the endpoints as one comma-separated string (ETCD_ENDPOINTS).
func (e *Etcd) EndpointList() string { return strings.Join(e.Endpoints, ",") }
