package calicoctl

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
)

func TestDecodeStreamFormats(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  []string // "<index> <Kind> <name>"
		err   string   // the error, if decoding fails
	}{{
		name:  "multi-document YAML with empty documents and comments",
		input: "---\n# nothing here\n---\n" + poolYAML("a", "10.65.0.0/24") + "--- \n" + poolYAML("b", "10.65.1.0/24") + "...\n",
		want:  []string{"1 IPPool a", "2 IPPool b"},
	}, {
		name:  "single JSON object",
		input: `{"apiVersion":"projectcalico.org/v3","kind":"Profile","metadata":{"name":"p"},"spec":{}}`,
		want:  []string{"1 Profile p"},
	}, {
		name: "JSON list",
		input: `[{"apiVersion":"projectcalico.org/v3","kind":"Profile","metadata":{"name":"p"}},
		         {"apiVersion":"projectcalico.org/v3","kind":"Tier","metadata":{"name":"t"}}]`,
		want: []string{"1 Profile p", "2 Tier t"},
	}, {
		name: "kind List with items",
		input: "apiVersion: v1\nkind: List\nitems:\n- apiVersion: projectcalico.org/v3\n  kind: Profile\n  metadata: {name: p}\n" +
			"- apiVersion: projectcalico.org/v3\n  kind: HostEndpoint\n  metadata: {name: h}\n  spec: {node: host1, interfaceName: eth0}\n",
		want: []string{"1 Profile p", "2 HostEndpoint h"},
	}, {
		name:  "calicoctl's own list output",
		input: "apiVersion: projectcalico.org/v3\nkind: IPPoolList\nmetadata: {resourceVersion: \"9\"}\nitems:\n- apiVersion: projectcalico.org/v3\n  kind: IPPool\n  metadata: {name: a, resourceVersion: \"7\"}\n  spec: {cidr: 10.65.0.0/24}\n",
		want:  []string{"1 IPPool a"},
	}, {
		name: "a list document among other documents",
		input: poolYAML("a", "10.65.0.0/24") + "---\napiVersion: projectcalico.org/v3\nkind: TierList\nitems:\n- metadata: {name: t1}\n" +
			"- apiVersion: projectcalico.org/v3\n  kind: Tier\n  metadata: {name: t2}\n---\n" + poolYAML("b", "10.65.1.0/24"),
		want: []string{"1 IPPool a", "2 Tier t1", "3 Tier t2", "4 IPPool b"},
	}, {
		name: "list objects inside a list",
		input: `[{"apiVersion":"projectcalico.org/v3","kind":"GlobalNetworkSet","metadata":{"name":"s"}},
		         {"apiVersion":"projectcalico.org/v3","kind":"ProfileList","items":[{"apiVersion":"projectcalico.org/v3","kind":"Profile","metadata":{"name":"p1"}},{"metadata":{"name":"p2"}}]}]`,
		want: []string{"1 GlobalNetworkSet s", "2 Profile p1", "3 Profile p2"},
	}, {
		name:  "unknown kind: the whole input fails on the first problem",
		input: "apiVersion: projectcalico.org/v3\nkind: Nope\n---\n" + poolYAML("b", "10.65.1.0/24") + "---\n- 1\n- 2\n",
		err:   "unknown resource type (Nope) and/or version (projectcalico.org/v3)",
	}, {
		name:  "not an object",
		input: poolYAML("b", "10.65.1.0/24") + "---\n- 1\n- 2\n",
		err:   "a resource must be an object, not 1",
	}, {
		name:  "a field of the wrong type",
		input: "apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: a}\nspec: {cidr: 10.65.0.0/24, disabled: \"no\"}\n",
		err:   "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal string into Go struct field IPPoolSpec.spec.disabled of type bool",
	}, {
		name:  "invalid YAML",
		input: "kind: IPPool\n  metadata: [\n",
		err:   "error converting YAML to JSON: yaml: line 2: mapping values are not allowed in this context",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			docs, err := decodeStream([]byte(tc.input), 0)
			var got []string
			for _, d := range docs {
				got = append(got, strconv.Itoa(d.index)+" "+d.kind.Kind+" "+d.meta().Name)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("documents %q, want %q", got, tc.want)
			}
			if gotErr := fmt.Sprint(err); (err != nil || tc.err != "") && gotErr != tc.err {
				t.Errorf("error %q, want %q", gotErr, tc.err)
			}
		})
	}
}

// TestDirectoryInput: -f DIR reads the directory's .yaml/.yml/.json files in name order, and
// its subdirectories only with -R.
func TestDirectoryInput(t *testing.T) {
	h := newHarness(t)
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		filepath.Join(dir, "b.yml"):     poolYAML("b", "10.65.1.0/24"),
		filepath.Join(dir, "a.json"):    `{"apiVersion":"projectcalico.org/v3","kind":"IPPool","metadata":{"name":"a"},"spec":{"cidr":"10.65.0.0/24"}}`,
		filepath.Join(dir, "notes.txt"): "not a resource",
		filepath.Join(sub, "c.yaml"):    poolYAML("c", "10.65.2.0/24"),
	}
	for p, c := range files {
		if err := os.WriteFile(p, []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if r := h.ok("", "apply", "-f", dir); r.stdout != "Successfully applied 2 'IPPool' resource(s)\n" {
		t.Errorf("apply dir: %q", r.stdout)
	}
	if h.get(poolKey+"c") != nil {
		t.Error("subdirectory read without -R")
	}
	if r := h.ok("", "apply", "-f", dir, "-R"); r.stdout != "Successfully applied 3 'IPPool' resource(s)\n" {
		t.Errorf("apply dir -R: %q", r.stdout)
	}
	empty := writeFile(t, "empty.yaml", "# nothing\n")
	if r := h.fail("", "apply", "-f", empty); r.stderr != "no resources specified in file "+empty+"\n" {
		t.Errorf("empty file: %q", r.stderr)
	}
	if r := h.ok("", "apply", "-f", empty, "--skip-empty"); r.stdout != "No resources specified\n" {
		t.Errorf("empty file with --skip-empty: %q", r.stdout)
	}
}

// TestCalicoConfigFile: --config also takes Project Calico's calicoctl.cfg.
func TestCalicoConfigFile(t *testing.T) {
	h := newHarness(t)
	cfg := writeFile(t, "calicoctl.cfg", "apiVersion: projectcalico.org/v3\nkind: CalicoAPIConfig\nmetadata: {}\nspec:\n  datastoreType: etcdv3\n  etcdEndpoints: "+h.etcd.Endpoints[0]+"\n")
	h.ok(poolYAML("a", "10.65.0.0/24"), "apply", "-f", "-")
	h.config = cfg
	if r := h.ok("", "get", "ippools", "-o", "name"); r.stdout != "ippool/a\n" {
		t.Errorf("get with calicoctl.cfg: %q", r.stdout)
	}
	h.config = writeFile(t, "bad.toml", "[etcd]\nendpoint = \"x\"\n")
	if r := h.fail("", "get", "ippools"); r.stderr == "" {
		t.Error("bad config file accepted")
	}
}

func TestLookupKind(t *testing.T) {
	for name, want := range map[string]string{
		"ippool": "IPPool", "IPPools": "IPPool", "ipps": "IPPool", "pols": "NetworkPolicy", "policy": "NetworkPolicy",
		"gnp": "GlobalNetworkPolicy", "bps": "BGPPeer", "wep": "WorkloadEndpoint", "felixconfigs": "FelixConfiguration",
	} {
		if k, ok := lookupKind(name); !ok || k.Kind != want {
			t.Errorf("lookupKind(%q) = %v %v, want %s", name, k.Kind, ok, want)
		}
	}
	if _, ok := lookupKind("gadget"); ok {
		t.Error("gadget resolved")
	}
}

// TestListDocumentsInFiles: a list document ("<Kind>List", as get prints it, or "List") among the
// other documents of a file, or inside a list, is expanded into its items by create, apply,
// replace, get and delete alike.
func TestListDocumentsInFiles(t *testing.T) {
	h := newHarness(t)
	file := writeFile(t, "mixed.yaml", goodNetSet+`---
apiVersion: projectcalico.org/v3
kind: TierList
items:
- apiVersion: projectcalico.org/v3
  kind: Tier
  metadata: {name: blue}
  spec: {order: 10}
- metadata: {name: green}
  spec: {order: 20}
---
- apiVersion: projectcalico.org/v3
  kind: GlobalNetworkPolicy
  metadata: {name: blue.ssh}
  spec: {tier: blue, selector: all(), ingress: [{action: Allow, protocol: TCP, destination: {ports: [22]}}]}
- apiVersion: v1
  kind: List
  items:
  - apiVersion: projectcalico.org/v3
    kind: Profile
    metadata: {name: web}
    spec: {labelsToApply: {app: web}}
`)
	keys := []string{"globalnetworksets/ok-set", "tiers/blue", "tiers/green", "globalnetworkpolicies/blue.ssh", "profiles/web"}
	const prefix = "/calico/resources/v3/projectcalico.org/"
	for _, c := range []struct{ cmd, want string }{
		{"create", "Successfully created 5 resource(s)\n"},
		{"apply", "Successfully applied 5 resource(s)\n"},
		{"replace", "Successfully replaced 5 resource(s)\n"},
	} {
		if r := h.ok("", c.cmd, "-f", file); r.stdout != c.want {
			t.Errorf("%s: %q, want %q", c.cmd, r.stdout, c.want)
		}
		for _, k := range keys {
			if h.get(prefix+k) == nil {
				t.Errorf("%s: %s not stored", c.cmd, k)
			}
		}
	}
	var got []string
	for _, it := range mustJSON(t, h.ok("", "get", "-f", file, "-o", "json").stdout).([]any) {
		got = append(got, str(it.(map[string]any)["kind"])+"/"+str(metaOf(it.(map[string]any))["name"]))
	}
	if want := []string{"GlobalNetworkSet/ok-set", "Tier/blue", "Tier/green", "GlobalNetworkPolicy/blue.ssh", "Profile/web"}; !reflect.DeepEqual(got, want) {
		t.Errorf("get -f: %q, want %q", got, want)
	}
	// What get prints for a kind, a list, goes back in with other documents.
	tiers := h.ok("", "get", "tiers", "-o", "yaml").stdout
	if r := h.ok(goodNetSet+"---\n"+tiers, "apply", "-f", "-"); r.stdout != "Successfully applied 6 resource(s)\n" {
		t.Errorf("apply of get's list: %q", r.stdout)
	}
	if r := h.ok("", "delete", "-f", file); r.stdout != "Successfully deleted 5 resource(s)\n" {
		t.Errorf("delete: %q", r.stdout)
	}
	for _, k := range keys {
		if h.get(prefix+k) != nil {
			t.Errorf("delete: %s still stored", k)
		}
	}
}

// TestScalarsWhereStringsBelong: a YAML scalar written where the resource has a string (a label
// value "yes", true or 5) is stored as that scalar's string, as Project Calico's calicoctl decodes
// YAML against the resource's type (YAML 1.1: yes is true).
func TestScalarsWhereStringsBelong(t *testing.T) {
	input := "apiVersion: projectcalico.org/v3\nkind: BGPPeer\nmetadata:\n  name: p\n  labels: {a: yes, b: true, c: 5, d: x}\n" +
		"spec: {peerIP: 198.18.0.9, asNumber: 64512}\n---\n" +
		`{"apiVersion":"projectcalico.org/v3","kind":"Profile","metadata":{"name":"q","labels":{"n":1.5}}}`
	docs, err := decodeStream([]byte(input), 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []map[string]string{{"a": "true", "b": "true", "c": "5", "d": "x"}, {"n": "1.5"}}
	for i, d := range docs {
		if got := d.meta().Labels; !reflect.DeepEqual(got, want[i]) {
			t.Errorf("document %d: labels %v, want %v", i+1, got, want[i])
		}
	}
}
