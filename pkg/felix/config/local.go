package config

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/calico-host/calico-host/pkg/api"
	shared "github.com/calico-host/calico-host/pkg/config"
)

// Defaults for the local files.
const (
	DefaultConfigFile = "/etc/calico/felix.toml"
	envPrefix         = "FELIX_"
)

// Local is the configuration felix reads before it connects to the datastore: the environment,
// the config file and the shared datastore connection settings.
type Local struct {
	Env  Layer
	File Layer
	// DatastoreBase is /etc/calico/datastore.toml plus ETCD_* variables, before felix's own
	// Etcd* parameters are applied.
	DatastoreBase shared.Datastore
	// OSHostname is the default FelixHostname (lower-cased).
	OSHostname string
}

// LoadOptions says where to read the local configuration from.
type LoadOptions struct {
	ConfigFile    string   // default DefaultConfigFile; a missing file is fine
	DatastoreFile string   // default /etc/calico/datastore.toml
	Environ       []string // default os.Environ()
	// Hostname returns the OS hostname (default os.Hostname).
	Hostname func() (string, error)
}

// LoadLocal reads the environment, the config file and the datastore file. Errors are only
// returned for files that exist but cannot be read or parsed.
func LoadLocal(o LoadOptions) (*Local, error) {
	if o.ConfigFile == "" {
		o.ConfigFile = DefaultConfigFile
	}
	if o.DatastoreFile == "" {
		o.DatastoreFile = shared.DefaultDatastoreFile
	}
	if o.Environ == nil {
		o.Environ = os.Environ()
	}
	if o.Hostname == nil {
		o.Hostname = os.Hostname
	}
	l := &Local{Env: EnvLayer(o.Environ)}
	var err error
	if l.File, err = FileLayer(o.ConfigFile); err != nil {
		return nil, err
	}
	if l.DatastoreBase, err = loadDatastoreBase(o.DatastoreFile, o.Environ); err != nil {
		return nil, err
	}
	h, err := o.Hostname()
	if err != nil {
		return nil, fmt.Errorf("reading the OS hostname: %w", err)
	}
	l.OSHostname = strings.ToLower(strings.TrimSpace(h))
	return l, nil
}

// EnvLayer collects FELIX_<PARAM> variables (prefix and name case-insensitive).
func EnvLayer(environ []string) Layer {
	l := Layer{Source: SourceEnv, Origin: "environment", Values: map[string]string{}, Keys: map[string]string{}}
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || len(k) <= len(envPrefix) || !strings.EqualFold(k[:len(envPrefix)], envPrefix) {
			continue
		}
		name := k[len(envPrefix):]
		if p, ok := Lookup(name); ok {
			name = p.Name
		}
		l.Values[name], l.Keys[name] = v, k
	}
	return l
}

// FileLayer reads a felix.toml: top-level keys are parameter names (any case), values are
// strings, numbers, booleans or arrays of strings. A missing file gives an empty layer.
func FileLayer(path string) (Layer, error) {
	l := Layer{Source: SourceFile, Origin: path, Values: map[string]string{}, Keys: map[string]string{}}
	raw := map[string]any{}
	if _, err := shared.LoadTOML(path, &raw); err != nil {
		return l, err
	}
	for k, v := range raw {
		s, err := tomlString(v)
		if err != nil {
			return l, fmt.Errorf("%s: key %q: %w", path, k, err)
		}
		name := k
		if p, ok := Lookup(k); ok {
			name = p.Name
		}
		l.Values[name], l.Keys[name] = s, k
	}
	return l, nil
}

func tomlString(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case bool:
		return strconv.FormatBool(x), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), nil
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			s, err := tomlString(e)
			if err != nil {
				return "", err
			}
			parts[i] = s
		}
		return strings.Join(parts, ","), nil
	}
	return "", fmt.Errorf("unsupported value type %T (use a string, number, boolean or list)", v)
}

func loadDatastoreBase(path string, environ []string) (shared.Datastore, error) {
	env := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	var d shared.Datastore
	if _, err := shared.LoadTOML(path, &d); err != nil {
		return d, err
	}
	d.ApplyEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	return d, nil
}

// Datastore is the datastore's part of the configuration, as calc reports it.
type Datastore struct {
	// Global and Node are the specs of FelixConfiguration default and node.<hostname> (nil when
	// absent); Node's set fields win.
	Global, Node *api.FelixConfigurationSpec
	// Scoped is the spec of the selector-scoped FelixConfiguration named ScopedName that applies
	// to this host (nil when none does); it ranks between Global and Node.
	Scoped     *api.FelixConfigurationSpec
	ScopedName string
	Cluster    Cluster
}

// Resolve computes the configuration from the local sources and, when known, the datastore's
// part (nil before the datastore was read).
func (l *Local) Resolve(ds *Datastore) (*Config, []Problem) {
	c, problems := Resolve(l.Env, l.File)
	if c.FelixHostname == "" {
		c.FelixHostname = l.OSHostname
	}
	if ds == nil {
		return c, problems
	}
	host := c.FelixHostname
	c, problems = Resolve(l.Env, l.File, ScopedSpecLayer(ds.Global, ds.Scoped, ds.Node, host, ds.ScopedName))
	c.FelixHostname, c.Cluster = host, ds.Cluster // FelixHostname is local-only
	return c, problems
}

// Datastore returns the etcd connection: /etc/calico/datastore.toml and ETCD_* variables, overridden
// by felix's EtcdEndpoints (or EtcdScheme://EtcdAddr when EtcdAddr is set), EtcdCaFile,
// EtcdCertFile and EtcdKeyFile.
func (l *Local) Datastore(c *Config) (shared.Datastore, error) {
	d := l.DatastoreBase
	d.Etcd.Endpoints = append([]string(nil), d.Etcd.Endpoints...)
	switch {
	case len(c.EtcdEndpoints) > 0:
		d.Etcd.Endpoints = c.EtcdEndpoints
	case c.Sources["EtcdAddr"] != SourceDefault:
		d.Etcd.Endpoints = []string{c.EtcdScheme + "://" + c.EtcdAddr}
	}
	for _, o := range []struct{ v, field *string }{
		{&c.EtcdCaFile, &d.Etcd.CAFile}, {&c.EtcdCertFile, &d.Etcd.CertFile}, {&c.EtcdKeyFile, &d.Etcd.KeyFile},
	} {
		if *o.v != "" {
			*o.field = *o.v
		}
	}
	if err := d.Finish(); err != nil {
		return d, fmt.Errorf("datastore configuration: %w", err)
	}
	return d, nil
}
