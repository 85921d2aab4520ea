package diags_test

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/birdctl/birdtest"
	"github.com/calico-host/calico-host/pkg/calicoctl/diags"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/datastore/etcdtest"
)

// secrets planted in the fake host; none may appear anywhere in the bundle.
var secrets = []string{
	"etcd-user-7f3a", "etcd-pass-91bc", "urluser-55", "urlpass-66", "keyfile-path-xy",
	"envpass-123", "envuser-456", "cnipass-789", "cnitoken-abc", "birdpass-def", "birdpass-ghi",
	"PEMSECRETBODY", "logpass-1", "logtoken-2", "journalpass-3", "journalpass-4",
	"wgkey5yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=", "nodetoken-6", "wepsecret-7",
	"metricstoken-8", "felixwgkey-9", "commentedpass-10",
}

// plain content of the same files, which must all appear.
var plain = []string{
	"felix_active_local_endpoints 3", "10.65.0.0/26 via 198.18.0.2",
	"protocol bgp Mesh_198_18_0_2", "CERTBODYKEEP", "started felix", "host-a", "wep-on-host-a",
	"hep-on-host-a", "BIRD 2.0.12", "Mesh_198_18_0_2 BGP", "calico-ipam", "prefer-10-65",
	"etcd-endpoint-host.example:2379", "logtoken-line-kept", "journal-line-kept",
}

func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// fakeHostFiles is a host's /etc and /var with secrets in every place they are found.
func fakeHostFiles(metricsPort int) map[string]string {
	return map[string]string{
		"etc/calico/datastore.toml": `datastore_type = "etcdv3"
[etcd]
endpoints = ["https://urluser-55:urlpass-66@etcd-endpoint-host.example:2379"]
username = "etcd-user-7f3a"
password = "etcd-pass-91bc"
key_file = "/etc/calico/pki/keyfile-path-xy.pem"
# password = "commentedpass-10"
`,
		"etc/calico/felix.toml":    fmt.Sprintf("PrometheusMetricsEnabled = true\nPrometheusMetricsPort = %d\nWireguardPrivateKey = \"felixwgkey-9\"\n", metricsPort),
		"etc/default/calico-confd": "ETCD_PASSWORD=envpass-123\nexport CALICO_ETCD_USERNAME=\"envuser-456\"\n",
		"etc/cni/net.d/10-calico.conflist": `{"name":"k8s-pod-network","plugins":[{"type":"calico","etcd_password":"cnipass-789",
"ipam":{"type":"calico-ipam","ipv4_pools":["prefer-10-65"]},"policy":{"type":"k8s","k8s_auth_token":"cnitoken-abc"}}]}`,
		"etc/calico/confd/config/bird.cfg":       "router id 198.18.0.1;\nprotocol bgp Mesh_198_18_0_2 {\n  neighbor 198.18.0.2 as 64512;\n  password \"birdpass-def\";\n}\n",
		"etc/calico/confd/config/bird_peers.cfg": "protocol bgp Global_198_18_9_9 {\n  password \"birdpass-ghi\"; # from the secret\n}\n",
		"etc/calico/confd/config/peer.pem":       "-----BEGIN CERTIFICATE-----\nCERTBODYKEEP\n-----END CERTIFICATE-----\n-----BEGIN EC PRIVATE KEY-----\nPEMSECRETBODY\n-----END EC PRIVATE KEY-----\n",
		"etc/calico/bgp-secrets/peer/password":   "never-read-secret",
		"var/log/calico/felix.log":               "{\"level\":\"info\",\"etcdPassword\":\"logpass-1\",\"msg\":\"started felix\"}\nusing token: logtoken-2 logtoken-line-kept\n",
		"var/lib/calico/nodename":                "host-a\n",
	}
}

// fakeCommands answers the commands diags runs, with secrets in the journal.
func fakeCommands(failNFT bool) func(ctx context.Context, name string, args ...string) ([]byte, error) {
	return func(ctx context.Context, name string, args ...string) ([]byte, error) {
		switch name {
		case "journalctl":
			return []byte("2026-01-01T00:00:00+0000 host-a calico-felix[1]: ETCD_PASSWORD=journalpass-3 journal-line-kept\n" +
				"{\"level\":\"info\",\"bgp_password\":\"journalpass-4\",\"msg\":\"x\"}\n" +
				"wg showconf: PrivateKey = wgkey5yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=\n"), nil
		case "nft":
			if failNFT && slices.Contains(args, "ruleset") {
				return []byte("Error: cannot open netlink socket\n"), errors.New("exit status 1")
			}
			return []byte("table inet calico-host-test {\n}\n"), nil
		case "ip":
			if strings.Join(args, " ") == "-4 route show table all" {
				return []byte("10.65.0.0/26 via 198.18.0.2 dev eth0 proto 80\n"), nil
			}
		}
		return []byte(name + " " + strings.Join(args, " ") + ": fake output\n"), nil
	}
}

// serveFakeBIRD answers every command on a unix socket with one Established BGP session.
func serveFakeBIRD(t *testing.T, path string) {
	birdtest.Serve(t, path, func(string) string {
		return "1002-Mesh_198_18_0_2 BGP        ---        up     14:40:01.500  Established\n0000 \n"
	})
}

// plantObjects writes this host's Node and endpoints (with secrets in annotations), and an
// endpoint of another host that must not be collected.
func plantObjects(t *testing.T, ds *datastore.Client) {
	t.Helper()
	ctx := context.Background()
	for _, r := range []api.Resource{
		&api.Node{ObjectMeta: api.ObjectMeta{Name: "host-a", Annotations: map[string]string{"example.com/api-token": "nodetoken-6"}}},
		&api.WorkloadEndpoint{ObjectMeta: api.ObjectMeta{Name: "wep-on-host-a", Namespace: "default", Annotations: map[string]string{"secret-thing": "wepsecret-7"}},
			Spec: api.WorkloadEndpointSpec{Node: "host-a"}},
		&api.WorkloadEndpoint{ObjectMeta: api.ObjectMeta{Name: "wep-on-host-b", Namespace: "default"}, Spec: api.WorkloadEndpointSpec{Node: "host-b"}},
		&api.HostEndpoint{ObjectMeta: api.ObjectMeta{Name: "hep-on-host-a"}, Spec: api.HostEndpointSpec{Node: "host-a"}},
	} {
		if _, err := ds.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
}

func readBundle(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	out := map[string]string{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimPrefix(hdr.Name, "diagnostics/")] = string(data)
	}
}

// TestDiagsRedactsEverySecret builds a bundle from a fake host tree, fake commands, a fake BIRD
// socket, a real metrics server and a real etcd, all holding secrets: no secret is in any file
// of the bundle and the ordinary content is. Without systemctl a note says so; a failing
// command leaves its error in the bundle and the rest is collected.
func TestDiagsRedactsEverySecret(t *testing.T) {
	metrics := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, "# HELP felix_active_local_endpoints token=metricstoken-8\nfelix_active_local_endpoints 3\n")
	}))
	defer metrics.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(metrics.URL, "http://"))
	var portNum int
	fmt.Sscan(port, &portNum)

	root := t.TempDir()
	writeTree(t, root, fakeHostFiles(portNum))
	srv := etcdtest.Start(t)
	ds, err := datastore.New(srv.Datastore())
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	plantObjects(t, ds)
	sock := filepath.Join(t.TempDir(), "bird.ctl")
	serveFakeBIRD(t, sock)

	h := &diags.Host{
		Root: root, Run: fakeCommands(true),
		LookPath: func(name string) (string, error) {
			if name == "systemctl" {
				return "", errors.New("not found")
			}
			return "/usr/bin/" + name, nil
		},
		BIRDSockets: []string{filepath.Join(t.TempDir(), "absent.ctl"), sock},
		Datastore:   ds, NodeName: "host-a", LogDir: "/var/log/calico",
		Versions: "calicoctl test", Now: func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) },
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := diags.Run(ctx, h, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(res.Path) != "diags-20260102_030405.tar.gz" {
		t.Errorf("bundle %s", res.Path)
	}
	files := readBundle(t, res.Path)
	if os.Getenv("PEEK") != "" {
		for k, v := range files {
			fmt.Printf("===== %s\n%s", k, v)
		}
	}
	all := ""
	for name, content := range files {
		all += "\n" + content
		for _, s := range secrets {
			if strings.Contains(content, s) || strings.Contains(name, s) {
				t.Errorf("secret %q in %s:\n%s", s, name, content)
			}
		}
		if strings.Contains(content, "never-read-secret") {
			t.Errorf("%s holds a file of /etc/calico/bgp-secrets", name)
		}
	}
	for _, p := range plain {
		if !strings.Contains(all, p) {
			t.Errorf("%q is missing from the bundle", p)
		}
	}
	for _, name := range []string{"units/NOTE-no-systemctl.txt", "units/calico-felix.journal.txt", "errors/nftables-ruleset.txt",
		"network/links.txt", "bird/protocols.txt", "config/etc/calico/datastore.toml", "metrics/felix-metrics.txt",
		"datastore/node.json", "datastore/workloadendpoints.json", "logs/felix.log", "summary.txt"} {
		if _, ok := files[name]; !ok {
			t.Errorf("bundle lacks %s; it has %v", name, keys(files))
		}
	}
	if strings.Contains(files["datastore/workloadendpoints.json"], "wep-on-host-b") {
		t.Error("another host's endpoint was collected")
	}
	if !strings.Contains(files["errors/nftables-ruleset.txt"], "exit status 1") || len(res.Failed) != 1 || res.Failed[0] != "nftables ruleset" {
		t.Errorf("failed collectors %v; nft error file %q", res.Failed, files["errors/nftables-ruleset.txt"])
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestDiagsCollectorTimeout: a collector that does not finish in its time is given up; its
// error is in the bundle and the collectors after it still run.
func TestDiagsCollectorTimeout(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	h := &diags.Host{
		Root: t.TempDir(),
		Run: func(ctx context.Context, name string, args ...string) ([]byte, error) {
			if name == "nft" {
				<-block // ignores ctx: only the collector's own bound ends it
			}
			return []byte("ok\n"), nil
		},
		LookPath:         func(name string) (string, error) { return name, nil },
		DatastoreErr:     errors.New("no etcd in this test"),
		MaxCollectorTime: 300 * time.Millisecond,
	}
	res, err := diags.Run(context.Background(), h, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	files := readBundle(t, res.Path)
	if !strings.Contains(files["errors/nftables-ruleset.txt"], "gave up after 300ms") {
		t.Errorf("nft error: %q", files["errors/nftables-ruleset.txt"])
	}
	if _, ok := files["network/links.txt"]; !ok {
		t.Error("the collectors after the stuck one did not run")
	}
	if !strings.Contains(files["errors/datastore-objects-of-this-host.txt"], "no etcd in this test") {
		t.Errorf("datastore error: %q", files["errors/datastore-objects-of-this-host.txt"])
	}
}

// TestDiagsInterrupted: a cancelled run stops between collectors and still writes what it has.
func TestDiagsInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	h := &diags.Host{
		Root: t.TempDir(),
		Run: func(_ context.Context, name string, args ...string) ([]byte, error) {
			if name == "nft" && slices.Contains(args, "ruleset") {
				cancel() // the operator presses ^C while the ruleset is dumped
			}
			return []byte("ok\n"), nil
		},
		LookPath:     func(name string) (string, error) { return name, nil },
		DatastoreErr: errors.New("no etcd in this test"),
	}
	res, err := diags.Run(ctx, h, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	files := readBundle(t, res.Path)
	if _, ok := files["versions/uname.txt"]; !ok {
		t.Error("what was collected before the interruption is missing")
	}
	if _, ok := files["network/links.txt"]; ok {
		t.Error("collectors ran after the interruption")
	}
	if !strings.Contains(files["summary.txt"], "interrupted before \"routes and rules\"") {
		t.Errorf("summary:\n%s", files["summary.txt"])
	}
}
