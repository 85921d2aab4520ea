package calicoctl

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/calico-host/calico-host/pkg/config"
	"github.com/calico-host/calico-host/pkg/datastore"
)

// opTimeout bounds each datastore request, so an unreachable etcd fails instead of hanging.
const opTimeout = 15 * time.Second

// session is a connected invocation.
type session struct {
	*cli
	ds *datastore.Client
	// beforePatchWrite, when set, runs between reading and writing each attempt of a patch
	// (tests use it to make a concurrent change).
	beforePatchWrite func()
}

// connect loads the datastore configuration and connects. With no --config, it reads
// /etc/calico/datastore.toml (missing is fine) and the environment (ETCD_ENDPOINTS, ...). A
// --config file may be our TOML or Project Calico's calicoctl.cfg (kind CalicoAPIConfig, YAML or
// JSON); the environment applies on top of either.
func (c *cli) connect(configPath string) (*session, error) {
	cfg, err := c.loadDatastoreConfig(configPath)
	if err != nil {
		return nil, failf("Failed to create Calico API client: %w", err)
	}
	ds, err := datastore.New(cfg)
	if err != nil {
		return nil, failf("Failed to create Calico API client: %w", err)
	}
	return &session{cli: c, ds: ds}, nil
}

func (s *session) close() { _ = s.ds.Close() }

// op returns a context for one datastore request.
func (s *session) op() (context.Context, context.CancelFunc) {
	return context.WithTimeout(s.ctx, opTimeout)
}

func (c *cli) loadDatastoreConfig(path string) (config.Datastore, error) {
	if path == "" {
		return config.LoadDatastore(config.DefaultDatastoreFile, c.env)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return config.Datastore{}, fmt.Errorf("reading config file: %w", err)
	}
	if !isCalicoAPIConfig(data) {
		return config.LoadDatastore(path, c.env)
	}
	d, err := parseCalicoAPIConfig(path, data)
	if err != nil {
		return d, err
	}
	d.ApplyEnv(c.env)
	return d, d.Finish()
}

// calicoAPIConfig is the part of Project Calico's calicoctl.cfg that applies to etcd.
type calicoAPIConfig struct {
	Kind string `json:"kind"`
	Spec struct {
		DatastoreType  string `json:"datastoreType"`
		EtcdEndpoints  string `json:"etcdEndpoints"`
		EtcdUsername   string `json:"etcdUsername"`
		EtcdPassword   string `json:"etcdPassword"`
		EtcdKeyFile    string `json:"etcdKeyFile"`
		EtcdCertFile   string `json:"etcdCertFile"`
		EtcdCACertFile string `json:"etcdCACertFile"`
	} `json:"spec"`
}

func isCalicoAPIConfig(data []byte) bool {
	var probe struct {
		Kind string `json:"kind"`
	}
	return yaml.Unmarshal(data, &probe) == nil && probe.Kind == "CalicoAPIConfig"
}

func parseCalicoAPIConfig(path string, data []byte) (config.Datastore, error) {
	var c calicoAPIConfig
	if err := yaml.Unmarshal(data, &c); err != nil {
		return config.Datastore{}, fmt.Errorf("%s: %w", path, err)
	}
	s := c.Spec
	d := config.Datastore{Type: strings.TrimSpace(s.DatastoreType), Etcd: config.Etcd{
		Endpoints: config.SplitList(s.EtcdEndpoints), Username: s.EtcdUsername, Password: s.EtcdPassword,
		KeyFile: s.EtcdKeyFile, CertFile: s.EtcdCertFile, CAFile: s.EtcdCACertFile,
	}}
	return d, nil
}
