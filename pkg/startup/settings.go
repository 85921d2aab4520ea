package startup

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/config"
)

// rawValue is a scalar TOML value kept as text, so that the file and the environment go through
// the same parser (and the same error messages).
type rawValue struct {
	s   string
	set bool
}

// UnmarshalTOML accepts strings, integers, floats and booleans.
func (r *rawValue) UnmarshalTOML(v any) error {
	switch x := v.(type) {
	case string:
		r.s = x
	case int64, float64, bool:
		r.s = fmt.Sprint(x)
	default:
		return fmt.Errorf("expected a string, number or boolean, got %T", v)
	}
	r.set = true
	return nil
}

// fileConfig is /etc/calico/node.toml. Unknown keys are errors.
type fileConfig struct {
	Nodename                rawValue `toml:"nodename"`
	NodenameFile            rawValue `toml:"nodename_file"`
	NetworkingBackend       rawValue `toml:"networking_backend"`
	ClusterType             rawValue `toml:"cluster_type"`
	CalicoVersion           rawValue `toml:"calico_version"`
	ASNumber                rawValue `toml:"as_number"`
	NoDefaultPools          rawValue `toml:"no_default_pools"`
	IPv6Support             rawValue `toml:"ipv6_support"`
	WireguardHostEncryption rawValue `toml:"wireguard_host_encryption_enabled"`
	IP                      rawValue `toml:"ip"`
	IPAutodetectionMethod   rawValue `toml:"ip_autodetection_method"`
	IP6                     rawValue `toml:"ip6"`
	IP6AutodetectionMethod  rawValue `toml:"ip6_autodetection_method"`
	AutodetectPollInterval  rawValue `toml:"autodetect_poll_interval"`
	DisableNodeIPCheck      rawValue `toml:"disable_node_ip_check"`
	LogSeverity             rawValue `toml:"log_severity"`
	MetricsAddress          rawValue `toml:"metrics_address"`
	IPv4Pool                filePool `toml:"ipv4_pool"`
	IPv6Pool                filePool `toml:"ipv6_pool"`
}

type filePool struct {
	CIDR             rawValue `toml:"cidr"`
	BlockSize        rawValue `toml:"block_size"`
	VXLANMode        rawValue `toml:"vxlan_mode"`
	IPIPMode         rawValue `toml:"ipip_mode"`
	NATOutgoing      rawValue `toml:"nat_outgoing"`
	NodeSelector     rawValue `toml:"node_selector"`
	DisableBGPExport rawValue `toml:"disable_bgp_export"`
}

func (f *fileConfig) pool(fam Family) *filePool {
	if fam == V4 {
		return &f.IPv4Pool
	}
	return &f.IPv6Pool
}

// setting is one configuration value: its TOML key, its environment variable, its default and
// how it is parsed into Config.
type setting struct {
	key, env, def string
	field         func(*fileConfig) *rawValue
	apply         func(c *Config, v string) error
}

// Setting describes one configuration value for documentation and tests.
type Setting struct{ Key, Env, Default string }

// Settings lists every key of node.toml with its environment variable and default.
func Settings() []Setting {
	var out []Setting
	for _, s := range settings() {
		out = append(out, Setting{Key: s.key, Env: s.env, Default: s.def})
	}
	return out
}

func settings() []setting {
	out := []setting{
		{"nodename", "NODENAME", "", func(f *fileConfig) *rawValue { return &f.Nodename },
			func(c *Config, v string) error { c.NodeName = v; return checkNodeName(v) }},
		{"nodename_file", "CALICO_NODENAME_FILE", DefaultNodenameFile, func(f *fileConfig) *rawValue { return &f.NodenameFile },
			func(c *Config, v string) error { c.NodenameFile = v; return nil }},
		{"networking_backend", "CALICO_NETWORKING_BACKEND", BackendBird, func(f *fileConfig) *rawValue { return &f.NetworkingBackend },
			applyBackend},
		{"cluster_type", "CLUSTER_TYPE", "", func(f *fileConfig) *rawValue { return &f.ClusterType },
			func(c *Config, v string) error { c.ClusterType = v; return nil }},
		{"calico_version", "CALICO_VERSION", "", func(f *fileConfig) *rawValue { return &f.CalicoVersion },
			func(c *Config, v string) error { c.CalicoVersion = v; return checkCalicoVersion(v) }},
		{"as_number", "AS", "", func(f *fileConfig) *rawValue { return &f.ASNumber }, applyAS},
		{"no_default_pools", "NO_DEFAULT_POOLS", "false", func(f *fileConfig) *rawValue { return &f.NoDefaultPools },
			boolInto(func(c *Config) *bool { return &c.NoDefaultPools })},
		{"ipv6_support", "FELIX_IPV6SUPPORT", "true", func(f *fileConfig) *rawValue { return &f.IPv6Support },
			boolInto(func(c *Config) *bool { return &c.IPv6Support })},
		{"wireguard_host_encryption_enabled", "FELIX_WIREGUARDHOSTENCRYPTIONENABLED", "false",
			func(f *fileConfig) *rawValue { return &f.WireguardHostEncryption },
			boolInto(func(c *Config) *bool { return &c.WireguardHostEncryption })},
		{"autodetect_poll_interval", "AUTODETECT_POLL_INTERVAL", "60s", func(f *fileConfig) *rawValue { return &f.AutodetectPollInterval },
			func(c *Config, v string) (err error) { c.PollInterval, err = parseDuration(v); return err }},
		{"disable_node_ip_check", "DISABLE_NODE_IP_CHECK", "false", func(f *fileConfig) *rawValue { return &f.DisableNodeIPCheck },
			boolInto(func(c *Config) *bool { return &c.DisableNodeIPCheck })},
		{"log_severity", "CALICO_STARTUP_LOGLEVEL", "Info", func(f *fileConfig) *rawValue { return &f.LogSeverity },
			func(c *Config, v string) error { c.LogSeverity = v; return checkSeverity(v) }},
		{"metrics_address", "CALICO_STARTUP_METRICS_ADDRESS", "", func(f *fileConfig) *rawValue { return &f.MetricsAddress },
			func(c *Config, v string) (err error) {
				c.MetricsAddress, err = config.ParseListenAddress(v)
				return err
			}},
	}
	for _, fam := range Families {
		out = append(out, addressSettings(fam)...)
	}
	for _, fam := range Families {
		out = append(out, poolSettings(fam)...)
	}
	return out
}

// addressSettings are IP/IP6 and their autodetection methods.
func addressSettings(fam Family) []setting {
	key, env, def := "ip", "IP", "autodetect"
	field := func(f *fileConfig) *rawValue { return &f.IP }
	methodField := func(f *fileConfig) *rawValue { return &f.IPAutodetectionMethod }
	if fam == V6 {
		key, env, def = "ip6", "IP6", ""
		field = func(f *fileConfig) *rawValue { return &f.IP6 }
		methodField = func(f *fileConfig) *rawValue { return &f.IP6AutodetectionMethod }
	}
	return []setting{
		{key, env, def, field, func(c *Config, v string) error {
			a, err := parseAddress(fam, v)
			a.Method = c.AddressOf(fam).Method
			*c.AddressOf(fam) = a
			return err
		}},
		{key + "_autodetection_method", env + "_AUTODETECTION_METHOD", MethodFirstFound, methodField,
			func(c *Config, v string) (err error) { c.AddressOf(fam).Method, err = ParseMethod(v); return err }},
	}
}

// poolSettings are the [ipv4_pool] / [ipv6_pool] keys and CALICO_IPV4POOL_* / CALICO_IPV6POOL_*.
func poolSettings(fam Family) []setting {
	p := func(c *Config) *PoolConfig { return c.PoolOf(fam) }
	block, nat := "26", "true"
	if fam == V6 {
		block, nat = "122", "false"
	}
	s := func(name, envName, def string, field func(*filePool) *rawValue, apply func(*PoolConfig, string) error) setting {
		return setting{poolKey(fam, name), poolEnv(fam, envName), def,
			func(f *fileConfig) *rawValue { return field(f.pool(fam)) },
			func(c *Config, v string) error { return apply(p(c), v) }}
	}
	return []setting{
		s("cidr", "CIDR", "", func(f *filePool) *rawValue { return &f.CIDR }, func(pc *PoolConfig, v string) error {
			return pc.parseCIDR(fam, v)
		}),
		s("block_size", "BLOCK_SIZE", block, func(f *filePool) *rawValue { return &f.BlockSize }, func(pc *PoolConfig, v string) error {
			return pc.parseBlockSize(fam, v)
		}),
		s("vxlan_mode", "VXLAN", "Never", func(f *filePool) *rawValue { return &f.VXLANMode }, func(pc *PoolConfig, v string) (err error) {
			pc.VXLANMode, err = parseEncap(v)
			return err
		}),
		s("ipip_mode", "IPIP", "Never", func(f *filePool) *rawValue { return &f.IPIPMode }, func(pc *PoolConfig, v string) (err error) {
			if pc.IPIPMode, err = parseEncap(v); err == nil && fam == V6 && pc.IPIPMode != api.EncapNever {
				err = fmt.Errorf("IPIP is not supported for IPv6 pools")
			}
			return err
		}),
		s("nat_outgoing", "NAT_OUTGOING", nat, func(f *filePool) *rawValue { return &f.NATOutgoing }, func(pc *PoolConfig, v string) (err error) {
			pc.NATOutgoing, err = parseBool(v)
			return err
		}),
		s("node_selector", "NODE_SELECTOR", "all()", func(f *filePool) *rawValue { return &f.NodeSelector }, func(pc *PoolConfig, v string) error {
			pc.NodeSelector = v
			return checkSelector(v)
		}),
		s("disable_bgp_export", "DISABLE_BGP_EXPORT", "false", func(f *filePool) *rawValue { return &f.DisableBGPExport }, func(pc *PoolConfig, v string) (err error) {
			pc.DisableBGPExport, err = parseBool(v)
			return err
		}),
	}
}

func poolKey(fam Family, name string) string {
	return fmt.Sprintf("ipv%d_pool.%s", int(fam), name)
}

func poolEnv(fam Family, name string) string {
	return fmt.Sprintf("CALICO_IPV%dPOOL_%s", int(fam), name)
}

func boolInto(field func(*Config) *bool) func(*Config, string) error {
	return func(c *Config, v string) (err error) {
		*field(c), err = parseBool(v)
		return err
	}
}

func applyBackend(c *Config, v string) error {
	c.Backend = strings.ToLower(v)
	switch c.Backend {
	case BackendBird, BackendVXLAN, BackendNone:
		return nil
	}
	return fmt.Errorf("unknown networking backend (use bird, vxlan or none)")
}

func applyAS(c *Config, v string) error {
	if v == "" {
		return nil
	}
	as, err := api.ParseASNumber(v)
	if err != nil {
		return fmt.Errorf("not a valid AS number (e.g. 64512 or 1.10)")
	}
	c.ASNumber = &as
	return nil
}

func (p *PoolConfig) parseBlockSize(fam Family, v string) error {
	n, err := strconv.Atoi(v)
	if err != nil {
		return fmt.Errorf("not an integer")
	}
	lo, hi := 20, 32
	if fam == V6 {
		lo, hi = 116, 128
	}
	if n < lo || n > hi {
		return fmt.Errorf("block size %d is out of range: %s blocks must be /%d to /%d", n, fam, lo, hi)
	}
	p.BlockSize = n
	return nil
}
