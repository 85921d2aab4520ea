package config

import (
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/vtepmac"
)

var update = flag.Bool("update", false, "rewrite etc/calico/felix.toml from the parameter table")

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func hostname(h string) func() (string, error) { return func() (string, error) { return h, nil } }

func TestLoadLocalEveryLocalSource(t *testing.T) {
	felixFile := writeFile(t, "felix.toml", `
InterfacePrefix = "cali,tap"
reportingintervalsecs = 10
EndpointReportingEnabled = true
FailsafeInboundHostPorts = ["tcp:22", "udp:68"]
HealthPort = "not-a-port"
`)
	dsFile := writeFile(t, "datastore.toml", `
[etcd]
endpoints = ["https://198.18.0.10:2379"]
ca_file = "/etc/calico/ca.pem"
`)
	l, err := LoadLocal(LoadOptions{
		ConfigFile: felixFile, DatastoreFile: dsFile, Hostname: hostname("Host-A"),
		Environ: []string{"FELIX_LOGSEVERITYSCREEN=Debug", "FELIX_REPORTINGINTERVALSECS=5s", "PATH=/bin"},
	})
	if err != nil {
		t.Fatal(err)
	}
	c, problems := l.Resolve(&Datastore{Global: &api.FelixConfigurationSpec{InterfacePrefix: "tap", HealthPort: api.Int(9300)},
		Node: &api.FelixConfigurationSpec{HealthPort: api.Int(70000)}, Cluster: Cluster{Type: "openstack", DatastoreReady: true}})
	checks := []struct {
		name string
		got  any
		want any
		src  Source
	}{
		{"LogSeverityScreen", c.LogSeverityScreen, zerolog.DebugLevel, SourceEnv},
		{"ReportingIntervalSecs", c.ReportingInterval, 5 * time.Second, SourceEnv},
		{"InterfacePrefix", c.InterfacePrefix, []string{"cali", "tap"}, SourceFile},
		{"EndpointReportingEnabled", c.EndpointReportingEnabled, true, SourceFile},
		{"FailsafeInboundHostPorts", FormatPorts(c.FailsafeInboundHostPorts), "tcp:22,udp:68", SourceFile},
		{"HealthPort", c.HealthPort, 9099, SourceDefault},
		{"FelixHostname", c.FelixHostname, "host-a", SourceDefault},
	}
	for _, ch := range checks {
		if !reflect.DeepEqual(ch.got, ch.want) || c.Sources[ch.name] != ch.src {
			t.Errorf("%s = %v from %v, want %v from %v", ch.name, ch.got, c.Sources[ch.name], ch.want, ch.src)
		}
	}
	// node.host-a's invalid HealthPort hides default's (node over default, field by field), so
	// the default applies; both bad values are reported with where they came from.
	if len(problems) != 2 || !strings.Contains(problems[0].Error()+problems[1].Error(), felixFile) ||
		!strings.Contains(problems[0].Error()+problems[1].Error(), "FelixConfiguration node.host-a healthPort") {
		t.Errorf("want the bad HealthPort in %s and in node.host-a reported, got %v", felixFile, problems)
	}
	if !c.OpenStack() {
		t.Errorf("tap prefix and openstack cluster type must turn on the OpenStack special cases")
	}
	d, err := l.Datastore(c)
	if err != nil || d.Etcd.Endpoints[0] != "https://198.18.0.10:2379" || d.Etcd.CAFile != "/etc/calico/ca.pem" {
		t.Errorf("datastore = %+v, %v", d, err)
	}
}

func TestDatastoreConnectionPrecedence(t *testing.T) {
	dsFile := writeFile(t, "datastore.toml", "[etcd]\nendpoints = [\"http://198.18.0.10:2379\"]\n")
	cases := []struct {
		name    string
		environ []string
		want    string
		ca      string
	}{
		{"file", nil, "http://198.18.0.10:2379", ""},
		{"ETCD_ENDPOINTS over file", []string{"ETCD_ENDPOINTS=http://198.18.0.11:2379"}, "http://198.18.0.11:2379", ""},
		{"FELIX_ETCDENDPOINTS over ETCD_ENDPOINTS", []string{"ETCD_ENDPOINTS=http://198.18.0.11:2379",
			"FELIX_ETCDENDPOINTS=https://198.18.0.12:2379,https://198.18.0.13:2379", "FELIX_ETCDCAFILE=/ca.pem",
			"FELIX_ETCDCERTFILE=/c.pem", "FELIX_ETCDKEYFILE=/k.pem"}, "https://198.18.0.12:2379", "/ca.pem"},
		{"FELIX_ETCDADDR with scheme", []string{"FELIX_ETCDADDR=198.18.0.14:2379", "FELIX_ETCDSCHEME=https"}, "https://198.18.0.14:2379", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l, err := LoadLocal(LoadOptions{ConfigFile: "/nonexistent/felix.toml", DatastoreFile: dsFile,
				Environ: tc.environ, Hostname: hostname("h")})
			if err != nil {
				t.Fatal(err)
			}
			c, _ := l.Resolve(nil)
			d, err := l.Datastore(c)
			if err != nil {
				t.Fatal(err)
			}
			if d.Etcd.Endpoints[0] != tc.want || d.Etcd.CAFile != tc.ca {
				t.Errorf("endpoints %v ca %q, want %s %q", d.Etcd.Endpoints, d.Etcd.CAFile, tc.want, tc.ca)
			}
		})
	}
}

func TestLoadLocalRejectsBrokenFile(t *testing.T) {
	broken := writeFile(t, "felix.toml", "InterfacePrefix = \n")
	if _, err := LoadLocal(LoadOptions{ConfigFile: broken, DatastoreFile: "/nonexistent", Environ: []string{}, Hostname: hostname("h")}); err == nil ||
		!strings.Contains(err.Error(), broken) {
		t.Errorf("want a parse error naming %s, got %v", broken, err)
	}
}

// TestDerivedValues: VXLAN is on when a pool uses it unless VXLANEnabled says otherwise; a
// non-default MetadataPort turns the OpenStack special cases on; the gates are off by default, as
// in Project Calico.
func TestDerivedValues(t *testing.T) {
	cases := []struct {
		name   string
		layers []Layer
		check  func(t *testing.T, c *Config)
	}{
		{"defaults", nil, func(t *testing.T, c *Config) {
			if c.OpenStack() || c.VXLANOn(false) || !c.VXLANOn(true) || c.WorkloadSourceSpoofing || c.FloatingIPs {
				t.Errorf("OpenStack %v, VXLAN %v/%v, spoofing %v, floating IPs %v",
					c.OpenStack(), c.VXLANOn(false), c.VXLANOn(true), c.WorkloadSourceSpoofing, c.FloatingIPs)
			}
		}},
		{"vxlan forced off", []Layer{ds("VXLANEnabled", "false")}, func(t *testing.T, c *Config) {
			if c.VXLANOn(true) {
				t.Error("VXLANEnabled=false must win over the pools")
			}
		}},
		{"vxlan forced on", []Layer{ds("VXLANEnabled", "true")}, func(t *testing.T, c *Config) {
			if !c.VXLANOn(false) {
				t.Error("VXLANEnabled=true must win over the pools")
			}
		}},
		{"metadata port turns openstack on", []Layer{ds("MetadataPort", "8080")}, func(t *testing.T, c *Config) {
			if !c.OpenStack() {
				t.Error("non-default MetadataPort must turn on the OpenStack special cases")
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, problems := Resolve(tc.layers...)
			if len(problems) > 0 {
				t.Fatal(problems)
			}
			tc.check(t, c)
		})
	}
}

func TestVXLANMAC(t *testing.T) {
	c, _ := Resolve()
	c.FelixHostname = "host-a"
	derived := c.VXLANMAC()
	if !strings.HasPrefix(derived, "66:") || derived != vtepmac.ForNode("host-a", false).String() {
		t.Errorf("derived MAC %s must start with 66 and be vtepmac.ForNode's for the host and IPv4", derived)
	}
	c.Cluster.VXLANTunnelMAC = "66:0A:0B:0C:0D:0E"
	if got := c.VXLANMAC(); got != "66:0a:0b:0c:0d:0e" {
		t.Errorf("the Node's MAC must win: %s", got)
	}
}

// TestDefaultFileIsCurrent keeps etc/calico/felix.toml in step with the table (go test -update).
func TestDefaultFileIsCurrent(t *testing.T) {
	path := filepath.Join("..", "..", "..", "etc", "calico", "felix.toml")
	want := DefaultFileText()
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("%s is out of date: run go test ./pkg/felix/config -run TestDefaultFileIsCurrent -update", path)
	}
	// Uncommenting every key must give a file that loads without problems and changes nothing.
	var text strings.Builder
	for _, line := range strings.Split(want, "\n") {
		if s, ok := strings.CutPrefix(line, "#"); ok && strings.Contains(s, " = ") && !strings.HasPrefix(s, " ") {
			text.WriteString(s + "\n")
		}
	}
	l, err := FileLayer(writeFile(t, "felix.toml", text.String()))
	if err != nil {
		t.Fatal(err)
	}
	c, problems := Resolve(l)
	if len(problems) != 0 {
		t.Errorf("uncommented default file has problems: %v", problems)
	}
	def, _ := Resolve()
	if restart, live := def.Changed(c); len(live) != 0 || len(restart) > 2 {
		t.Errorf("uncommented defaults change %v %v", restart, live)
	}
}
