package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/netnstest"

	"github.com/vishvananda/netlink"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/datastore/etcdtest"
)

type env map[string]string

func (e env) lookup(k string) (string, bool) { v, ok := e[k]; return v, ok }

// datastoreFile writes a datastore.toml pointing at the embedded etcd.
func datastoreFile(t *testing.T, s *etcdtest.Server) string {
	p := filepath.Join(t.TempDir(), "datastore.toml")
	text := fmt.Sprintf("[etcd]\nendpoints = [%q]\n", s.Endpoints[0])
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func keyCount(t *testing.T, cli *clientv3.Client) int64 {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, "\x00", clientv3.WithFromKey(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return resp.Count
}

// TestBadConfigurationExitsConfigStatus: each invalid setting stops the command with exit code
// 78 (EX_CONFIG, which calico-startup.service lists in RestartPreventExitStatus=, so systemd
// does not restart it every few seconds forever) and a message naming the setting, before
// anything is written to etcd.
func TestBadConfigurationExitsConfigStatus(t *testing.T) {
	s := etcdtest.Start(t)
	ds := datastoreFile(t, s)
	base := env{"NODENAME": "host-z", "CALICO_NODENAME_FILE": filepath.Join(t.TempDir(), "nodename")}
	cases := []struct {
		name, file string
		env        env
		mention    []string
	}{
		{"bad pool CIDR", "", env{"CALICO_IPV4POOL_CIDR": "10.65.0.0/40"}, []string{"CALICO_IPV4POOL_CIDR", "ipv4_pool.cidr"}},
		{"unknown method", "", env{"IP_AUTODETECTION_METHOD": "closest"}, []string{"IP_AUTODETECTION_METHOD"}},
		{"bad v6 method", "", env{"IP6_AUTODETECTION_METHOD": "cidr=fd5c::/200"}, []string{"IP6_AUTODETECTION_METHOD"}},
		{"block size out of range", "", env{"CALICO_IPV4POOL_BLOCK_SIZE": "18"}, []string{"CALICO_IPV4POOL_BLOCK_SIZE"}},
		{"v6 block size out of range", "", env{"CALICO_IPV6POOL_BLOCK_SIZE": "129"}, []string{"CALICO_IPV6POOL_BLOCK_SIZE"}},
		{"bad backend", "", env{"CALICO_NETWORKING_BACKEND": "ospf"}, []string{"CALICO_NETWORKING_BACKEND"}},
		{"bad AS", "", env{"AS": "4294967296"}, []string{"AS", "as_number"}},
		{"bad file value", "[ipv4_pool]\nblock_size = 40\n", env{}, []string{"ipv4_pool.block_size", "CALICO_IPV4POOL_BLOCK_SIZE"}},
		{"unknown file key", "ip_method = \"first-found\"\n", env{}, []string{"ip_method", "line 1"}},
		{"metrics address without a port", "metrics_address = \"127.0.0.1\"\n", env{}, []string{"metrics_address", "CALICO_STARTUP_METRICS_ADDRESS"}},
		{"metrics port out of range", "", env{"CALICO_STARTUP_METRICS_ADDRESS": "127.0.0.1:70000"}, []string{"CALICO_STARTUP_METRICS_ADDRESS", "65535"}},
		{"bad datastore type", "", env{"DATASTORE_TYPE": "kubernetes"}, []string{"kubernetes"}},
		{"TLS file with an http endpoint", "", env{"ETCD_CA_CERT_FILE": "/etc/calico/pki/ca.pem"}, []string{"ETCD_CA_CERT_FILE", "plain http"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := filepath.Join(t.TempDir(), "node.toml")
			if tc.file != "" {
				if err := os.WriteFile(cfg, []byte(tc.file), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			e := env{}
			for k, v := range base {
				e[k] = v
			}
			for k, v := range tc.env {
				e[k] = v
			}
			var stderr bytes.Buffer
			code := run(context.Background(), []string{"--config", cfg, "--datastore-config", ds, "--run-once"}, e.lookup, &stderr)
			if code != 78 {
				t.Fatalf("exit code %d, want 78 (stderr %q)", code, stderr.String())
			}
			for _, m := range tc.mention {
				if !strings.Contains(stderr.String(), m) {
					t.Errorf("message does not name %q: %s", m, stderr.String())
				}
			}
		})
	}
	if n := keyCount(t, s.Client()); n != 0 {
		t.Errorf("invalid configurations wrote %d keys to etcd", n)
	}
}

func TestUsage(t *testing.T) {
	var out bytes.Buffer
	if code := run(context.Background(), []string{"--version"}, env{}.lookup, &out); code != 0 || out.Len() == 0 {
		t.Errorf("--version: code %d, output %q", code, out.String())
	}
	if code := run(context.Background(), []string{"--no-such-flag"}, env{}.lookup, &out); code != 2 {
		t.Errorf("unknown flag: code %d, want 2", code)
	}
}

// TestRunOnceInNetns runs the command with --run-once with its kernel access in a private
// network namespace: it registers the node, allocates the VXLAN tunnel address and exits 0.
func TestRunOnceInNetns(t *testing.T) {
	netnstest.Require(t)
	s := etcdtest.Start(t)
	ns := newNS(t, "198.18.6.2/24")
	nodenameFile := filepath.Join(t.TempDir(), "nodename")
	e := env{"NODENAME": "host-z", "CALICO_IPV4POOL_CIDR": "10.65.0.0/16", "CALICO_IPV4POOL_VXLAN": "Always",
		"AS": "64512", "CALICO_NODENAME_FILE": nodenameFile, "CALICO_LOG_FORMAT": "json"}
	var stderr bytes.Buffer
	code := -1
	ns.Do(t, func() {
		code = run(context.Background(), []string{"--config", filepath.Join(t.TempDir(), "none.toml"),
			"--datastore-config", datastoreFile(t, s), "--run-once"}, e.lookup, &stderr)
	})
	if code != 0 {
		t.Fatalf("exit code %d: %s", code, stderr.String())
	}
	ds, err := datastore.New(s.Datastore())
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := datastore.GetAs[*api.Node](ctx, ds, "", "host-z")
	if err != nil {
		t.Fatal(err)
	}
	if n.Spec.BGP == nil || n.Spec.BGP.IPv4Address != "198.18.6.2/24" || n.Spec.BGP.ASNumber == nil || *n.Spec.BGP.ASNumber != 64512 {
		t.Errorf("node BGP spec: %+v", n.Spec.BGP)
	}
	if ip := net.ParseIP(n.Spec.IPv4VXLANTunnelAddr); ip == nil || !strings.HasPrefix(ip.String(), "10.65.") {
		t.Errorf("tunnel address %q", n.Spec.IPv4VXLANTunnelAddr)
	}
	if got, _ := os.ReadFile(nodenameFile); string(got) != "host-z" {
		t.Errorf("nodename file: %q", got)
	}
}

// newNS creates a network namespace with one veth pair (eth0 holding addr).
func newNS(t *testing.T, addr string) *netnstest.NS {
	n := netnstest.New(t, "startup")
	h := n.Handle(t)
	if err := h.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "eth0"}, PeerName: "eth0p"}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"eth0", "eth0p"} {
		l, _ := h.LinkByName(name)
		if err := h.LinkSetUp(l); err != nil {
			t.Fatal(err)
		}
	}
	ip, ipn, _ := net.ParseCIDR(addr)
	ipn.IP = ip
	l, _ := h.LinkByName("eth0")
	if err := h.AddrAdd(l, &netlink.Addr{IPNet: ipn}); err != nil {
		t.Fatal(err)
	}
	return n
}
