package datastore

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/calico-host/calico-host/pkg/config"
)

// Client reads and writes the datastore.
type Client struct {
	etcd *clientv3.Client
	now  func() time.Time
}

// Connection behaviour. An agent must notice a dead etcd within seconds and be back within about
// a second of etcd's return, whatever the length of the outage:
//
//   - Reconnect backoff: gRPC's default grows to 120 s, so after a long outage the next attempt
//     could come minutes after etcd returned. Ours starts at 100 ms and stays at or below 1 s
//     (each delay ±20 %), so one attempt per second and host at most while etcd is down.
//   - MinConnectTimeout bounds one attempt (TCP and TLS handshakes) when packets are dropped;
//     gRPC's default is 20 s. It is capped by the configured dial timeout.
//   - Keepalive: a ping after 10 s without traffic (gRPC's floor; etcd accepts one every 5 s by
//     default) that must be answered within 3 s. gRPC also sets TCP_USER_TIMEOUT to that timeout,
//     so a request written to a silently dead peer breaks the connection after 3 s. Watch
//     consumers detect a dead etcd faster with their own probes (pkg/syncer).
//   - Retries (clientv3's interceptor, for reads and for writes etcd did not receive): every
//     100 ms ±20 % on "unavailable" (leader changes, elections), at most 30 times, always within
//     the caller's context. Requests wait for a connection (clientv3 uses WaitForReady), bounded
//     by the caller's context too.
const (
	reconnectBaseDelay  = 100 * time.Millisecond
	reconnectMaxDelay   = time.Second
	reconnectMultiplier = 1.6
	reconnectJitter     = 0.2
	minConnectTimeout   = 3 * time.Second
	keepAliveTime       = 10 * time.Second
	keepAliveTimeout    = 3 * time.Second
	retryWait           = 100 * time.Millisecond
	retryJitter         = 0.2
	maxUnaryRetries     = 30
)

// New connects to etcd as configured. It does not wait for etcd to be reachable: calls fail (and
// callers retry) until it is.
func New(cfg config.Datastore) (*Client, error) {
	tlsCfg, err := tlsConfig(cfg.Etcd)
	if err != nil {
		return nil, err
	}
	cli, err := clientv3.New(clientConfig(cfg.Etcd, tlsCfg))
	if err != nil {
		return nil, fmt.Errorf("creating etcd client for %v: %w", cfg.Etcd.Endpoints, err)
	}
	return NewFromEtcd(cli), nil
}

// clientConfig is the etcd client configuration for e (see the constants above).
func clientConfig(e config.Etcd, tlsCfg *tls.Config) clientv3.Config {
	return clientv3.Config{
		Endpoints:             e.Endpoints,
		DialTimeout:           e.DialTimeout.Duration,
		DialKeepAliveTime:     keepAliveTime,
		DialKeepAliveTimeout:  keepAliveTimeout,
		MaxUnaryRetries:       maxUnaryRetries,
		BackoffWaitBetween:    retryWait,
		BackoffJitterFraction: retryJitter,
		TLS:                   tlsCfg,
		Username:              e.Username,
		Password:              e.Password,
		Logger:                zap.NewNop(),
		AutoSyncInterval:      5 * time.Minute,
		DialOptions: []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
			Backoff: backoff.Config{
				BaseDelay:  reconnectBaseDelay,
				Multiplier: reconnectMultiplier,
				Jitter:     reconnectJitter,
				MaxDelay:   reconnectMaxDelay,
			},
			MinConnectTimeout: connectTimeout(e),
		})},
	}
}

// connectTimeout bounds one connection attempt: minConnectTimeout, or the dial timeout if shorter.
func connectTimeout(e config.Etcd) time.Duration {
	if d := e.DialTimeout.Duration; d > 0 {
		return min(minConnectTimeout, d)
	}
	return minConnectTimeout
}

// NewFromEtcd wraps an existing etcd client.
func NewFromEtcd(cli *clientv3.Client) *Client {
	return &Client{etcd: cli, now: time.Now}
}

func tlsConfig(e config.Etcd) (*tls.Config, error) {
	if e.CAFile == "" && e.CertFile == "" {
		return nil, nil
	}
	info := transport.TLSInfo{CertFile: e.CertFile, KeyFile: e.KeyFile, TrustedCAFile: e.CAFile}
	c, err := info.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading etcd TLS files (ca %q, cert %q, key %q): %w", e.CAFile, e.CertFile, e.KeyFile, err)
	}
	return c, nil
}

// Etcd returns the underlying etcd client (for watches, leases and raw keys).
func (c *Client) Etcd() *clientv3.Client { return c.etcd }

// Close closes the connection.
func (c *Client) Close() error { return c.etcd.Close() }

// Ping checks that etcd answers (a cheap linearizable read: it also fails without a leader).
func (c *Client) Ping(ctx context.Context) error {
	_, err := c.etcd.Get(ctx, IPAMConfigKey, clientv3.WithCountOnly())
	return err
}
