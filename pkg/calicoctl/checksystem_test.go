package calicoctl

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// fakeHost builds a host tree (proc, sys, lib/modules) for checkSystem.
func fakeHost(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, content := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		data := []byte(content)
		if strings.HasSuffix(p, ".gz") {
			var b bytes.Buffer
			gz := gzip.NewWriter(&b)
			gz.Write(data)
			gz.Close()
			data = b.Bytes()
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestCheckSystemSources(t *testing.T) {
	root := fakeHost(t, map[string]string{
		"proc/sys/kernel/osrelease":              "6.1.0-test\n",
		"proc/modules":                           "nf_conntrack 172032 3 nft_ct, Live 0x0000000000000000\n",
		"sys/module/vxlan/refcnt":                "0\n",
		"lib/modules/6.1.0-test/modules.builtin": "kernel/net/netfilter/nf_tables.ko\n",
		"lib/modules/6.1.0-test/modules.dep":     "kernel/net/netfilter/nft_ct.ko: kernel/net/netfilter/nf_conntrack.ko\nkernel/net/ipv4/ipip.ko.xz: kernel/net/ipv4/ip_tunnel.ko.xz\n",
		"proc/config.gz":                         "CONFIG_NFT_NAT=m\n# CONFIG_WIREGUARD is not set\nCONFIG_NF_CT_NETLINK=y\n",
		"proc/sys/net/ipv4/ip_forward":           "1\n",
		"proc/sys/net/ipv6/conf/all/forwarding":  "0\n",
	})
	var out bytes.Buffer
	if err := checkSystem(&out, hostView{root: root}); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{
		"kernel OK 6.1.0-test",
		"nf_tables OK module nf_tables built in",
		"conntrack OK module nf_conntrack loaded",
		"nft_ct OK module nft_ct loadable",
		"nft_nat OK module (CONFIG_NFT_NAT=m)",
		"nf_conntrack_netlink OK built in (CONFIG_NF_CT_NETLINK=y)",
		"vxlan OK module vxlan loaded",
		"ipip OK module ipip loadable",
		"wireguard MISSING optional: needed only for WireGuard encryption",
		"net.ipv4.ip_forward OK = 1",
		"net.ipv6.conf.all.forwarding MISSING = 0, want 1 (optional: needed only for IPv6 workloads)",
		"System meets minimum system requirements to run calico-host!",
	} {
		if !strings.Contains(squash(out.String()), want+"\n") {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

func TestCheckSystemMissingRequired(t *testing.T) {
	root := fakeHost(t, map[string]string{
		"proc/sys/kernel/osrelease":    "6.1.0-test\n",
		"proc/sys/net/ipv4/ip_forward": "0\n",
	})
	kconfig := filepath.Join(t.TempDir(), "config")
	os.WriteFile(kconfig, []byte("CONFIG_NF_TABLES=y\nCONFIG_NF_CONNTRACK=m\nCONFIG_NFT_CT=m\n"), 0o644)
	var out bytes.Buffer
	err := checkSystem(&out, hostView{root: root, kernelConfig: kconfig})
	if err == nil || err.Error() != "system doesn't meet one or more minimum systems requirements to run calico-host: net.ipv4.ip_forward" {
		t.Errorf("error %v\n%s", err, out.String())
	}
	out.Reset()
	err = checkSystem(&out, hostView{root: root})
	if err == nil || !strings.Contains(err.Error(), "nf_tables, conntrack, nft_ct, net.ipv4.ip_forward") ||
		!strings.Contains(squash(out.String()), "nf_tables MISSING required\n") {
		t.Errorf("error %v\n%s", err, out.String())
	}
}

// TestCheckSystemThisHost runs the command on this machine, whose kernel has nf_tables and
// VXLAN but neither IPIP nor WireGuard; it only reads.
func TestCheckSystemThisHost(t *testing.T) {
	if _, err := os.Stat("/proc/sys/kernel/osrelease"); err != nil {
		t.Skip("no /proc")
	}
	var out, errb bytes.Buffer
	code := Main([]string{"node", "checksystem"}, strings.NewReader(""), &out, &errb)
	t.Logf("exit %d\n%s%s", code, out.String(), errb.String())
	if !strings.Contains(out.String(), "nf_tables ") || !strings.Contains(out.String(), "FEATURE") {
		t.Errorf("no report:\n%s", out.String())
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(line, "nf_tables ") && !strings.Contains(line, " OK ") {
			t.Errorf("nf_tables not found on a host that has it: %q", line)
		}
	}
}

// squash collapses runs of spaces (table padding) to one.
func squash(s string) string {
	return regexp.MustCompile(` {2,}`).ReplaceAllString(s, " ")
}
