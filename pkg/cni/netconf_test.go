package cni

import (
	"encoding/json"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/calico-host/calico-host/pkg/datastore/etcdtest"
)

func fixtureBytes(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(etcdtest.FixturePath(name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseNetConfFixture(t *testing.T) {
	c, err := ParseNetConf(fixtureBytes(t, "cni-netconf-etcd.json"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "calico-net" || c.EtcdEndpoints != "http://127.0.0.1:23790" || c.Nodename != "host-a" ||
		c.MTU != 1410 || c.IPAM.Type != "calico-ipam" || !c.IPAM.WantIPv4() || !c.IPAM.WantIPv6() || c.LogLevel != "warning" {
		t.Errorf("parsed %+v", c)
	}
	d, err := c.Datastore(func(string) (string, bool) { return "", false }, "")
	if err != nil || len(d.Etcd.Endpoints) != 1 || d.Etcd.Endpoints[0] != "http://127.0.0.1:23790" {
		t.Errorf("datastore %+v %v", d, err)
	}
}

func TestParseNetConfErrors(t *testing.T) {
	cases := []struct {
		name string
		conf string
		code uint
	}{
		{"invalid JSON", `{"name": "n", `, types.ErrDecodingFailure},
		{"bad network name", `{"name": "a b", "type": "calico", "ipam": {"type": "calico-ipam"}}`, types.ErrInvalidNetworkConfig},
		{"kubernetes datastore", `{"name": "n", "datastore_type": "kubernetes", "ipam": {"type": "calico-ipam"}}`, types.ErrInvalidNetworkConfig},
		{"no ipam", `{"name": "n", "type": "calico"}`, types.ErrInvalidNetworkConfig},
		{"no family", `{"name": "n", "ipam": {"type": "calico-ipam", "assign_ipv4": "false"}}`, types.ErrInvalidNetworkConfig},
		{"bad mtu", `{"name": "n", "mtu": 100, "ipam": {"type": "calico-ipam"}}`, types.ErrInvalidNetworkConfig},
		{"netkit", `{"name": "n", "device_type": "netkit", "ipam": {"type": "calico-ipam"}}`, types.ErrInvalidNetworkConfig},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseNetConf([]byte(c.conf))
			var e *types.Error
			if !errors.As(err, &e) || e.Code != c.code || e.Msg == "" {
				t.Fatalf("want CNI error code %d, got %#v", c.code, err)
			}
		})
	}
}

func TestAssignFamilies(t *testing.T) {
	str := func(s string) *string { return &s }
	cases := []struct {
		v4, v6      *string
		want4, wan6 bool
	}{
		{nil, nil, true, false},
		{str("true"), str("true"), true, true},
		{str("false"), str("true"), false, true},
		{str("no"), str("yes"), true, false}, // only "false" disables v4, only "true" enables v6
	}
	for _, c := range cases {
		ic := IPAMConf{AssignIPv4: c.v4, AssignIPv6: c.v6}
		if ic.WantIPv4() != c.want4 || ic.WantIPv6() != c.wan6 {
			t.Errorf("%v/%v: got %v/%v", c.v4, c.v6, ic.WantIPv4(), ic.WantIPv6())
		}
	}
}

func TestNodeName(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "nodename")
	if err := os.WriteFile(file, []byte("from-file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")
	host, _ := os.Hostname()
	cases := []struct {
		conf    NetConf
		want    string
		wantErr bool
	}{
		{NetConf{Nodename: "explicit", NodenameFile: file}, "explicit", false},
		{NetConf{NodenameFile: file, Hostname: "legacy"}, "from-file", false},
		{NetConf{NodenameFile: missing}, "", true},
		{NetConf{NodenameFile: missing, NodenameFileOptional: true, Hostname: "legacy"}, "legacy", false},
		{NetConf{NodenameFile: missing, NodenameFileOptional: true}, host, false},
	}
	for i, c := range cases {
		got, err := c.conf.NodeName()
		if (err != nil) != c.wantErr || (!c.wantErr && got != c.want) {
			t.Errorf("case %d: got %q, %v", i, got, err)
		}
	}
}

func TestResolveMTU(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "mtu")
	os.WriteFile(good, []byte("1440\n"), 0o644)
	bad := filepath.Join(dir, "bad")
	os.WriteFile(bad, []byte("huge"), 0o644)
	cases := []struct {
		conf    NetConf
		file    string
		want    MTU
		wantErr bool
	}{
		{NetConf{MTU: 1410}, good, 1410, false},
		{NetConf{}, good, 1440, false},
		{NetConf{}, filepath.Join(dir, "none"), DefaultMTU, false},
		{NetConf{RequireMTUFile: true}, filepath.Join(dir, "none"), 0, true},
		{NetConf{}, bad, 0, true},
	}
	for i, c := range cases {
		got, err := c.conf.ResolveMTU(c.file)
		if (err != nil) != c.wantErr || got != c.want {
			t.Errorf("case %d: got %d, %v", i, got, err)
		}
	}
}

func TestWorkloadNames(t *testing.T) {
	w := mustWorkload(t, "calico-net", "host-a", "cidpwl20000000000", "eth0", &Args{}, "")
	if w.Name != "host--a-cni-cidpwl20000000000-eth0" || w.HostVeth != "calicidpwl20000" || w.Namespace != "default" ||
		w.Handle != "calico-net.cidpwl20000000000" || w.Orchestrator != "cni" {
		t.Errorf("cni workload %+v", w)
	}
	a, err := ParseArgs("IgnoreUnknown=1;K8S_POD_NAMESPACE=ns1;K8S_POD_NAME=web-0;OTHER=x")
	if err != nil {
		t.Fatal(err)
	}
	k := mustWorkload(t, "net", "node1", "abc", "eth0", a, "")
	if k.Name != "node1-k8s-web--0-eth0" || k.Namespace != "ns1" || k.Pod != "web-0" || k.LegacyHandle != "ns1.web-0" ||
		k.HostVeth != K8sVethName("ns1", "web-0") || len(k.HostVeth) != 15 {
		t.Errorf("k8s workload %+v", k)
	}
	if attrs := k.Attrs("ts"); attrs["pod"] != "web-0" || attrs["namespace"] != "ns1" || attrs["node"] != "node1" {
		t.Errorf("k8s attrs %v", attrs)
	}
	if attrs := w.Attrs("ts"); len(attrs) != 2 {
		t.Errorf("cni attrs %v", attrs)
	}
}

func TestRequestedIPs(t *testing.T) {
	cases := []struct {
		args    string
		want    int
		wantErr bool
	}{
		{"", 0, false},
		{"IP=10.65.0.5", 1, false},
		{"IP=10.65.0.5,fd5c::5", 2, false},
		{"IP=10.65.0.5,10.65.0.6", 0, true},
		{"IP=nonsense", 0, true},
	}
	for _, c := range cases {
		a, err := ParseArgs(c.args)
		if err != nil {
			t.Fatal(err)
		}
		got, err := a.RequestedIPs()
		if (err != nil) != c.wantErr || len(got) != c.want {
			t.Errorf("%q: %v %v", c.args, got, err)
		}
	}
}

// TestResultMatchesFixture builds the result for the fixture's container and compares it with
// what Project Calico's plugin printed.
func TestResultMatchesFixture(t *testing.T) {
	w := mustWorkload(t, "calico-net", "host-a", "cidpwl20000000000", "eth0", &Args{}, "")
	addrs := addresses{netip.MustParsePrefix("10.65.54.0/26"), netip.MustParsePrefix("fd5c:1:2:13f2:fcce:4caf:5a2d:bc40/122")}
	r := pluginResult("1.0.0", w, "/var/run/netns/pwl2", 1410, "26:7c:ba:39:2b:6e", addrs, types.DNS{})
	var buf jsonBuffer
	if err := printResult(r, "1.0.0", &buf); err != nil {
		t.Fatal(err)
	}
	var got, want any
	json.Unmarshal(buf.b, &got)
	json.Unmarshal(fixtureBytes(t, "cni-add-result-dualstack.json"), &want)
	g, _ := json.Marshal(got)
	wj, _ := json.Marshal(want)
	if string(g) != string(wj) {
		t.Errorf("result differs from Project Calico's:\n got %s\nwant %s", g, wj)
	}
	// The same result in an older CNI version keeps the addresses and the interface.
	buf.b = nil
	if err := printResult(r, "0.3.1", &buf); err != nil {
		t.Fatal(err)
	}
	var old struct {
		CNIVersion string `json:"cniVersion"`
		IPs        []struct {
			Version string `json:"version"`
			Address string `json:"address"`
		} `json:"ips"`
	}
	json.Unmarshal(buf.b, &old)
	if old.CNIVersion != "0.3.1" || len(old.IPs) != 2 || old.IPs[1].Version != "6" || old.IPs[0].Address != "10.65.54.0/32" {
		t.Errorf("0.3.1 result %s", buf.b)
	}
}

type jsonBuffer struct{ b []byte }

func (j *jsonBuffer) Write(p []byte) (int, error) { j.b = append(j.b, p...); return len(p), nil }

func mustWorkload(t *testing.T, network, node, id, ifName string, a *Args, testNS string) Workload {
	t.Helper()
	w, err := NewWorkload(network, node, id, ifName, a, testNS)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestDatastorePrecedence: the network configuration's etcd_* fields over the environment over
// the datastore file over the defaults, setting by setting; TLS refusals name their sources.
func TestDatastorePrecedence(t *testing.T) {
	file := filepath.Join(t.TempDir(), "datastore.toml")
	if err := os.WriteFile(file, []byte("[etcd]\nendpoints = [\"https://file:2379\"]\nca_file = \"/file/ca.pem\"\nusername = \"file-user\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	envOf := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	cases := []struct {
		name               string
		conf               NetConf
		env                map[string]string
		endpoint, ca, user string
	}{
		{"file", NetConf{}, nil, "https://file:2379", "/file/ca.pem", "file-user"},
		{"env over file", NetConf{}, map[string]string{"ETCD_ENDPOINTS": "https://env:2379", "ETCD_USERNAME": "env-user"},
			"https://env:2379", "/file/ca.pem", "env-user"},
		{"netconf over env", NetConf{EtcdEndpoints: "https://conf:2379", EtcdCaCertFile: "/conf/ca.pem"},
			map[string]string{"ETCD_ENDPOINTS": "https://env:2379", "ETCD_CA_CERT_FILE": "/env/ca.pem"}, "https://conf:2379", "/conf/ca.pem", "file-user"},
		{"etcd_authority", NetConf{EtcdAuthority: "auth:2379", EtcdScheme: "https"}, nil, "https://auth:2379", "/file/ca.pem", "file-user"},
	}
	for _, c := range cases {
		d, err := c.conf.Datastore(envOf(c.env), file)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if len(d.Etcd.Endpoints) != 1 || d.Etcd.Endpoints[0] != c.endpoint || d.Etcd.CAFile != c.ca || d.Etcd.Username != c.user {
			t.Errorf("%s: got %v %q %q", c.name, d.Etcd.Endpoints, d.Etcd.CAFile, d.Etcd.Username)
		}
	}
	_, err := (&NetConf{EtcdEndpoints: "http://conf:2379"}).Datastore(envOf(nil), file)
	if err == nil || !strings.Contains(err.Error(), "etcd.ca_file in "+file) || !strings.Contains(err.Error(), "etcd_endpoints in the CNI network configuration") {
		t.Errorf("TLS file with an http endpoint: %v", err)
	}
	_, err = (&NetConf{EtcdCertFile: "/c.pem", EtcdKeyFile: "/k.pem"}).Datastore(envOf(map[string]string{"ETCD_ENDPOINTS": "http://env:2379"}), "")
	if err == nil || !strings.Contains(err.Error(), "etcd_cert_file in the CNI network configuration") || !strings.Contains(err.Error(), "ETCD_ENDPOINTS") {
		t.Errorf("cert from the netconf, http from the environment: %v", err)
	}
}
