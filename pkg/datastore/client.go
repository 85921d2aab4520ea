package datastore

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/calico-host/calico-host/pkg/config"
)

// Client reads and writes the datastore.
type Client struct {
	etcd *clientv3.Client
	now  func() time.Time
}

// New connects to etcd as configured. It does not wait for etcd to be reachable: calls fail (and
// callers retry) until it is.
func New(cfg config.Datastore) (*Client, error) {
	tlsCfg, err := tlsConfig(cfg.Etcd)
	if err != nil {
		return nil, err
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:            cfg.Etcd.Endpoints,
		DialTimeout:          cfg.Etcd.DialTimeout.Duration,
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: 5 * time.Second,
		TLS:                  tlsCfg,
		Username:             cfg.Etcd.Username,
		Password:             cfg.Etcd.Password,
		Logger:               zap.NewNop(),
		AutoSyncInterval:     5 * time.Minute,
	})
	if err != nil {
		return nil, fmt.Errorf("creating etcd client for %v: %w", cfg.Etcd.Endpoints, err)
	}
	return NewFromEtcd(cli), nil
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

// Ping checks that etcd answers (a cheap serializable read).
func (c *Client) Ping(ctx context.Context) error {
	_, err := c.etcd.Get(ctx, IPAMConfigKey, clientv3.WithCountOnly())
	return err
}
