package calicoctl

import (
	"encoding/json"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/datastore/etcdtest"
)

const clusterInfoKey = "/calico/resources/v3/projectcalico.org/clusterinformations/default"

var hexGUID = regexp.MustCompile(`^[0-9a-f]{32}$`)

// TestApplyCorpusMatchesCalico is the central test: applying calicoctl-corpus.yaml into an empty
// etcd writes exactly the keys and values Project Calico's calicoctl wrote
// (calicoctl-corpus.json), apart from uid, creationTimestamp and the random clusterGUID.
func TestApplyCorpusMatchesCalico(t *testing.T) {
	h := newHarness(t)
	yamlPath := etcdtest.FixturePath("calicoctl-corpus.yaml")
	r := h.ok("", "apply", "-f", yamlPath)
	if want := "Successfully applied 25 resource(s)\n"; r.stdout != want {
		t.Errorf("stdout = %q, want %q", r.stdout, want)
	}
	want := map[string]any{}
	kvs, err := etcdtest.ReadFixture("calicoctl-corpus.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range kvs {
		var v any
		if err := json.Unmarshal(kv.Value, &v); err != nil {
			t.Fatal(err)
		}
		want[kv.Key] = v
	}
	got := h.dump()
	assertSameKeys(t, want, got)
	for key, w := range want {
		g, ok := got[key]
		if !ok {
			continue
		}
		checkUIDAndTimestamp(t, key, g)
		if key == clusterInfoKey {
			checkClusterGUID(t, g)
		}
		if d := diffJSON(dropMeta(w, "uid", "creationTimestamp"), dropMeta(g, "uid", "creationTimestamp")); d != "" {
			t.Errorf("%s differs:\n%s", key, d)
		}
	}
}

func assertSameKeys(t *testing.T, want, got map[string]any) {
	t.Helper()
	var missing, extra []string
	for k := range want {
		if _, ok := got[k]; !ok {
			missing = append(missing, k)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			extra = append(extra, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing)+len(extra) > 0 {
		t.Errorf("keys differ:\nmissing: %s\nextra: %s", strings.Join(missing, "\n  "), strings.Join(extra, "\n  "))
	}
}

var rfc3339Seconds = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`)
var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

func checkUIDAndTimestamp(t *testing.T, key string, v any) {
	t.Helper()
	md, _ := v.(map[string]any)["metadata"].(map[string]any)
	if uid, _ := md["uid"].(string); !uuidRE.MatchString(uid) {
		t.Errorf("%s: uid %q is not a UUID", key, uid)
	}
	if ts, _ := md["creationTimestamp"].(string); !rfc3339Seconds.MatchString(ts) {
		t.Errorf("%s: creationTimestamp %q is not RFC 3339 seconds UTC", key, ts)
	}
}

// checkClusterGUID checks the random GUID's form and removes it from the comparison.
func checkClusterGUID(t *testing.T, v any) {
	t.Helper()
	spec := v.(map[string]any)["spec"].(map[string]any)
	if g, _ := spec["clusterGUID"].(string); !hexGUID.MatchString(g) {
		t.Errorf("clusterGUID %q is not 32 hex digits", g)
	}
	spec["clusterGUID"] = "051b9357542043f4bb46bc368ac0bf83" // the fixture's
}

// TestGetMatchesStoredJSON loads every fixture into etcd and checks that `get KIND -o json` of
// every kind prints each stored object unchanged, apart from the resourceVersion it adds, in a
// "<Kind>List" with the listing's revision.
func TestGetMatchesStoredJSON(t *testing.T) {
	h := newHarness(t)
	stored := map[string]map[string]any{} // plural -> key -> decoded value
	for _, name := range []string{"calicoctl-corpus.json", "cni-ipam-and-status.json", "startup-result.json"} {
		for _, kv := range etcdtest.LoadFixture(t, h.cli, name) {
			id, ok := datastore.ParseResourceKey(kv.Key)
			if !ok {
				continue
			}
			var v map[string]any
			if err := json.Unmarshal(kv.Value, &v); err != nil {
				t.Fatal(err)
			}
			if stored[id.Kind.Plural] == nil {
				stored[id.Kind.Plural] = map[string]any{}
			}
			stored[id.Kind.Plural][kv.Key] = v
		}
	}
	rev := h.revision()
	for _, k := range api.Kinds() {
		t.Run(k.Kind, func(t *testing.T) {
			args := []string{"get", k.Plural, "-o", "json"}
			if k.Namespaced {
				args = append(args, "-A")
			}
			r := h.ok("", args...)
			list := mustJSON(t, r.stdout).(map[string]any)
			if list["kind"] != k.Kind+"List" || list["apiVersion"] != api.APIVersion {
				t.Errorf("list header: kind %v apiVersion %v", list["kind"], list["apiVersion"])
			}
			if got := list["metadata"].(map[string]any)["resourceVersion"]; got != strconv.FormatInt(rev, 10) {
				t.Errorf("list resourceVersion = %v, want %d", got, rev)
			}
			items := list["items"].([]any)
			if k.Kind == "Profile" { // the built-in profile ends the listing (TestBuiltinProfileAfterStored)
				items = items[:len(items)-1]
			}
			if len(items) != len(stored[k.Plural]) {
				t.Fatalf("%d items, want %d", len(items), len(stored[k.Plural]))
			}
			for _, it := range items {
				m := it.(map[string]any)["metadata"].(map[string]any)
				key := datastore.ResourceKey(k, str(m["namespace"]), str(m["name"]))
				if rv := str(m["resourceVersion"]); rv == "" {
					t.Errorf("%s: no resourceVersion", key)
				}
				if d := diffJSON(withoutMetadataAnnotation(stored[k.Plural][key]), dropMeta(it, "resourceVersion")); d != "" {
					t.Errorf("%s differs:\n%s", key, d)
				}
			}
		})
	}
}

func str(v any) string { s, _ := v.(string); return s }

// withoutMetadataAnnotation is a stored object as Project Calico's calicoctl shows it: without the
// projectcalico.org/metadata annotation its datastore keeps on policies.
func withoutMetadataAnnotation(v any) any {
	md, _ := v.(map[string]any)["metadata"].(map[string]any)
	if a, ok := md["annotations"].(map[string]any); ok {
		delete(a, api.AnnotationMetadata)
		if len(a) == 0 {
			delete(md, "annotations")
		}
	}
	return v
}
