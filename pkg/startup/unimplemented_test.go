package startup

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/compat"
	"github.com/calico-host/calico-host/pkg/compat/report"
	"github.com/calico-host/calico-host/pkg/compat/snapshot"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/datastore/etcdtest"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// everyNodeField sets every Node field of Project Calico to a value other than its default.
const everyNodeField = `{"apiVersion":"projectcalico.org/v3","kind":"Node","metadata":{"name":"host-x"},"spec":{
	"bgp":{"asNumber":65001,"ipv4Address":"198.18.0.9/24","ipv6Address":"fd5c::9/64","ipv4IPIPTunnelAddr":"10.65.0.1",
		"routeReflectorClusterID":"198.18.255.1"},
	"ipv4VXLANTunnelAddr":"10.65.1.1","vxlanTunnelMACAddr":"66:00:00:00:00:01","ipv6VXLANTunnelAddr":"fd5c:1::1",
	"vxlanTunnelMACAddrV6":"66:00:00:00:00:02","orchRefs":[{"orchestrator":"k8s","nodeName":"x"}],
	"wireguard":{"interfaceIPv4Address":"10.65.2.1","interfaceIPv6Address":"fd5c:2::1"},
	"addresses":[{"address":"198.18.0.9/24","type":"InternalIP"}],"interfaces":[{"name":"eth0","addresses":["198.18.0.9"]}]}}`

// everyPoolField sets every IPPool field (ipipMode, which excludes vxlanMode, on a second pool).
var everyPoolField = []string{
	`{"apiVersion":"projectcalico.org/v3","kind":"IPPool","metadata":{"name":"every-field"},"spec":{"cidr":"10.67.0.0/16",
	"vxlanMode":"Always","natOutgoing":true,"disabled":true,"disableBGPExport":true,"blockSize":28,"nodeSelector":"all()",
	"namespaceSelector":"team == 'a'","allowedUses":["Workload"],"assignmentMode":"Manual"}}`,
	`{"apiVersion":"projectcalico.org/v3","kind":"IPPool","metadata":{"name":"ipip"},"spec":{"cidr":"10.68.0.0/16","ipipMode":"Always"}}`,
}

// TestEveryCalicoNodeAndPoolFieldIsKeptOrReported loads Project Calico's corpus, this host's
// Node and IP pools with every Project Calico field set to a value other than its default into
// etcd, and runs startup's report over its syncer: each field on compat's list is reported
// exactly once, every other field survives the typed decoding (nothing is dropped silently).
func TestEveryCalicoNodeAndPoolFieldIsKeptOrReported(t *testing.T) {
	srv := etcdtest.Start(t)
	cli := srv.Client()
	etcdtest.LoadFixture(t, cli, "calicoctl-corpus.json")
	ds := datastore.NewFromEtcd(cli)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	docs := map[string]string{"Node host-x": everyNodeField}
	for i, d := range everyPoolField {
		docs[[]string{"IPPool every-field", "IPPool ipip"}[i]] = d
	}
	for _, d := range docs {
		createRaw(t, ctx, ds, d)
	}
	logged := settingsOf(t, ctx, ds, "host-x")
	if want := len(compat.Settings(compat.Node)) + len(compat.Settings(compat.IPPool)); len(logged) != want {
		t.Errorf("%d settings logged, want %d: %v", len(logged), want, logged)
	}
	for _, kind := range []string{compat.Node, compat.IPPool} {
		for _, path := range calicoFields(t, kind) {
			obj := kind + " every-field"
			if kind == compat.Node {
				obj = "Node host-x"
			} else if path == "spec.ipipMode" {
				obj = "IPPool ipip"
			}
			s := onList(kind, path)
			switch n := logged[obj+" "+path]; {
			case s != nil && n != 1:
				t.Errorf("%s %s: reported %d times, want once", obj, path, n)
			case s == nil && n != 0:
				t.Errorf("%s %s: implemented, but reported", obj, path)
			case s == nil && !kept(t, docs[obj], path):
				t.Errorf("%s %s: dropped by the typed decoding", obj, path)
			}
		}
	}
}

// createRaw decodes a document as calicoctl does and creates it.
func createRaw(t *testing.T, ctx context.Context, ds *datastore.Client, doc string) {
	var probe api.TypeMeta
	if err := json.Unmarshal([]byte(doc), &probe); err != nil {
		t.Fatal(err)
	}
	k, _ := api.LookupKind(probe.Kind)
	obj := k.New()
	if err := json.Unmarshal([]byte(doc), obj); err != nil {
		t.Fatal(err)
	}
	if _, err := ds.Create(ctx, obj); err != nil {
		t.Fatalf("creating %s: %v", doc, err)
	}
}

// settingsOf runs the settings report over the first in-sync snapshot of startup's prefixes
// and counts the logged findings by "object field".
func settingsOf(t *testing.T, ctx context.Context, ds *datastore.Client, node string) map[string]int {
	var buf strings.Builder
	w := newSettingsWatch(report.New("startup", zerolog.New(&buf)))
	msgs := make(chan syncer.Message, 16)
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	go syncer.New(ds, syncer.Config{Prefixes: settingsPrefixes(node)}, zerolog.Nop()).Run(sctx, msgs)
	snapshot := false
	for m := range msgs {
		w.apply(m)
		snapshot = snapshot || m.Snapshot
		if snapshot && m.Status == syncer.InSync {
			w.apply(m) // a repeat changes nothing and logs nothing
			break
		}
	}
	out := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var rec struct{ Object, Field string }
		if err := json.Unmarshal([]byte(line), &rec); err == nil && rec.Object != "" {
			out[rec.Object+" "+rec.Field]++
		}
	}
	return out
}

func onList(kind, path string) *compat.Setting {
	for _, s := range compat.Settings(kind) {
		if s.Name == path {
			return s
		}
	}
	return nil
}

// kept reports whether a field of a document survives decoding into its typed object and
// encoding it again.
func kept(t *testing.T, doc, path string) bool {
	var probe api.TypeMeta
	_ = json.Unmarshal([]byte(doc), &probe)
	k, _ := api.LookupKind(probe.Kind)
	obj := k.New()
	if err := json.Unmarshal([]byte(doc), obj); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(obj)
	var m any
	_ = json.Unmarshal(b, &m)
	for _, p := range strings.Split(path, ".") {
		mm, ok := m.(map[string]any)
		if !ok {
			return false
		}
		if m, ok = mm[p]; !ok {
			return false
		}
	}
	return true
}

// calicoFields are Project Calico's fields of a kind, from compat's snapshot.
func calicoFields(t *testing.T, kind string) []string {
	out := snapshot.Fields(t, kind)
	if len(out) < 10 {
		t.Fatalf("only %d %s fields in the snapshot", len(out), kind)
	}
	return out
}
