package fleet

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/calico-host/calico-host/test/e2e/topo"
)

// Cluster is a 3-member etcd cluster (the Debian etcd binary) and K `etcd grpc-proxy`
// instances, all in one network namespace the harness creates, on loopback addresses of that
// namespace: member i on 127.0.1.(i+1), proxy k on 127.0.2.(k+1), client port 2379.
type Cluster struct {
	NS       *topo.Netns
	Dir      string
	Members  []*topo.Proc
	Proxies  []*topo.Proc
	keepDir  bool
	progress time.Duration
}

const members = 3

func memberIP(i int) string { return fmt.Sprintf("127.0.1.%d", i+1) }
func proxyIP(k int) string  { return fmt.Sprintf("127.0.2.%d", k+1) }

// MemberEndpoint is the client URL of member i.
func MemberEndpoint(i int) string { return "http://" + memberIP(i) + ":2379" }

// ProxyEndpoint is the client URL of proxy k.
func ProxyEndpoint(k int) string { return "http://" + proxyIP(k) + ":2379" }

// EtcdAvailable reports whether the etcd binary is on PATH.
func EtcdAvailable() bool { _, err := exec.LookPath("etcd"); return err == nil }

// StartCluster creates the namespace "ccfleet<pid>-<tag>", starts the members and `proxies`
// grpc-proxies, and waits until every member answers. Close removes everything.
func StartCluster(ctx context.Context, tag string, proxies int, progress time.Duration, keepDir bool) (*Cluster, error) {
	dir, err := os.MkdirTemp("", "calico-fleet-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{Dir: dir, keepDir: keepDir, progress: progress}
	if c.NS, err = topo.NewNetns(ctx, fmt.Sprintf("ccfleet%d-%s", os.Getpid(), tag)); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("creating the network namespace: %w", err)
	}
	var initial []string
	for i := range members {
		initial = append(initial, fmt.Sprintf("m%d=http://%s:2380", i, memberIP(i)))
	}
	for i := range members {
		c.Members = append(c.Members, c.memberProc(i, strings.Join(initial, ",")))
		if err := c.Members[i].Start(); err != nil {
			c.Close()
			return nil, err
		}
	}
	if err := c.WaitHealthy(ctx, time.Minute); err != nil {
		c.Close()
		return nil, err
	}
	for k := range proxies {
		c.Proxies = append(c.Proxies, c.proxyProc(k))
		if err := c.StartProxy(ctx, k); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// memberProc describes member i: 100 ms heartbeat, 1 s election timeout (etcd's defaults),
// an 8 GiB quota, metrics on the client URL, and idle watches told etcd's progress every
// c.progress (etcd's default, 10 minutes, when 0; see README "Deployment at scale").
func (c *Cluster) memberProc(i int, initial string) *topo.Proc {
	ip := memberIP(i)
	args := []string{"etcd", "--name", fmt.Sprintf("m%d", i), "--data-dir", filepath.Join(c.Dir, fmt.Sprintf("m%d", i)),
		"--listen-client-urls", "http://" + ip + ":2379", "--advertise-client-urls", "http://" + ip + ":2379",
		"--listen-peer-urls", "http://" + ip + ":2380", "--initial-advertise-peer-urls", "http://" + ip + ":2380",
		"--initial-cluster", initial, "--initial-cluster-state", "new", "--initial-cluster-token", "fleet",
		"--quota-backend-bytes", "8589934592", "--logger", "zap", "--log-level", "warn"}
	if c.progress > 0 {
		args = append(args, "--experimental-watch-progress-notify-interval", c.progress.String())
	}
	return topo.NewProc(fmt.Sprintf("etcd-m%d", i), c.NS, filepath.Join(c.Dir, fmt.Sprintf("etcd-m%d.log", i)), args...)
}

func (c *Cluster) proxyProc(k int) *topo.Proc {
	return topo.NewProc(fmt.Sprintf("grpc-proxy-%d", k), c.NS, filepath.Join(c.Dir, fmt.Sprintf("proxy-%d.log", k)),
		"etcd", "grpc-proxy", "start", "--endpoints="+c.memberList(), "--listen-addr="+proxyIP(k)+":2379")
}

func (c *Cluster) memberList() string {
	var eps []string
	for i := range members {
		eps = append(eps, memberIP(i)+":2379")
	}
	return strings.Join(eps, ",")
}

// StartProxy starts proxy k and waits until it accepts connections.
func (c *Cluster) StartProxy(ctx context.Context, k int) error {
	if err := c.Proxies[k].Start(); err != nil {
		return err
	}
	return topo.Eventually(ctx, 30*time.Second, 50*time.Millisecond, func() error {
		conn, err := c.NS.DialContext(ctx, "tcp", proxyIP(k)+":2379")
		if err == nil {
			conn.Close()
		}
		return err
	})
}

// Close stops everything and removes the namespace (and the directory unless kept).
func (c *Cluster) Close() {
	for _, p := range append(append([]*topo.Proc(nil), c.Proxies...), c.Members...) {
		p.Kill()
	}
	c.NS.Delete()
	if !c.keepDir {
		os.RemoveAll(c.Dir)
	}
}

// Client is an etcd client on the given endpoints, dialled inside the namespace, reconnecting
// quickly after an outage (as the daemons' clients do with their default gRPC settings, capped
// lower so that tests do not wait for gRPC's two-minute maximum).
func (c *Cluster) Client(endpoints ...string) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 10 * time.Second, Logger: zap.NewNop(),
		DialKeepAliveTime: 10 * time.Second, DialKeepAliveTimeout: 5 * time.Second,
		DialOptions: []grpc.DialOption{
			grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
				return c.NS.DialContext(ctx, "tcp", addr)
			}),
			grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoff.Config{BaseDelay: 200 * time.Millisecond,
				Multiplier: 1.6, Jitter: 0.2, MaxDelay: 3 * time.Second}, MinConnectTimeout: 5 * time.Second}),
		}})
}

// AdminClient is a client on every member.
func (c *Cluster) AdminClient() (*clientv3.Client, error) {
	var eps []string
	for i := range members {
		eps = append(eps, MemberEndpoint(i))
	}
	return c.Client(eps...)
}

// WaitHealthy waits until every running member answers a linearizable read.
func (c *Cluster) WaitHealthy(ctx context.Context, timeout time.Duration) error {
	return topo.Eventually(ctx, timeout, 200*time.Millisecond, func() error {
		for i, m := range c.Members {
			if !m.Running() {
				continue
			}
			if err := c.ping(ctx, MemberEndpoint(i)); err != nil {
				return fmt.Errorf("etcd member %d: %w", i, err)
			}
		}
		return nil
	})
}

func (c *Cluster) ping(ctx context.Context, ep string) error {
	cli, err := c.Client(ep)
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err = cli.Get(ctx, "health-probe")
	return err
}

// Leader returns the index of the leader.
func (c *Cluster) Leader(ctx context.Context) (int, error) {
	cli, err := c.AdminClient()
	if err != nil {
		return -1, err
	}
	defer cli.Close()
	endpoints := make([]string, len(c.Members))
	for i := range endpoints {
		endpoints[i] = memberIP(i) + ":2379"
	}
	return topo.LeaderOf(ctx, cli, c.Members, endpoints)
}

// Compact compacts the history up to the current revision (physically) and returns it.
func (c *Cluster) Compact(ctx context.Context) (int64, error) {
	cli, err := c.AdminClient()
	if err != nil {
		return 0, err
	}
	defer cli.Close()
	return topo.CompactNow(ctx, cli)
}

// MemberMetrics reads member i's Prometheus metrics ("" if it does not answer three times).
func (c *Cluster) MemberMetrics(ctx context.Context, i int) string {
	for range 3 {
		code, body, err := c.NS.HTTPGet(ctx, memberIP(i)+":2379", "/metrics")
		if err == nil && code == 200 {
			return body
		}
	}
	return ""
}
