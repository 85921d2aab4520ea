package confd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/syncer"
)

func TestStoreApply(t *testing.T) {
	s := NewStore("host-a")
	pool := &api.IPPool{ObjectMeta: api.ObjectMeta{Name: "p"}, Spec: api.IPPoolSpec{CIDR: "10.65.0.0/16"}}
	node := testNode("host-a", "198.18.0.1/24", "", nil)
	snap := syncer.Message{Snapshot: true, Status: syncer.InSync, Updates: []syncer.Update{
		{ID: datastore.IDOf(datastore.ResourcePrefix + "ippools/p"), Value: pool},
		{ID: datastore.IDOf(datastore.ResourcePrefix + "nodes/host-a"), Value: node},
		{ID: datastore.IDOf(datastore.AffinityKey("host-a", "10.65.1.0/26")), Value: &api.BlockAffinity{State: "confirmed"}},
		{ID: datastore.IDOf(datastore.AffinityKey("host-b", "10.65.2.0/26")), Value: &api.BlockAffinity{State: "confirmed"}},
	}}
	if !s.Apply(snap) {
		t.Fatal("snapshot reported no change")
	}
	in := s.Inputs()
	if in.Pools["p"] != pool || in.Nodes["host-a"] != node || len(in.Affinities) != 1 || in.Affinities["10.65.1.0/26"] == nil {
		t.Fatalf("after snapshot: %+v", in)
	}
	// Deletion, and an invalid value (delivered as nil) both remove the key.
	s.Apply(syncer.Message{Status: syncer.InSync, Updates: []syncer.Update{
		{ID: datastore.IDOf(datastore.ResourcePrefix + "ippools/p")},
		{ID: datastore.IDOf(datastore.AffinityKey("host-a", "10.65.1.0/26")), Value: nil},
		{ID: datastore.IDOf(datastore.ResourcePrefix + "bgpfilters/f"), Value: &api.BGPFilter{ObjectMeta: api.ObjectMeta{Name: "f"}}},
	}})
	in = s.Inputs()
	if len(in.Pools) != 0 || len(in.Affinities) != 0 || in.Filters["f"] == nil {
		t.Fatalf("after updates: %+v", in)
	}
	// A new snapshot replaces everything.
	s.Apply(syncer.Message{Snapshot: true, Status: syncer.InSync})
	if in := s.Inputs(); len(in.Nodes)+len(in.Filters) != 0 {
		t.Fatalf("after empty snapshot: %+v", in)
	}
	if s.Apply(syncer.Message{Status: syncer.WaitingForDatastore}) {
		t.Error("a pure status message reported a change")
	}
}

func TestSyncPrefixes(t *testing.T) {
	p := SyncPrefixes("host-a")
	if !strings.HasSuffix(p[len(p)-1], "/ipam/v2/host/host-a/") {
		t.Errorf("last prefix %q is not this host's affinities", p[len(p)-1])
	}
	for _, want := range []string{"bgppeers/", "bgpfilters/", "bgpconfigurations/", "nodes/", "ippools/"} {
		found := false
		for _, k := range p {
			found = found || strings.HasSuffix(k, want)
		}
		if !found {
			t.Errorf("no prefix for %s in %q", want, p)
		}
	}
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "confd.toml")
	confDir := filepath.Join(dir, "conf.d")
	os.MkdirAll(confDir, 0o755)
	writeFile(t, file, `
nodename = "from-file"
log_severity = "Warning"
conf_dir = "`+confDir+`"
output_dir = "/tmp/out"
debounce = "2s"
[vars]
hold_time = "3"
[[template]]
src = "main.template"
dest = "main.cfg"
mode = "0600"
check_cmd = "true {{.src}}"
`)
	writeFile(t, filepath.Join(confDir, "b.toml"), "[[template]]\nsrc = \"b.template\"\ndest = \"/abs/b.cfg\"\nreload_cmd = \"kill -HUP 1\"\n")
	env := map[string]string{"CALICO_NODENAME": "from-env", "BGP_LOGSEVERITYSCREEN": "Debug"}
	c, err := LoadConfig(file, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	if c.NodeName != "from-env" || c.LogSeverity != "Debug" || c.Debounce.Duration != 2*time.Second || c.Vars["hold_time"] != "3" {
		t.Errorf("config = %+v", c)
	}
	if len(c.Templates) != 2 || c.DestPath(c.Templates[0]) != "/tmp/out/main.cfg" || c.DestPath(c.Templates[1]) != "/abs/b.cfg" ||
		c.SrcPath(c.Templates[1]) != DefaultTemplatesDir+"/b.template" {
		t.Errorf("templates = %+v", c.Templates)
	}
	if m, _ := c.Templates[0].FileMode(); m != 0o600 {
		t.Errorf("mode %o", m)
	}
	// No file at all: defaults, including the shipped templates.
	d, err := LoadConfig(filepath.Join(dir, "absent.toml"), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(DefaultTemplates(), d.Templates); diff != "" || d.BIRDSocket != DefaultBIRDSocket || d.OutputDir != DefaultOutputDir {
		t.Errorf("defaults: %+v %s", d, diff)
	}
}

func TestLoadConfigErrors(t *testing.T) {
	tests := []struct{ name, text, want string }{
		{"unknown key", "nodname = \"x\"\n", `unknown key "nodname"`},
		{"missing dest", "[[template]]\nsrc = \"a\"\n", "src and dest are required"},
		{"bad mode", "[[template]]\nsrc = \"a\"\ndest = \"a\"\nmode = \"rw\"\n", "not an octal file mode"},
		{"same file name twice", "[[template]]\nsrc = \"a\"\ndest = \"x/a.cfg\"\n[[template]]\nsrc = \"b\"\ndest = \"y/a.cfg\"\n", "both render a file named a.cfg"},
		{"bad router id", "router_id = \"fd00::1\"\n", "must be an IPv4 address"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "confd.toml")
			writeFile(t, file, "conf_dir = \""+dir+"/none\"\n"+tc.text)
			_, err := LoadConfig(file, func(string) (string, bool) { return "", false })
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestResolveNodeName(t *testing.T) {
	dir := t.TempDir()
	c := Config{NodenameFile: filepath.Join(dir, "nodename")}
	host, _ := os.Hostname()
	if got, err := c.ResolveNodeName(); err != nil || got != strings.ToLower(host) {
		t.Errorf("no file: %q %v, want the hostname", got, err)
	}
	writeFile(t, c.NodenameFile, "from-file\nignored\n")
	if got, _ := c.ResolveNodeName(); got != "from-file" {
		t.Errorf("file: %q", got)
	}
	c.NodeName = "explicit"
	if got, _ := c.ResolveNodeName(); got != "explicit" {
		t.Errorf("explicit: %q", got)
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestShippedConfig: the packaged /etc/calico/confd.toml loads and names the shipped templates.
func TestShippedConfig(t *testing.T) {
	c, err := LoadConfig("../../etc/calico/confd.toml", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(DefaultTemplates(), c.Templates); diff != "" {
		t.Errorf("templates (-default +shipped):\n%s", diff)
	}
	for _, tmpl := range c.Templates {
		if _, err := os.Stat(filepath.Join(templatesDir, tmpl.Src)); err != nil {
			t.Errorf("template %s is not shipped: %v", tmpl.Src, err)
		}
	}
}
