package startup

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/api"
)

// envMap is an injectable environment.
type envMap map[string]string

func (m envMap) lookup(k string) (string, bool) { v, ok := m[k]; return v, ok }

func writeFile(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "node.toml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConfigDefaults(t *testing.T) {
	c, err := LoadConfig(filepath.Join(t.TempDir(), "missing.toml"), envMap{}.lookup)
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name string
		got  any
		want any
	}{
		{"backend", c.Backend, BackendBird},
		{"metrics address", string(c.MetricsAddress), ""},
		{"nodename file", c.NodenameFile, DefaultNodenameFile},
		{"ip mode", c.AddressOf(V4).Mode, AddrAutodetect},
		{"ip method", c.AddressOf(V4).Method.Name, MethodFirstFound},
		{"ip6 mode", c.AddressOf(V6).Mode, AddrUnset},
		{"v4 block", c.PoolOf(V4).BlockSize, 26},
		{"v6 block", c.PoolOf(V6).BlockSize, 122},
		{"v4 nat", c.PoolOf(V4).NATOutgoing, true},
		{"v6 nat", c.PoolOf(V6).NATOutgoing, false},
		{"v4 vxlan", c.PoolOf(V4).VXLANMode, api.EncapNever},
		{"v4 selector", c.PoolOf(V4).NodeSelector, "all()"},
		{"v4 cidr chosen later", c.PoolOf(V4).CIDR.IsValid(), false},
		{"ipv6 support", c.IPv6Support, true},
		{"poll", c.PollInterval, 60 * time.Second},
		{"as", c.ASNumber == nil, true},
	}
	for _, ck := range checks {
		if ck.got != ck.want {
			t.Errorf("%s: got %v, want %v", ck.name, ck.got, ck.want)
		}
	}
}

func TestConfigEnvironmentWinsOverFile(t *testing.T) {
	path := writeFile(t, `
nodename = "from-file"
as_number = 64000
ip = "198.18.0.5/24"
metrics_address = "127.0.0.1:9093"
[ipv4_pool]
cidr = "10.65.0.0/16"
block_size = 24
vxlan_mode = "CrossSubnet"
nat_outgoing = false
`)
	env := envMap{"NODENAME": "from-env", "CALICO_IPV4POOL_BLOCK_SIZE": "28", "AS": "1.10", "CALICO_IPV4POOL_VXLAN": ""}
	c, err := LoadConfig(path, env.lookup)
	if err != nil {
		t.Fatal(err)
	}
	if c.MetricsAddress != "127.0.0.1:9093" {
		t.Errorf("metrics_address from the file: got %q", c.MetricsAddress)
	}
	if c.NodeName != "from-env" {
		t.Errorf("nodename: env must win, got %q", c.NodeName)
	}
	if p := c.PoolOf(V4); p.BlockSize != 28 || p.CIDR != netip.MustParsePrefix("10.65.0.0/16") || p.NATOutgoing {
		t.Errorf("pool: got %+v", p)
	}
	if got := c.PoolOf(V4).VXLANMode; got != api.EncapCrossSubnet {
		t.Errorf("an empty environment variable must not override the file: vxlan mode %q", got)
	}
	if c.ASNumber == nil || *c.ASNumber != 1<<16|10 {
		t.Errorf("AS asdot 1.10: got %v", c.ASNumber)
	}
	if a := c.AddressOf(V4); a.Mode != AddrStatic || a.Static != netip.MustParsePrefix("198.18.0.5/24") {
		t.Errorf("ip: got %+v", a)
	}
}

func TestConfigErrorsNameTheSetting(t *testing.T) {
	cases := []struct {
		name     string
		file     string
		env      envMap
		key, evn string
	}{
		{"bad v4 cidr", "", envMap{"CALICO_IPV4POOL_CIDR": "10.65.0.0/33"}, "ipv4_pool.cidr", "CALICO_IPV4POOL_CIDR"},
		{"v6 cidr for v4 pool", "", envMap{"CALICO_IPV4POOL_CIDR": "fd5c::/48"}, "ipv4_pool.cidr", "CALICO_IPV4POOL_CIDR"},
		{"host bits", "[ipv4_pool]\ncidr = \"10.65.0.1/16\"\n", nil, "ipv4_pool.cidr", "CALICO_IPV4POOL_CIDR"},
		{"bad v6 cidr", "", envMap{"CALICO_IPV6POOL_CIDR": "nonsense"}, "ipv6_pool.cidr", "CALICO_IPV6POOL_CIDR"},
		{"unknown method", "", envMap{"IP_AUTODETECTION_METHOD": "best-guess"}, "ip_autodetection_method", "IP_AUTODETECTION_METHOD"},
		{"unknown method with arg", "", envMap{"IP_AUTODETECTION_METHOD": "nearest=1.2.3.4"}, "ip_autodetection_method", "IP_AUTODETECTION_METHOD"},
		{"k8s method", "", envMap{"IP6_AUTODETECTION_METHOD": "kubernetes-internal-ip"}, "ip6_autodetection_method", "IP6_AUTODETECTION_METHOD"},
		{"bad interface regex", "", envMap{"IP_AUTODETECTION_METHOD": "interface=eth(0"}, "ip_autodetection_method", "IP_AUTODETECTION_METHOD"},
		{"bad cidr method", "ip_autodetection_method = \"cidr=198.18.0.0/40\"\n", nil, "ip_autodetection_method", "IP_AUTODETECTION_METHOD"},
		{"empty can-reach", "", envMap{"IP_AUTODETECTION_METHOD": "can-reach="}, "ip_autodetection_method", "IP_AUTODETECTION_METHOD"},
		{"block too small", "", envMap{"CALICO_IPV4POOL_BLOCK_SIZE": "19"}, "ipv4_pool.block_size", "CALICO_IPV4POOL_BLOCK_SIZE"},
		{"block too big", "[ipv4_pool]\nblock_size = 33\n", nil, "ipv4_pool.block_size", "CALICO_IPV4POOL_BLOCK_SIZE"},
		{"v6 block too small", "", envMap{"CALICO_IPV6POOL_BLOCK_SIZE": "115"}, "ipv6_pool.block_size", "CALICO_IPV6POOL_BLOCK_SIZE"},
		{"block not a number", "", envMap{"CALICO_IPV4POOL_BLOCK_SIZE": "big"}, "ipv4_pool.block_size", "CALICO_IPV4POOL_BLOCK_SIZE"},
		{"block larger than pool", "", envMap{"CALICO_IPV4POOL_CIDR": "10.65.0.0/26", "CALICO_IPV4POOL_BLOCK_SIZE": "24"}, "ipv4_pool.block_size", "CALICO_IPV4POOL_BLOCK_SIZE"},
		{"vxlan and ipip", "", envMap{"CALICO_IPV4POOL_VXLAN": "Always", "CALICO_IPV4POOL_IPIP": "Always"}, "ipv4_pool.ipip_mode", "CALICO_IPV4POOL_IPIP"},
		{"bad vxlan mode", "", envMap{"CALICO_IPV4POOL_VXLAN": "sometimes"}, "ipv4_pool.vxlan_mode", "CALICO_IPV4POOL_VXLAN"},
		{"v6 ipip", "[ipv6_pool]\nipip_mode = \"Always\"\n", nil, "ipv6_pool.ipip_mode", "CALICO_IPV6POOL_IPIP"},
		{"bad nat bool", "", envMap{"CALICO_IPV4POOL_NAT_OUTGOING": "perhaps"}, "ipv4_pool.nat_outgoing", "CALICO_IPV4POOL_NAT_OUTGOING"},
		{"bad selector", "", envMap{"CALICO_IPV4POOL_NODE_SELECTOR": "zone =="}, "ipv4_pool.node_selector", "CALICO_IPV4POOL_NODE_SELECTOR"},
		{"bad backend", "", envMap{"CALICO_NETWORKING_BACKEND": "gobgp"}, "networking_backend", "CALICO_NETWORKING_BACKEND"},
		{"bad AS", "", envMap{"AS": "sixty"}, "as_number", "AS"},
		{"bad IP", "", envMap{"IP": "198.18.0.300"}, "ip", "IP"},
		{"IP6 with IPv4", "", envMap{"IP6": "198.18.0.3"}, "ip6", "IP6"},
		{"bad node name", "", envMap{"NODENAME": "Host_Z"}, "nodename", "NODENAME"},
		{"bad calico version", "", envMap{"CALICO_VERSION": "v3.30 with spaces"}, "calico_version", "CALICO_VERSION"},
		{"bad log level", "", envMap{"CALICO_STARTUP_LOGLEVEL": "chatty"}, "log_severity", "CALICO_STARTUP_LOGLEVEL"},
		{"metrics address without port", "metrics_address = \"127.0.0.1\"\n", nil, "metrics_address", "CALICO_STARTUP_METRICS_ADDRESS"},
		{"metrics port zero", "", envMap{"CALICO_STARTUP_METRICS_ADDRESS": "127.0.0.1:0"}, "metrics_address", "CALICO_STARTUP_METRICS_ADDRESS"},
		{"metrics port not a number", "", envMap{"CALICO_STARTUP_METRICS_ADDRESS": ":http-alt"}, "metrics_address", "CALICO_STARTUP_METRICS_ADDRESS"},
		{"bad poll", "", envMap{"AUTODETECT_POLL_INTERVAL": "-3s"}, "autodetect_poll_interval", "AUTODETECT_POLL_INTERVAL"},
		{"no pools and a cidr", "", envMap{"NO_DEFAULT_POOLS": "true", "CALICO_IPV4POOL_CIDR": "10.65.0.0/16"}, "no_default_pools", "NO_DEFAULT_POOLS"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "missing.toml")
			if tc.file != "" {
				path = writeFile(t, tc.file)
			}
			env := tc.env
			if env == nil {
				env = envMap{}
			}
			_, err := LoadConfig(path, env.lookup)
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("want a ConfigError, got %v", err)
			}
			if ce.Key != tc.key || ce.Env != tc.evn {
				t.Errorf("error names %s / %s, want %s / %s: %v", ce.Key, ce.Env, tc.key, tc.evn, err)
			}
			if msg := err.Error(); !strings.Contains(msg, tc.key) || !strings.Contains(msg, tc.evn) {
				t.Errorf("message must name the key and the variable: %s", msg)
			}
		})
	}
}

func TestConfigFileErrors(t *testing.T) {
	cases := map[string]string{
		"unknown key":       "nodename = \"a\"\nip_autodetect = \"first-found\"\n",
		"unknown pool key":  "[ipv4_pool]\ncidr = \"10.65.0.0/16\"\nblocksize = 26\n",
		"table as a scalar": "ipv4_pool = 3\n",
	}
	for name, text := range cases {
		t.Run(name, func(t *testing.T) {
			path := writeFile(t, text)
			_, err := LoadConfig(path, envMap{}.lookup)
			if err == nil || !strings.Contains(err.Error(), path) {
				t.Fatalf("want an error naming %s, got %v", path, err)
			}
		})
	}
}

// TestShippedConfigDocumentsEverySetting checks that etc/calico/node.toml names every key, its
// environment variable and its default, and that the file (all commented out) loads.
func TestShippedConfigDocumentsEverySetting(t *testing.T) {
	path := filepath.Join("..", "..", "etc", "calico", "node.toml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for _, s := range Settings() {
		leaf := s.Key[strings.LastIndex(s.Key, ".")+1:]
		if !strings.Contains(text, leaf+" =") || !strings.Contains(text, s.Env) {
			t.Errorf("%s (%s) is not documented in %s", s.Key, s.Env, path)
		}
	}
	if _, err := LoadConfig(path, envMap{}.lookup); err != nil {
		t.Errorf("the shipped file must load: %v", err)
	}
	uncommented := commentsRemoved(text)
	if _, err := LoadConfig(writeFile(t, uncommented), envMap{}.lookup); err != nil {
		t.Errorf("the shipped file with every setting uncommented must load: %v", err)
	}
}

// commentsRemoved uncomments "# key = value" lines and "# [table]" headers.
func commentsRemoved(text string) string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		l := strings.TrimSpace(line)
		rest, ok := strings.CutPrefix(l, "# ")
		if ok && (strings.HasPrefix(rest, "[") || (strings.Contains(rest, " = ") && !strings.Contains(strings.SplitN(rest, " = ", 2)[0], " "))) {
			out = append(out, rest)
		}
	}
	return strings.Join(out, "\n")
}
