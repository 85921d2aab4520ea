package calicoctl

import (
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
		errs  []string
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
		name:  "numbering continues past bad documents",
		input: "apiVersion: projectcalico.org/v3\nkind: Nope\n---\n" + poolYAML("b", "10.65.1.0/24") + "---\n- 1\n- 2\n",
		want:  []string{"2 IPPool b"},
		errs: []string{"document 1: Unknown resource type (Nope) and/or version (projectcalico.org/v3)",
			"document 3: a resource must be an object, not 1",
			"document 4: a resource must be an object, not 2"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			docs, errs := decodeStream([]byte(tc.input), 0)
			var got, gotErrs []string
			for _, d := range docs {
				got = append(got, strconv.Itoa(d.index)+" "+d.kind.Kind+" "+d.meta().Name)
			}
			for _, e := range errs {
				gotErrs = append(gotErrs, e.Error())
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("documents %q, want %q", got, tc.want)
			}
			if !reflect.DeepEqual(gotErrs, tc.errs) {
				t.Errorf("errors %q, want %q", gotErrs, tc.errs)
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
	if r := h.fail("", "apply", "-f", empty); r.stderr != "No resources specified in file "+empty+"\n" {
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
