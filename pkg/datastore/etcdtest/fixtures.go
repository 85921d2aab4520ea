package etcdtest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// FixtureKV is one key of a fixture file; Value is the JSON value as stored.
type FixtureKV struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
}

// FixturePath returns the path of a file in the repository's test/fixtures directory.
func FixturePath(name string) string {
	dir, _ := os.Getwd()
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(d, "test", "fixtures", name)
		}
		if filepath.Dir(d) == d {
			return filepath.Join("test", "fixtures", name)
		}
	}
}

// ReadFixture reads a fixture file: a JSON list of {"key", "value"}.
func ReadFixture(name string) ([]FixtureKV, error) {
	data, err := os.ReadFile(FixturePath(name))
	if err != nil {
		return nil, err
	}
	var kvs []FixtureKV
	if err := json.Unmarshal(data, &kvs); err != nil {
		return nil, fmt.Errorf("parsing fixture %s: %w", name, err)
	}
	return kvs, nil
}

// LoadFixture writes every key of a fixture file into etcd (values as compact JSON) and returns them.
func LoadFixture(t testing.TB, cli *clientv3.Client, name string) []FixtureKV {
	t.Helper()
	kvs, err := ReadFixture(name)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, kv := range kvs {
		var v any
		if err := json.Unmarshal(kv.Value, &v); err != nil {
			t.Fatalf("fixture %s key %s: %v", name, kv.Key, err)
		}
		compact, _ := json.Marshal(v)
		if _, err := cli.Put(ctx, kv.Key, string(compact)); err != nil {
			t.Fatalf("loading %s: %v", kv.Key, err)
		}
	}
	return kvs
}
