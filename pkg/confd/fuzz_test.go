package confd

import (
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/datastore/etcdtest"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// fuzzFixtures are the datastore contents every fuzzed value is added to.
var fuzzFixtures = []string{"calicoctl-corpus.json", "testdata/fixtures/full-mesh.json", "testdata/fixtures/communities.json",
	"testdata/fixtures/rr-clusters.json", "testdata/fixtures/explicit-peers.json", "testdata/fixtures/ipv6.json"}

// FuzzRender adds one arbitrary key and value, decoded and validated as the syncer does, to a
// datastore with meshes, reflectors, explicit peers and communities, and renders the shipped
// templates for two nodes. Whatever another writer stores that passes validation must neither
// crash confd nor stop it from rendering (a render error would freeze BIRD's configuration).
//
//	go test ./pkg/confd -run '^$' -fuzz FuzzRender -fuzztime 60s
func FuzzRender(f *testing.F) {
	var base []kv
	for _, name := range fuzzFixtures {
		if filepath.Base(name) == name {
			name = etcdtest.FixturePath(name)
		}
		base = append(base, readKVs(f, name)...)
	}
	for _, e := range base {
		f.Add(e.Key, []byte(e.Value))
	}
	snap := messageFrom(f, base)
	cfg := testConfig(f.TempDir())
	f.Fuzz(func(t *testing.T, key string, value []byte) {
		v, err := syncer.DefaultDecoder(key, value, 1000)
		if err != nil || v == nil {
			return
		}
		for _, node := range []string{"host-a", "rr-1"} {
			s := NewStore(node)
			s.Apply(snap)
			s.Apply(syncer.Message{Status: syncer.InSync, Updates: []syncer.Update{{Key: key, Value: v, Revision: 1000}}})
			m := NewEngine(cfg, node, nil, zerolog.Nop()).Model(s.Inputs())
			if _, err := Render(cfg, m); err != nil {
				t.Fatalf("node %s: %s = %s: render failed: %v", node, key, value, err)
			}
		}
	})
}
