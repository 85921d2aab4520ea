package etcdtest

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/calico-host/calico-host/pkg/config"
)

// Server is an embedded etcd.
type Server struct {
	t         testing.TB
	cfg       *embed.Config
	etcd      *embed.Etcd
	Endpoints []string
	TLS       *TLSFiles
}

// Start starts a plain-HTTP etcd on loopback and stops it when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	return start(t, nil)
}

// StartTLS starts an etcd that requires TLS client certificates.
func StartTLS(t testing.TB) *Server {
	t.Helper()
	files, err := GenerateTLS(t.TempDir())
	if err != nil {
		t.Fatalf("generating TLS files: %v", err)
	}
	return start(t, files)
}

func start(t testing.TB, files *TLSFiles) *Server {
	cfg := embed.NewConfig()
	cfg.Dir = t.TempDir()
	cfg.Name = "etcdtest"
	scheme := "http"
	if files != nil {
		scheme = "https"
		cfg.ClientTLSInfo.CertFile, cfg.ClientTLSInfo.KeyFile = files.ServerCert, files.ServerKey
		cfg.ClientTLSInfo.TrustedCAFile, cfg.ClientTLSInfo.ClientCertAuth = files.CA, true
	}
	clientURL, peerURL := mustURL(scheme, freePort(t)), mustURL("http", freePort(t))
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{clientURL}, []url.URL{clientURL}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peerURL}, []url.URL{peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.UnsafeNoFsync = true
	cfg.TickMs, cfg.ElectionMs = 10, 100
	s := &Server{t: t, cfg: cfg, Endpoints: []string{clientURL.String()}, TLS: files}
	s.run()
	t.Cleanup(s.Stop)
	return s
}

func (s *Server) run() {
	s.t.Helper()
	e, err := embed.StartEtcd(s.cfg)
	if err != nil {
		s.t.Fatalf("starting embedded etcd: %v", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		e.Close()
		s.t.Fatalf("embedded etcd did not become ready")
	}
	s.etcd = e
}

// Stop stops the server (idempotent). Clients see connection errors until Restart.
func (s *Server) Stop() {
	if s.etcd != nil {
		s.etcd.Close()
		s.etcd = nil
	}
}

// Restart starts a stopped server again with the same data and ports.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	s.run()
}

// Datastore returns the configuration that connects to this server.
func (s *Server) Datastore() config.Datastore {
	d := config.Datastore{Type: "etcdv3", Etcd: config.Etcd{Endpoints: s.Endpoints}}
	if s.TLS != nil {
		d.Etcd.CAFile, d.Etcd.CertFile, d.Etcd.KeyFile = s.TLS.CA, s.TLS.ClientCert, s.TLS.ClientKey
	}
	_ = d.Finish()
	return d
}

// Client returns a raw etcd client, closed when the test ends.
func (s *Server) Client() *clientv3.Client {
	s.t.Helper()
	cfg := clientv3.Config{Endpoints: s.Endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()}
	if s.TLS != nil {
		tc, err := s.TLS.ClientConfig()
		if err != nil {
			s.t.Fatalf("client TLS: %v", err)
		}
		cfg.TLS = tc
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		s.t.Fatalf("etcd client: %v", err)
	}
	s.t.Cleanup(func() { cli.Close() })
	return cli
}

// Compact compacts the history up to the current revision and returns that revision.
func (s *Server) Compact() int64 {
	s.t.Helper()
	cli := s.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, "compact-probe")
	if err != nil {
		s.t.Fatalf("reading revision: %v", err)
	}
	if _, err := cli.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		s.t.Fatalf("compacting at %d: %v", resp.Header.Revision, err)
	}
	return resp.Header.Revision
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func mustURL(scheme string, port int) url.URL {
	u, _ := url.Parse(fmt.Sprintf("%s://127.0.0.1:%d", scheme, port))
	return *u
}
