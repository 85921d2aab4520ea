package confd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/datastore/etcdtest"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// templatesDir is the repository's shipped templates.
const templatesDir = "../../etc/calico/confd/templates"

// kv is one key of a fixture file.
type kv struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
}

// readKVs reads a fixture file (a JSON list of {key, value}).
func readKVs(t testing.TB, path string) []kv {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var kvs []kv
	if err := json.Unmarshal(data, &kvs); err != nil {
		t.Fatalf("parsing %s: %v", path, err)
	}
	return kvs
}

// messageFrom decodes fixture keys as the syncer would (decode + validate) into a snapshot.
func messageFrom(t testing.TB, kvs []kv) syncer.Message {
	t.Helper()
	m := syncer.Message{Status: syncer.InSync, Snapshot: true}
	for i, e := range kvs {
		v, err := Decode(datastore.IDOf(e.Key), e.Value, int64(i+1))
		if err != nil {
			t.Fatalf("fixture key %s: %v", e.Key, err)
		}
		if v != nil {
			m.Updates = append(m.Updates, syncer.Update{ID: datastore.IDOf(e.Key), Value: v, Revision: int64(i + 1)})
		}
	}
	return m
}

// inputsFromFiles loads fixture files (paths, or names under test/fixtures) for node.
func inputsFromFiles(t testing.TB, node string, files ...string) *Inputs {
	t.Helper()
	var all []kv
	for _, f := range files {
		if filepath.Base(f) == f {
			f = etcdtest.FixturePath(f)
		}
		all = append(all, readKVs(t, f)...)
	}
	s := NewStore(node)
	s.Apply(messageFrom(t, all))
	return s.Inputs()
}

// testConfig returns a config rendering the shipped templates into dir.
func testConfig(dir string) *Config {
	c := &Config{TemplatesDir: templatesDir, OutputDir: dir, BIRDSocket: filepath.Join(dir, "bird.ctl"),
		SecretsDir: "testdata/secrets", Templates: DefaultTemplates()}
	c.setDefaults()
	return c
}
