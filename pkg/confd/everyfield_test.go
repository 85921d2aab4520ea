package confd

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/compat"
	"github.com/calico-host/calico-host/pkg/compat/snapshot"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/datastore/etcdtest"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// fieldHome says where the every-field fixture sets a field: the object, the node whose BGP
// configuration shows it, and the value to add when the fixture leaves the field unset (a field
// whose non-default value would hide others: nodeToNodeMeshEnabled false, aggregation Disabled).
type fieldHome struct {
	object string // "BGPConfiguration default", "BGPPeer every-peer-ip-field", ...
	node   string
	add    any
}

func homeOf(kind, path string) fieldHome {
	if kind == compat.BGPConfiguration {
		h := fieldHome{object: "BGPConfiguration default", node: "host-c"}
		switch path {
		case "spec.nodeToNodeMeshEnabled":
			h.add = false
		case "spec.serviceLoadBalancerAggregation":
			h.add = "Disabled"
		}
		return h
	}
	switch path {
	case "spec.localWorkloadSelector":
		return fieldHome{object: "BGPPeer local-workloads", node: "host-c"}
	case "spec.nodeSelector", "spec.peerSelector", "spec.keepOriginalNextHop":
		return fieldHome{object: "BGPPeer every-selector-field", node: "host-c"}
	case "spec.reversePeering":
		return fieldHome{object: "BGPPeer manual-reverse", node: "host-d"}
	}
	return fieldHome{object: "BGPPeer every-peer-ip-field", node: "host-c"}
}

// felixFields are the BGPConfiguration fields that calico-felix applies, as in Project Calico:
// the peering addresses it puts on the host side of local BGP peer workloads' interfaces. BIRD's
// configuration does not show them, and confd does not report them.
var felixFields = map[string]bool{"spec.localWorkloadPeeringIPV4": true, "spec.localWorkloadPeeringIPV6": true}

// TestEveryCalicoBGPFieldIsAppliedOrReported loads Project Calico's calicoctl corpus and objects
// that set every BGPConfiguration and BGPPeer field of Project Calico to a value other than its
// default (testdata/fixtures/every-bgp-field.json) into etcd, reads them back through confd's
// syncer, and checks each field: either it is applied (the BIRD configuration confd renders
// changes when the field is taken away, or added; or it is one of felixFields) and not
// reported, or it is reported exactly once as not implemented.
func TestEveryCalicoBGPFieldIsAppliedOrReported(t *testing.T) {
	in := everyFieldInputs(t)
	counts := map[string]int{}
	for _, kind := range []string{compat.BGPConfiguration, compat.BGPPeer} {
		for _, path := range calicoFields(t, kind) {
			home := homeOf(kind, path)
			with, without := in, toggled(t, in, home, path)
			if home.add != nil {
				with, without = without, with
			}
			reported := countFindings(Unimplemented(with, home.node), home.object, path)
			applied := renderedConfig(t, with, home.node) != renderedConfig(t, without, home.node)
			switch {
			case reported == 1 && !applied:
				counts[kind+" reported"]++
			case reported == 0 && applied:
				counts[kind+" applied"]++
			case reported == 0 && kind == compat.BGPConfiguration && felixFields[path]:
				counts[kind+" applied by felix"]++
			default:
				t.Errorf("%s %s: applied %t, reported %d times; want applied, or reported once", home.object, path, applied, reported)
			}
		}
	}
	t.Logf("%v", counts)
}

// calicoFields are Project Calico's fields of a kind, from compat's snapshot ("spec.password"
// for its secret key reference).
func calicoFields(t *testing.T, kind string) []string {
	var out []string
	for _, path := range snapshot.Fields(t, kind) {
		out = append(out, strings.TrimSuffix(path, ".secretKeyRef"))
	}
	if len(out) < 15 {
		t.Fatalf("only %d %s fields in the snapshot", len(out), kind)
	}
	return out
}

// everyFieldInputs writes the corpus and the every-field objects into etcd and returns the
// first in-sync snapshot confd's syncer delivers.
func everyFieldInputs(t *testing.T) *Inputs {
	srv := etcdtest.Start(t)
	cli := srv.Client()
	etcdtest.LoadFixture(t, cli, "calicoctl-corpus.json")
	st := store{t: t, cli: cli}
	for _, e := range readKVs(t, "testdata/fixtures/every-bgp-field.json") {
		st.putRaw(e.Key, string(e.Value))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	msgs := make(chan syncer.Message, 16)
	go syncer.New(datastore.NewFromEtcd(cli), SyncerConfig("host-c"), zerolog.Nop()).Run(ctx, msgs)
	s := NewStore("host-c")
	for {
		select {
		case <-ctx.Done():
			t.Fatal("no snapshot from the syncer")
		case m := <-msgs:
			s.Apply(m)
			if s.HasSnapshot() && m.Status == syncer.InSync {
				if len(s.Inputs().InvalidConfigs) > 0 {
					t.Fatalf("invalid: %v", s.Inputs().InvalidConfigs)
				}
				return s.Inputs()
			}
		}
	}
}

// toggled returns inputs with the field of the home object removed (or, for fields the
// fixture leaves unset, added).
func toggled(t *testing.T, in *Inputs, home fieldHome, path string) *Inputs {
	kind, name, _ := strings.Cut(home.object, " ")
	out := *in
	switch kind {
	case "BGPConfiguration":
		out.BGPConfigs = cloneMap(in.BGPConfigs)
		out.BGPConfigs[name] = withField(t, in.BGPConfigs[name], path, home.add)
	case "BGPPeer":
		out.Peers = cloneMap(in.Peers)
		out.Peers[name] = withField(t, in.Peers[name], path, home.add)
	}
	return &out
}

func cloneMap[T any](m map[string]*T) map[string]*T {
	out := make(map[string]*T, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// withField is a copy of obj with the dotted path removed (value nil) or set.
func withField[T any](t *testing.T, obj *T, path string, value any) *T {
	if obj == nil {
		t.Fatalf("no object for %s", path)
	}
	b, _ := json.Marshal(obj)
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(path, ".")
	m := doc
	for _, p := range parts[:len(parts)-1] {
		m, _ = m[p].(map[string]any)
		if m == nil {
			t.Fatalf("%s: no %s", path, p)
		}
	}
	if value == nil {
		delete(m, parts[len(parts)-1])
	} else {
		m[parts[len(parts)-1]] = value
	}
	b, _ = json.Marshal(doc)
	out := new(T)
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func countFindings(fs []compat.Finding, object, path string) int {
	n := 0
	for _, f := range fs {
		if f.Object == object && f.Field == path {
			n++
		}
	}
	return n
}

// renderedConfig is every file confd renders for node from the inputs.
func renderedConfig(t *testing.T, in *Inputs, node string) string {
	cfg := testConfig(t.TempDir())
	files, err := Render(cfg, NewEngine(cfg, node, ExecRunner, zerolog.Nop()).Model(in))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, f := range files {
		for _, line := range bytes.SplitAfter(f.Data, []byte("\n")) {
			if !bytes.HasPrefix(line, []byte("# WARNING: ")) { // datastore problems, not settings
				b.Write(line)
			}
		}
	}
	return b.String()
}
