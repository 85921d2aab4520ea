package datastore_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/datastore/etcdtest"
)

// FuzzDecode feeds arbitrary keys and values to Decode, as a hostile or broken writer could store
// them in etcd. Decode must never panic; what it accepts must be usable by every consumer: read
// defaults and validation run without panicking, the object is named by its key, and it encodes to
// JSON that decodes to the same object again (encoding is stable). Seeds: every key of the
// fixtures written by Project Calico's tools, plus values of the wrong shape.
//
//	go test ./pkg/datastore -run '^$' -fuzz FuzzDecode -fuzztime 60s
func FuzzDecode(f *testing.F) {
	for _, name := range []string{"calicoctl-corpus.json", "cni-ipam-and-status.json", "startup-result.json"} {
		kvs, err := etcdtest.ReadFixture(name)
		if err != nil {
			f.Fatal(err)
		}
		for _, kv := range kvs {
			f.Add(kv.Key, []byte(kv.Value))
		}
	}
	for _, key := range []string{
		datastore.ResourcePrefix + "ippools/p", datastore.ResourcePrefix + "workloadendpoints/ns/w",
		datastore.BlockKey("10.65.0.0/26"), datastore.AffinityKey("h", "fd5c::/122"),
		datastore.HandleKey("h"), datastore.IPAMConfigKey,
	} {
		for _, v := range []string{`null`, `{}`, `[]`, `"x"`, `{"spec":null}`, `{"metadata":{"name":7}}`, `{"kind":"Node"}`} {
			f.Add(key, []byte(v))
		}
	}
	f.Fuzz(func(t *testing.T, key string, value []byte) {
		v, err := datastore.Decode(key, value, 42)
		if err != nil || v == nil {
			return
		}
		if r, ok := v.(api.Resource); ok {
			checkResource(t, key, r)
			return
		}
		checkStable(t, key, v)
	})
}

// checkResource checks a decoded v3 object: named by its key, defaults and validation do not
// panic, and its stored form round-trips.
func checkResource(t *testing.T, key string, r api.Resource) {
	if k, err := datastore.KeyOf(r); err != nil || k != key {
		t.Fatalf("Decode(%q) gave an object whose key is %q (%v)", key, k, err)
	}
	if r.GetObjectMeta().ResourceVersion != "42" {
		t.Fatalf("Decode(%q): resourceVersion %q, want 42", key, r.GetObjectMeta().ResourceVersion)
	}
	enc, err := datastore.EncodeResource(r)
	if err != nil {
		t.Fatalf("Decode(%q) accepted a value that does not encode: %v", key, err)
	}
	again, err := datastore.Decode(key, enc, 42)
	if err != nil {
		t.Fatalf("Decode(%q): re-encoded value %s does not decode: %v", key, enc, err)
	}
	if enc2, _ := datastore.EncodeResource(again.(api.Resource)); !bytes.Equal(enc, enc2) {
		t.Fatalf("Decode(%q): encoding is not stable:\n%s\n%s", key, enc, enc2)
	}
	api.SetReadDefaults(r)
	_ = datastore.Validate(r)
}

// checkStable checks that an IPAM value encodes and decodes to the same JSON again.
func checkStable(t *testing.T, key string, v any) {
	enc, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("Decode(%q) accepted a value that does not encode: %v", key, err)
	}
	again, err := datastore.Decode(key, enc, 42)
	if err != nil {
		t.Fatalf("Decode(%q): re-encoded value %s does not decode: %v", key, enc, err)
	}
	if enc2, _ := json.Marshal(again); !bytes.Equal(enc, enc2) {
		t.Fatalf("Decode(%q): encoding is not stable:\n%s\n%s", key, enc, enc2)
	}
}
