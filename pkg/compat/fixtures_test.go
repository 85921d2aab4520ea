package compat_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/calico-host/calico-host/pkg/compat"
	"github.com/calico-host/calico-host/pkg/datastore/etcdtest"
)

// TestCalicoWrittenObjectsDoNotWarn: what Project Calico's own tools write (calico-node's
// startup on a fresh datastore, calicoctl's defaults on the corpus) carries no setting
// calico-host would report: defaults never warn.
func TestCalicoWrittenObjectsDoNotWarn(t *testing.T) {
	for _, fixture := range []string{"startup-result.json", "calicoctl-corpus.json"} {
		raw, err := os.ReadFile(etcdtest.FixturePath(fixture))
		if err != nil {
			t.Fatal(err)
		}
		var kvs []struct {
			Key   string          `json:"key"`
			Value json.RawMessage `json:"value"`
		}
		if err := json.Unmarshal(raw, &kvs); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, kv := range kvs {
			var meta struct{ Kind string }
			if json.Unmarshal(kv.Value, &meta) != nil || meta.Kind == "" {
				continue
			}
			fs, err := compat.CheckJSON(meta.Kind, kv.Key, kv.Value)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range fs {
				got = append(got, f.Object+" "+f.Field+"="+f.Value)
			}
		}
		if len(got) > 0 {
			t.Errorf("%s: reported:\n%s", fixture, strings.Join(got, "\n"))
		}
	}
}
