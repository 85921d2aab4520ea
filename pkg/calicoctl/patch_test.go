package calicoctl

import (
	"bytes"
	"context"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/datastore/etcdtest"
)

const nodeKey = "/calico/resources/v3/projectcalico.org/nodes/"

func TestMergePatch(t *testing.T) {
	tests := []struct {
		name                string
		target, patch, want any
	}{
		{"replace a value", map[string]any{"a": "b"}, map[string]any{"a": "c"}, map[string]any{"a": "c"}},
		{"add a key", map[string]any{"a": "b"}, map[string]any{"b": "c"}, map[string]any{"a": "b", "b": "c"}},
		{"null deletes", map[string]any{"a": "b", "b": "c"}, map[string]any{"a": nil}, map[string]any{"b": "c"}},
		{"lists are replaced", map[string]any{"a": []any{"b"}}, map[string]any{"a": []any{"c"}}, map[string]any{"a": []any{"c"}}},
		{"objects merge deeply", map[string]any{"a": map[string]any{"b": "c", "d": "e"}},
			map[string]any{"a": map[string]any{"b": nil, "f": "g"}}, map[string]any{"a": map[string]any{"d": "e", "f": "g"}}},
		{"object over a scalar", map[string]any{"a": "b"}, map[string]any{"a": map[string]any{"c": nil, "d": "e"}},
			map[string]any{"a": map[string]any{"d": "e"}}},
		{"scalar patch replaces all", map[string]any{"a": "b"}, "x", "x"},
	}
	for _, tc := range tests {
		if got := mergePatch(tc.target, tc.patch); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestPatch(t *testing.T) {
	h := newHarness(t)
	h.ok("", "apply", "-f", etcdtest.FixturePath("calicoctl-corpus.yaml"))
	before := h.get(poolKey + "pool-v4")

	r := h.ok("", "patch", "ippool", "pool-v4", "-p", `{"spec":{"natOutgoing":false},"metadata":{"labels":{"zone":"z1"}}}`)
	if r.stdout != "Successfully patched 1 'IPPool' resource\n" {
		t.Errorf("stdout %q", r.stdout)
	}
	got := h.get(poolKey + "pool-v4")
	if specOf(got)["natOutgoing"] != nil || specOf(got)["cidr"] != "10.65.0.0/16" || specOf(got)["vxlanMode"] != "CrossSubnet" {
		t.Errorf("spec after patch: %v", specOf(got))
	}
	if metaOf(got)["labels"].(map[string]any)["zone"] != "z1" {
		t.Errorf("labels after patch: %v", metaOf(got)["labels"])
	}
	for _, f := range []string{"uid", "creationTimestamp"} {
		if metaOf(got)[f] != metaOf(before)[f] {
			t.Errorf("%s changed from %v to %v", f, metaOf(before)[f], metaOf(got)[f])
		}
	}

	// YAML, a nested merge that keeps the other fields, and null removing a label.
	h.ok("", "patch", "node", "host-a", "--type", "merge", "-p", "spec: {bgp: {routeReflectorClusterID: 224.0.0.9}}\nmetadata: {labels: {rack: null}}")
	node := h.get(nodeKey + "host-a")
	bgp := specOf(node)["bgp"].(map[string]any)
	if bgp["routeReflectorClusterID"] != "224.0.0.9" || bgp["ipv4Address"] != "198.18.0.1/24" || bgp["asNumber"] != float64(64512) {
		t.Errorf("spec.bgp after patch: %v", bgp)
	}
	if d := diffJSON(map[string]any{"route-reflector": "true"}, metaOf(node)["labels"]); d != "" {
		t.Errorf("labels after patch:\n%s", d)
	}

	r = h.ok("", "patch", "netset", "partners", "-n", "openstack", "-p", `{"spec":{"nets":["192.0.2.0/29"]}}`)
	if r.stdout != "Successfully patched 1 'NetworkSet' resource\n" || !reflect.DeepEqual(specOf(h.get(netSetKey + "openstack/partners"))["nets"], []any{"192.0.2.0/29"}) {
		t.Errorf("namespaced patch: %q, %v", r.stdout, h.get(netSetKey+"openstack/partners"))
	}
}

// TestPatchRefused: a patch that is malformed, touches what may not be patched, makes the
// object invalid or targets a missing object writes nothing and says why.
func TestPatchRefused(t *testing.T) {
	h := newHarness(t)
	h.ok("", "apply", "-f", etcdtest.FixturePath("calicoctl-corpus.yaml"))
	h.ok("apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: pool-z}\nspec: {cidr: 10.65.64.0/18, disabled: true}\n", "apply", "-f", "-")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"ippool", "pool-v4", "-p", `{"spec":{"vxlanMode":"Sometimes"}}`},
			`Hit error: the patched IPPool(pool-v4) is invalid: spec.vxlanMode: "Sometimes" is not one of Never, Always, CrossSubnet`},
		{[]string{"ippool", "pool-v4", "-p", `{"spec":{"cidr":"10.67.0.0/16","blockSize":28}}`},
			`Hit error: the patched IPPool(pool-v4) is invalid: spec.cidr: IPPool CIDR cannot be modified (stored: 10.65.0.0/16); spec.blockSize: IPPool BlockSize cannot be modified (stored: 26)`},
		{[]string{"ippool", "pool-disabled", "-p", `{"spec":{"disabled":false,"cidr":null}}`},
			`Hit error: the patched IPPool(pool-disabled) is invalid: spec.cidr: invalid CIDR ""`},
		{[]string{"ippool", "pool-z", "-p", `{"spec":{"disabled":false}}`},
			`Hit error: the patched IPPool(pool-z) is invalid: spec.cidr: 10.65.64.0/18 overlaps with enabled IPPool "pool-v4" (10.65.0.0/16)`},
		{[]string{"ippool", "pool-v4", "-p", `{"spec":{"cidrr":"10.0.0.0/8"}}`},
			`Hit error: the patched IPPool(pool-v4) cannot be decoded: field in document is not recognized or is in the wrong location: cidrr`},
		{[]string{"ippool", "pool-v4", "-p", `{"spec":{"blockSize":"big"}}`},
			`Hit error: the patched IPPool(pool-v4) cannot be decoded: spec.blockSize: cannot decode a JSON string as int`},
		{[]string{"ippool", "pool-v4", "-p", `{"metadata":{"name":"other","labels":{"a":"b"}},"status":{}}`},
			`Hit error: a patch may only change spec, metadata.labels and metadata.annotations, not metadata.name, status`},
		{[]string{"ippool", "pool-v4", "-p", `[1, 2]`}, `Hit error: invalid patch: it must be a JSON or YAML object`},
		{[]string{"ippool", "pool-v4", "-p", `{"spec":`}, `Hit error: invalid patch: yaml: line 1: did not find expected node content`},
		{[]string{"ippool", "pool-v4", "-p", `{}`, "--type", "json"}, `Hit error: patch type json (JSON Patch, RFC 6902) is not supported; use a merge patch`},
		{[]string{"ippool", "nope", "-p", `{"spec":{"natOutgoing":true}}`}, `Hit error: resource does not exist: IPPool(nope) with error: <nil>`},
		{[]string{"clusterinfo", "default", "-p", `{"spec":{}}`}, `Hit error: operation patch is not supported on ClusterInformation: resource is readonly`},
		{[]string{"gadget", "x", "-p", `{}`}, `Hit error: resource type 'gadget' is not supported`},
	}
	for _, tc := range tests {
		before := h.revision()
		r := h.fail("", append([]string{"patch"}, tc.args...)...)
		if r.stderr != tc.want+"\n" || r.stdout != "" {
			t.Errorf("patch %v:\nstderr %q\nwant   %q\nstdout %q", tc.args, r.stderr, tc.want+"\n", r.stdout)
		}
		if h.revision() != before {
			t.Errorf("patch %v wrote to etcd", tc.args)
		}
	}
	if r := h.fail("", "patch", "ippool", "-p", "{}"); !strings.HasPrefix(r.stderr, "Invalid option: 'calicoctl patch ippool -p {}") {
		t.Errorf("patch without a name: %q", r.stderr)
	}
}

// TestPatchRetriesOnConflict: the object changes between the patch's read and its write; the
// compare-and-swap fails and the patch is merged into the new version, keeping both changes.
// When the object keeps changing, the patch gives up with a conflict.
func TestPatchRetriesOnConflict(t *testing.T) {
	h := newHarness(t)
	h.ok("", "apply", "-f", etcdtest.FixturePath("calicoctl-corpus.yaml"))
	c := &cli{ctx: context.Background(), stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, env: noEnv}
	s, err := c.connect(h.config)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	pt, err := parsePatchTarget("ippool", "pool-v4", `{"spec":{"natOutgoing":false}}`, "merge", namespaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	attempts := 0
	s.beforePatchWrite = func() {
		attempts++
		if attempts == 1 {
			h.ok("", "label", "ippool", "pool-v4", "meanwhile=1")
		}
	}
	if err := s.patch(pt); err != nil {
		t.Fatal(err)
	}
	got := h.get(poolKey + "pool-v4")
	if attempts != 2 || specOf(got)["natOutgoing"] != nil || metaOf(got)["labels"].(map[string]any)["meanwhile"] != "1" {
		t.Errorf("after %d attempts: %v", attempts, got)
	}

	n := 0
	s.beforePatchWrite = func() {
		n++
		h.ok("", "label", "ippool", "pool-v4", "meanwhile="+strconv.Itoa(n), "--overwrite")
	}
	err = s.patch(pt)
	if !datastore.IsConflict(err) || n != maxUpdateAttempts {
		t.Errorf("always changing: %v after %d attempts, want a conflict after %d", err, n, maxUpdateAttempts)
	}
	if msg := calicoError(err, pt.kind, "", "pool-v4").Error(); msg != "update conflict: IPPool(pool-v4)" {
		t.Errorf("message %q", msg)
	}
}

// TestConcurrentPatches: concurrent patches of one object all land.
func TestConcurrentPatches(t *testing.T) {
	h := newHarness(t)
	h.ok("apiVersion: projectcalico.org/v3\nkind: Profile\nmetadata: {name: pr}\nspec: {}\n", "apply", "-f", "-")
	const n = 8
	results := make(chan runResult, n)
	for i := range n {
		go func() {
			var out, errb strings.Builder
			patch := `{"metadata":{"labels":{"k` + strconv.Itoa(i) + `":"v"}}}`
			code := run(t.Context(), []string{"patch", "profile", "pr", "-p", patch, "--config", h.config},
				strings.NewReader(""), &out, &errb, noEnv)
			results <- runResult{code, out.String(), errb.String()}
		}()
	}
	for range n {
		if r := <-results; r.code != 0 {
			t.Errorf("concurrent patch failed: %q %q", r.stdout, r.stderr)
		}
	}
	if labels := metaOf(h.get("/calico/resources/v3/projectcalico.org/profiles/pr"))["labels"].(map[string]any); len(labels) != n {
		t.Errorf("%d labels, want %d: %v", len(labels), n, labels)
	}
}
