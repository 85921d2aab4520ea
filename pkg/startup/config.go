package startup

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/config"
)

// DefaultConfigFile is where calico-startup reads its settings.
const DefaultConfigFile = "/etc/calico/node.toml"

// DefaultNodenameFile is where the node name is recorded for the other components.
const DefaultNodenameFile = "/var/lib/calico/nodename"

// Networking backends (CALICO_NETWORKING_BACKEND).
const (
	BackendBird  = "bird"
	BackendVXLAN = "vxlan"
	BackendNone  = "none"
)

// AddrMode says how a family's node address is chosen (IP, IP6).
type AddrMode int

// Address modes.
const (
	// AddrUnset (an empty value): autodetect only while the Node has no address of the family,
	// otherwise keep it (Project Calico's behaviour when IP is unset). For IPv6 it never detects.
	AddrUnset AddrMode = iota
	// AddrAutodetect: detect with the family's method on every run and on every address change.
	AddrAutodetect
	// AddrNone: never detect; keep whatever the Node has.
	AddrNone
	// AddrStatic: use the configured address (a bare IP takes its prefix length from the interface
	// that holds it, else /32 or /128).
	AddrStatic
)

// AddressConfig is how one family's node address is chosen.
type AddressConfig struct {
	Mode   AddrMode
	Static netip.Prefix // AddrStatic: the address; Bits() == -1 when given without a length
	Method Method
}

// PoolConfig describes the default pool of one family, created only when no pool of the family exists.
type PoolConfig struct {
	Skip             bool         // cidr = "none"
	CIDR             netip.Prefix // invalid = choose (IPv4: 192.168.0.0/16 or a free 172.16-31.0.0/16; IPv6: random ULA /48)
	BlockSize        int
	VXLANMode        string
	IPIPMode         string
	NATOutgoing      bool
	NodeSelector     string
	DisableBGPExport bool
}

// Config is calico-startup's validated configuration.
type Config struct {
	NodeName       string // empty: nodename file, then $HOSTNAME, then the OS hostname
	NodenameFile   string
	Backend        string
	ClusterType    string
	CalicoVersion  string // written to ClusterInformation calicoVersion; empty: never written
	ASNumber       *api.ASNumber
	NoDefaultPools bool
	IPv6Support    bool
	// WireguardHostEncryption is felix's WireguardHostEncryptionEnabled as Project Calico's
	// allocateip reads it (felix's environment): no WireGuard tunnel addresses.
	WireguardHostEncryption bool
	DisableNodeIPCheck      bool
	PollInterval            time.Duration
	LogSeverity             string
	MetricsAddress          config.ListenAddress // host:port of the Prometheus metrics server; empty: none
	Address                 [2]AddressConfig     // indexed by Family.index()
	Pool                    [2]PoolConfig
}

// AddressOf returns the address configuration of a family.
func (c *Config) AddressOf(f Family) *AddressConfig { return &c.Address[f.index()] }

// PoolOf returns the default pool configuration of a family.
func (c *Config) PoolOf(f Family) *PoolConfig { return &c.Pool[f.index()] }

// ConfigError is an invalid setting. It names the TOML key and the environment variable.
type ConfigError struct {
	Key, Env string
	Value    string
	Source   string // "environment" or the file path; empty for the default
	Err      error
}

func (e *ConfigError) Error() string {
	where := "default"
	switch {
	case e.Source == "environment":
		where = fmt.Sprintf("from environment %s", e.Env)
	case e.Source != "":
		where = fmt.Sprintf("from %s", e.Source)
	}
	return fmt.Sprintf("invalid setting %s / %s = %q (%s): %v", e.Key, e.Env, e.Value, where, e.Err)
}

func (e *ConfigError) Unwrap() error { return e.Err }

// LoadConfig reads the TOML file at path (a missing file is fine), applies the environment on top
// (a variable set to the empty string counts as unset, as in Project Calico) and validates the
// result. It touches neither the datastore nor the kernel.
func LoadConfig(path string, env config.Env) (Config, error) {
	var f fileConfig
	if _, err := config.LoadTOML(path, &f); err != nil {
		return Config{}, err
	}
	c := Config{}
	for _, s := range settings() {
		value, source := s.def, ""
		if v := s.field(&f); v.set {
			value, source = v.s, path
		}
		if v, ok := env(s.env); ok && v != "" {
			value, source = v, "environment"
		}
		if err := s.apply(&c, strings.TrimSpace(value)); err != nil {
			return Config{}, &ConfigError{Key: s.key, Env: s.env, Value: value, Source: source, Err: err}
		}
	}
	if err := c.check(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// check validates combinations of settings.
func (c *Config) check() error {
	for _, f := range Families {
		p := c.PoolOf(f)
		if c.NoDefaultPools && (p.CIDR.IsValid() || p.Skip) {
			return &ConfigError{Key: "no_default_pools", Env: "NO_DEFAULT_POOLS", Value: "true",
				Err: fmt.Errorf("conflicts with %s / %s: set one or the other", poolKey(f, "cidr"), poolEnv(f, "CIDR"))}
		}
		if err := p.validate(f); err != nil {
			return err
		}
	}
	return nil
}

// parseBool accepts the usual spellings, case-insensitively.
func parseBool(s string) (bool, error) {
	switch strings.ToLower(s) {
	case "true", "t", "yes", "y", "1", "on":
		return true, nil
	case "false", "f", "no", "n", "0", "off":
		return false, nil
	}
	return false, fmt.Errorf("not a boolean (use true or false)")
}

// parseEncap parses an IPIP or VXLAN mode as Project Calico does.
func parseEncap(s string) (string, error) {
	switch strings.ToLower(s) {
	case "", "off", "never":
		return api.EncapNever, nil
	case "crosssubnet", "cross-subnet":
		return api.EncapCrossSubnet, nil
	case "always":
		return api.EncapAlways, nil
	}
	return "", fmt.Errorf("unknown encapsulation mode (use Never, CrossSubnet or Always)")
}

// parseAddress parses IP / IP6.
func parseAddress(f Family, s string) (AddressConfig, error) {
	switch strings.ToLower(s) {
	case "":
		return AddressConfig{Mode: AddrUnset}, nil
	case "autodetect":
		return AddressConfig{Mode: AddrAutodetect}, nil
	case "none":
		return AddressConfig{Mode: AddrNone}, nil
	}
	var p netip.Prefix
	if strings.Contains(s, "/") {
		var err error
		if p, err = netip.ParsePrefix(s); err != nil {
			return AddressConfig{}, fmt.Errorf("not an IP address or CIDR (or autodetect, none)")
		}
	} else {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return AddressConfig{}, fmt.Errorf("not an IP address or CIDR (or autodetect, none)")
		}
		p = netip.PrefixFrom(a, -1)
	}
	if !f.Contains(p.Addr()) {
		return AddressConfig{}, fmt.Errorf("not an %s address", f)
	}
	return AddressConfig{Mode: AddrStatic, Static: p}, nil
}

func parseDuration(s string) (time.Duration, error) {
	if n, err := strconv.Atoi(s); err == nil {
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("not a positive duration (e.g. 60s)")
	}
	return d, nil
}
