package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// options are the command-line settings.
type options struct {
	name, dataDir           string
	listenClient            string
	listenPeer              string
	initialCluster          string
	clusterState            string
	tickMs, electionMs      uint
	quotaBytes              int64
	autoCompactionRetention string
	verbose                 bool
}

func main() {
	var o options
	flag.StringVar(&o.name, "name", "devetcd", "member name")
	flag.StringVar(&o.dataDir, "data-dir", "", "data directory (required)")
	flag.StringVar(&o.listenClient, "listen-client", "http://127.0.0.1:2379", "client URLs, comma-separated (also advertised)")
	flag.StringVar(&o.listenPeer, "listen-peer", "http://127.0.0.1:2380", "peer URL (also advertised)")
	flag.StringVar(&o.initialCluster, "initial-cluster", "", "name=peerURL,... (default: this member alone)")
	flag.StringVar(&o.clusterState, "initial-cluster-state", "new", "new or existing")
	flag.UintVar(&o.tickMs, "tick-ms", 100, "heartbeat interval in milliseconds")
	flag.UintVar(&o.electionMs, "election-ms", 1000, "election timeout in milliseconds")
	flag.Int64Var(&o.quotaBytes, "quota-bytes", 0, "backend quota (0: etcd's default)")
	flag.StringVar(&o.autoCompactionRetention, "auto-compaction-retention", "", "periodic auto-compaction retention (e.g. 1m; empty: off)")
	flag.BoolVar(&o.verbose, "v", false, "log etcd's messages to stderr")
	flag.Parse()
	if err := run(o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "devetcd:", err)
		os.Exit(1)
	}
}

func run(o options, stdout io.Writer) error {
	cfg, err := o.config()
	if err != nil {
		return err
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return fmt.Errorf("starting etcd: %w", err)
	}
	defer e.Close()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	select {
	case <-e.Server.ReadyNotify():
		fmt.Fprintf(stdout, "devetcd ready %s\n", o.listenClient)
	case err := <-e.Err():
		return fmt.Errorf("etcd failed before it was ready: %w", err)
	case <-sig:
		return nil
	}
	select {
	case err := <-e.Err():
		return fmt.Errorf("etcd failed: %w", err)
	case <-sig:
		return nil
	}
}

// config builds the embedded etcd's configuration.
func (o options) config() (*embed.Config, error) {
	if o.dataDir == "" {
		return nil, errors.New("-data-dir is required")
	}
	clients, err := parseURLs(o.listenClient)
	if err != nil {
		return nil, fmt.Errorf("-listen-client: %w", err)
	}
	peers, err := parseURLs(o.listenPeer)
	if err != nil {
		return nil, fmt.Errorf("-listen-peer: %w", err)
	}
	cfg := embed.NewConfig()
	cfg.Name, cfg.Dir = o.name, o.dataDir
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = clients, clients
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = peers, peers
	cfg.InitialCluster = o.initialCluster
	if cfg.InitialCluster == "" {
		cfg.InitialCluster = cfg.InitialClusterFromName(o.name)
	}
	cfg.ClusterState = o.clusterState
	cfg.TickMs, cfg.ElectionMs = o.tickMs, o.electionMs
	cfg.UnsafeNoFsync = true
	cfg.QuotaBackendBytes = o.quotaBytes
	if o.autoCompactionRetention != "" {
		cfg.AutoCompactionMode, cfg.AutoCompactionRetention = "periodic", o.autoCompactionRetention
	}
	if !o.verbose {
		cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	}
	return cfg, nil
}

func parseURLs(s string) ([]url.URL, error) {
	var out []url.URL
	for _, p := range strings.Split(s, ",") {
		u, err := url.Parse(strings.TrimSpace(p))
		if err != nil {
			return nil, err
		}
		if u.Host == "" {
			return nil, fmt.Errorf("%q has no host:port", p)
		}
		out = append(out, *u)
	}
	return out, nil
}
