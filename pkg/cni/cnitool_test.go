package cni_test

import (
	"encoding/json"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/cni/libcni"

	"github.com/calico-host/calico-host/pkg/cni"
	"github.com/calico-host/calico-host/pkg/datastore"
)

// TestCnitool drives the plugins with the cnitool command (built from the cni module in go.mod)
// run inside the host namespace: add, check, del.
func TestCnitool(t *testing.T) {
	r := newRig(t)
	netDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(netDir, "10-calico.conflist"), r.confListJSON(), 0o644); err != nil {
		t.Fatal(err)
	}
	ns := r.netns("c")
	run := func(verb string) string {
		t.Helper()
		cmd := exec.Command("ip", "netns", "exec", r.hostNS, filepath.Join(binDir, "cnitool"), verb, "calico-net", "/var/run/netns/"+ns)
		cmd.Env = append(os.Environ(), "NETCONFPATH="+netDir, "CNI_PATH="+binDir, "CNI_IFNAME=eth0")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("cnitool %s: %v\n%s", verb, err, out)
		}
		return string(out)
	}
	out := run("add")
	var res struct {
		Interfaces []struct{ Name string }    `json:"interfaces"`
		IPs        []struct{ Address string } `json:"ips"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("cnitool add printed %q: %v", out, err)
	}
	if len(res.IPs) != 2 || len(res.Interfaces) != 2 || !strings.HasPrefix(res.Interfaces[0].Name, "calicnitool-") {
		t.Fatalf("cnitool add result: %s", out)
	}
	p := netip.MustParsePrefix(res.IPs[0].Address)
	if link := r.ip("-n", ns, "-o", "addr", "show", "dev", "eth0"); !strings.Contains(link, p.String()) {
		t.Errorf("container eth0 lacks %s: %s", p, link)
	}
	if v := r.hostVeths(); len(v) != 1 || v[0] != res.Interfaces[0].Name {
		t.Errorf("host veths %v", v)
	}
	if w := r.keys(datastore.ResourcePrefix + "workloadendpoints/default/"); len(w) != 1 {
		t.Errorf("endpoints %v", w)
	}
	run("check")
	run("del")
	r.assertClean()
}

func (r *rig) confListJSON() []byte {
	b, _ := json.Marshal(map[string]any{"cniVersion": "1.0.0", "name": "calico-net", "plugins": []any{r.conf}})
	return b
}

// TestExampleConflist: the shipped example parses with libcni and with our NetConf.
func TestExampleConflist(t *testing.T) {
	path := filepath.Join(repoRoot(), "etc", "cni", "net.d", "10-calico.conflist")
	l, err := libcni.ConfListFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if l.Plugins[0].Network.Type != "calico" {
		t.Fatalf("first plugin is %q", l.Plugins[0].Network.Type)
	}
	var m map[string]any
	json.Unmarshal(l.Plugins[0].Bytes, &m)
	m["name"], m["cniVersion"] = l.Name, l.CNIVersion // what libcni adds when it runs the plugin
	b, _ := json.Marshal(m)
	c, err := cni.ParseNetConf(b)
	if err != nil {
		t.Fatal(err)
	}
	if c.IPAM.Type != "calico-ipam" || c.EtcdEndpoints == "" || c.EtcdCaCertFile == "" {
		t.Errorf("example config %+v", c)
	}
}
