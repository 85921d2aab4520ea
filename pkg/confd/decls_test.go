package confd

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/daemon"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/datastore/etcdtest"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// Declarations are what a BIRD configuration declares: protocols (as "type name", or "type"
// for an unnamed one), filters, functions and static routes. Comments and string literals are
// skipped, so only what BIRD would parse counts.
type Declarations struct {
	Protocols, Filters, Functions, Routes []string
}

var (
	birdComment = regexp.MustCompile(`(?s)#[^\n]*|/\*.*?\*/|"[^"\n]*"`)
	birdDecl    = regexp.MustCompile(`(\w*)\s+(protocol|filter|function|route)\s+('[^']*'|[^\s;{(]+)(?:\s+('[^']*'|[A-Za-z_][A-Za-z0-9_]*))?`)
)

// parseDeclarations finds the declarations in rendered BIRD configuration text.
func parseDeclarations(text string) Declarations {
	var d Declarations
	text = " " + birdComment.ReplaceAllString(text, " ")
	for _, m := range birdDecl.FindAllStringSubmatch(text, -1) {
		if m[1] == "import" || m[1] == "export" {
			continue // "export filter NAME": a reference
		}
		switch m[2] {
		case "protocol":
			p := m[3]
			if m[4] != "" && m[4] != "from" {
				p += " " + m[4]
			}
			d.Protocols = append(d.Protocols, p)
		case "filter":
			d.Filters = append(d.Filters, m[3])
		case "function":
			d.Functions = append(d.Functions, m[3])
		case "route":
			d.Routes = append(d.Routes, m[3])
		}
	}
	for _, l := range [][]string{d.Protocols, d.Filters, d.Functions, d.Routes} {
		sort.Strings(l)
	}
	return d
}

// renderedText concatenates the rendered files of cfg.
func renderedText(t testing.TB, cfg *Config) string {
	t.Helper()
	var b strings.Builder
	for _, tmpl := range cfg.Templates {
		data, err := os.ReadFile(cfg.DestPath(tmpl))
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
		b.WriteByte('\n')
	}
	return b.String()
}

// runOnceFromEtcd stores raw keys in a fresh embedded etcd, runs calico-confd --onetime for node
// (syncer, store, build, render, `bird -p`, install) and returns its config, its log and the
// error of the run.
func runOnceFromEtcd(t *testing.T, node string, kvs map[string]string) (*Config, string, error) {
	t.Helper()
	requireBIRD(t)
	srv := etcdtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for k, v := range kvs {
		if _, err := srv.Client().Put(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	ds, err := datastore.New(srv.Datastore())
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	var logBuf bytes.Buffer
	log := zerolog.New(&logBuf)
	cfg := testConfig(t.TempDir())
	src := syncer.New(ds, SyncerConfig(node), log)
	err = NewDaemon(cfg, node, src, ExecRunner, daemon.NewNotifier(log), log).RunOnce(ctx)
	return cfg, logBuf.String(), err
}

// baseKVs are a node with an IPv4 BGP address, a pool and one good block for host-a.
func baseKVs() map[string]string {
	return map[string]string{
		datastore.ResourcePrefix + "nodes/host-a": `{"kind":"Node","apiVersion":"projectcalico.org/v3","metadata":{"name":"host-a"},` +
			`"spec":{"bgp":{"ipv4Address":"198.18.0.1/24"}}}`,
		datastore.ResourcePrefix + "nodes/host-b": `{"kind":"Node","apiVersion":"projectcalico.org/v3","metadata":{"name":"host-b"},` +
			`"spec":{"bgp":{"ipv4Address":"198.18.0.2/24"}}}`,
		datastore.ResourcePrefix + "ippools/p": `{"kind":"IPPool","apiVersion":"projectcalico.org/v3","metadata":{"name":"p"},` +
			`"spec":{"cidr":"10.65.0.0/16","blockSize":26,"ipipMode":"Never","vxlanMode":"Never","nodeSelector":"all()"}}`,
		datastore.AffinityKey("host-a", "10.65.0.0/26"): `{"state":"confirmed","deleted":false}`,
	}
}

// baseDecls are the declarations of baseKVs for host-a.
var baseDecls = Declarations{
	Protocols: []string{"bgp Mesh_198_18_0_2", "device", "direct", "kernel kernel4", "kernel kernel6", "static static4", "static static6"},
	Filters:   []string{"calico_kernel_programming_v4", "calico_kernel_programming_v6"},
	Functions: []string{"apply_communities_v4", "apply_communities_v6", "calico_aggr_v4", "calico_aggr_v6",
		"calico_export_to_bgp_peers_v4", "calico_export_to_bgp_peers_v6"},
	Routes: []string{"10.65.0.0/26"},
}
