package config

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// DefaultDatastoreFile is where the shared datastore connection is configured.
const DefaultDatastoreFile = "/etc/calico/datastore.toml"

// Datastore is the connection to etcd, shared by every component.
type Datastore struct {
	// Type must be "etcdv3" (the only datastore calico-host supports).
	Type string `toml:"datastore_type"`
	Etcd Etcd   `toml:"etcd"`
	// origins records where the etcd settings came from, for messages (see Note).
	origins map[string]origin
}

// Etcd holds the etcd endpoints and credentials.
type Etcd struct {
	Endpoints   []string `toml:"endpoints"`
	CAFile      string   `toml:"ca_file"`
	CertFile    string   `toml:"cert_file"`
	KeyFile     string   `toml:"key_file"`
	Username    string   `toml:"username"`
	Password    string   `toml:"password"`
	DialTimeout Duration `toml:"dial_timeout"`
}

// Duration is a time.Duration written as "5s" in TOML.
type Duration struct{ time.Duration }

// UnmarshalText parses a duration string.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	d.Duration = v
	return nil
}

// DefaultEndpoint is used when no endpoint is configured anywhere.
const DefaultEndpoint = "http://127.0.0.1:2379"

// Env looks up an environment variable (os.LookupEnv in production).
type Env func(string) (string, bool)

// OSEnv is the process environment.
var OSEnv Env = os.LookupEnv

// datastoreEnv maps each environment variable (with an optional CALICO_ prefix, as libcalico-go
// accepts) to the field it overrides.
func datastoreEnv(d *Datastore) map[string]*string {
	return map[string]*string{
		"DATASTORE_TYPE":    &d.Type,
		"ETCD_CA_CERT_FILE": &d.Etcd.CAFile,
		"ETCD_CERT_FILE":    &d.Etcd.CertFile,
		"ETCD_KEY_FILE":     &d.Etcd.KeyFile,
		"ETCD_USERNAME":     &d.Etcd.Username,
		"ETCD_PASSWORD":     &d.Etcd.Password,
	}
}

// LoadDatastore reads the datastore file (missing is fine) and applies the environment on top:
// ETCD_ENDPOINTS (comma list), ETCD_CA_CERT_FILE, ETCD_CERT_FILE, ETCD_KEY_FILE, ETCD_USERNAME,
// ETCD_PASSWORD, DATASTORE_TYPE, each also accepted with a CALICO_ prefix.
func LoadDatastore(path string, env Env) (Datastore, error) {
	var d Datastore
	if err := d.LoadFile(path); err != nil {
		return d, err
	}
	d.ApplyEnv(env)
	return d, d.Finish()
}

// LoadFile reads the datastore file into d (a missing file changes nothing) and notes the file as
// the origin of the settings it holds.
func (d *Datastore) LoadFile(path string) error {
	if _, err := LoadTOML(path, d); err != nil {
		return err
	}
	for _, s := range noted {
		d.Note(s.key, s.key+" in "+path)
	}
	return nil
}

// ApplyEnv overrides fields from the environment.
func (d *Datastore) ApplyEnv(env Env) {
	for name, field := range datastoreEnv(d) {
		if v, ok := lookupNamed(env, name); ok {
			*field = v.value
			d.noteEnv(name, v.name)
		}
	}
	if v, ok := lookupNamed(env, "ETCD_ENDPOINTS"); ok && v.value != "" {
		d.Etcd.Endpoints = SplitList(v.value)
		d.noteEnv("ETCD_ENDPOINTS", v.name)
	}
}

// Finish validates the result and fills in defaults.
func (d *Datastore) Finish() error {
	if d.Type != "" && d.Type != "etcdv3" {
		return fmt.Errorf("datastore type %q is not supported: calico-host only supports etcdv3", d.Type)
	}
	d.Type = "etcdv3"
	if len(d.Etcd.Endpoints) == 0 {
		d.Etcd.Endpoints = []string{DefaultEndpoint}
	}
	if (d.Etcd.CertFile == "") != (d.Etcd.KeyFile == "") {
		return fmt.Errorf("etcd cert_file and key_file must be set together (%s, %s)", d.describe(keyCertFile), d.describe(keyKeyFile))
	}
	if err := d.checkEndpoints(); err != nil {
		return err
	}
	if d.Etcd.DialTimeout.Duration == 0 {
		d.Etcd.DialTimeout.Duration = 5 * time.Second
	}
	return nil
}

// named is an environment value with the variable it came from.
type named struct{ name, value string }

func lookupNamed(env Env, name string) (named, bool) {
	if v, ok := env(name); ok {
		return named{name, v}, true
	}
	v, ok := env("CALICO_" + name)
	return named{"CALICO_" + name, v}, ok
}

// SplitList splits a comma-separated list, trimming spaces and dropping empty entries.
func SplitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
