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
			`hit error: updating existing resource: error with field spec.vxlanMode (unsupported value "Sometimes": supported values: "Never", "Always", "CrossSubnet")`},
		{[]string{"ippool", "pool-v4", "-p", `{"spec":{"cidr":"10.67.0.0/16","blockSize":28}}`},
			"hit error: updating existing resource: error with the following fields:\n-  IPPool.Spec.CIDR = '10.67.0.0/16' (IPPool CIDR cannot be modified)\n-  IPPool.Spec.BlockSize = '28' (IPPool BlockSize cannot be modified)\n"},
		{[]string{"ippool", "pool-disabled", "-p", `{"spec":{"disabled":false,"cidr":null}}`},
			`hit error: updating existing resource: error with field IPPool.Spec.CIDR (IPPool CIDR must be specified)`},
		{[]string{"ippool", "pool-z", "-p", `{"spec":{"disabled":false}}`},
			`hit error: updating existing resource: error with field IPPool.Spec.CIDR = '10.65.64.0/18' (IPPool(pool-z) CIDR overlaps with IPPool(pool-v4) CIDR 10.65.0.0/16)`},
		{[]string{"ippool", "pool-v4", "-p", `{"spec":{"cidrr":"10.0.0.0/8"}}`},
			`field in document is not recognized or is in the wrong location: cidrr`},
		{[]string{"ippool", "pool-v4", "-p", `{"spec":{"blockSize":"big"}}`},
			`hit error: creating resource from patched data: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal string into Go struct field IPPoolSpec.spec.blockSize of type int`},
		{[]string{"ippool", "pool-v4", "-p", `{"metadata":{"name":"other","labels":{"a":"b"}},"status":{}}`},
			`hit error: a patch may only change spec, metadata.labels and metadata.annotations, not metadata.name, status`},
		{[]string{"ippool", "pool-v4", "-p", `[1, 2]`}, `hit error: invalid patch: it must be a JSON or YAML object`},
		{[]string{"ippool", "pool-v4", "-p", `{"spec":`}, `hit error: invalid patch: yaml: line 1: did not find expected node content`},
		{[]string{"ippool", "pool-v4", "-p", `{}`, "--type", "json"}, `hit error: invalid JSON patch: it must be a list of operations: json: cannot unmarshal object into Go value of type []calicoctl.jsonPatchOp`},
		{[]string{"ippool", "pool-v4", "-p", `[{"op":"frob","path":"/spec"}]`, "--type", "json"}, `hit error: invalid JSON patch: operation 0: unknown operation "frob" (add, remove, replace, move, copy, test)`},
		{[]string{"ippool", "pool-v4", "-p", `[{"op":"add","path":"/spec/x"}]`, "-t", "json"}, `hit error: invalid JSON patch: operation 0: "add" has no value`},
		{[]string{"ippool", "pool-v4", "-p", `[{"op":"replace","path":"/metadata/name","value":"other"}]`, "--type", "json"},
			`hit error: a patch may only change spec, metadata.labels and metadata.annotations, not metadata.name`},
		{[]string{"ippool", "pool-v4", "-p", `[{"op":"remove","path":"/spec/nosuch"}]`, "--type", "json"},
			`hit error: JSON patch operation 0 (remove /spec/nosuch): "nosuch" does not exist`},
		{[]string{"ippool", "pool-v4", "-p", `[{"op":"replace","path":"/spec/natOutgoing","value":false},{"op":"test","path":"/spec/cidr","value":"10.0.0.0/8"}]`, "--type", "json"},
			`hit error: JSON patch operation 1 (test /spec/cidr): test failed: the value is "10.65.0.0/16"`},
		{[]string{"ippool", "pool-v4", "-p", `[{"op":"add","path":"/spec/allowedUses/7","value":"Tunnel"}]`, "--type", "json"},
			`hit error: JSON patch operation 0 (add /spec/allowedUses/7): index 7 is out of range (the list has 2 items)`},
		{[]string{"ippool", "pool-v4", "-p", `[{"op":"replace","path":"/spec/blockSize","value":33}]`, "--type", "json"},
			`hit error: updating existing resource: error with field spec.blockSize (block size 33 must be between 20 and 32 for an IPv4 pool)`},
		{[]string{"ippool", "pool-v4", "-p", `{}`, "--type", "xml"}, `hit error: unknown patch type "xml" (use strategic, merge or json)`},
		{[]string{"ippool", "nope", "-p", `{"spec":{"natOutgoing":true}}`}, `hit error: resource does not exist: IPPool(nope) with error: <nil>`},
		{[]string{"clusterinfo", "default", "-p", `{"spec":{}}`}, `hit error: operation patch is not supported on ClusterInformation: resource is readonly`},
		{[]string{"gadget", "x", "-p", `{}`}, `hit error: resource type 'gadget' is not supported`},
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

// TestJSONPatch: an RFC 6902 patch applies its operations in order to the stored object,
// and the result is validated and written like any patch.
func TestJSONPatch(t *testing.T) {
	h := newHarness(t)
	h.ok("apiVersion: projectcalico.org/v3\nkind: GlobalNetworkPolicy\nmetadata: {name: p1, labels: {a: x, b: 'y'}}\nspec: {selector: all(), ingress: [{action: Deny}, {action: Log}]}\n", "apply", "-f", "-")
	r := h.ok("", "patch", "gnp", "p1", "--type", "json", "-p", `[
		{"op":"test","path":"/spec/ingress/0/action","value":"Deny"},
		{"op":"add","path":"/spec/ingress/-","value":{"action":"Allow","protocol":"TCP","destination":{"ports":[80]}}},
		{"op":"add","path":"/spec/ingress/0","value":{"action":"Pass"}},
		{"op":"remove","path":"/spec/ingress/2"},
		{"op":"copy","from":"/spec/selector","path":"/metadata/annotations/sel"},
		{"op":"move","from":"/metadata/labels/a","path":"/metadata/labels/a~1b"},
		{"op":"replace","path":"/spec/selector","value":"has(web)"}]`)
	if r.stdout != "Successfully patched 1 'GlobalNetworkPolicy' resource\n" {
		t.Errorf("stdout %q", r.stdout)
	}
	got := h.get("/calico/resources/v3/projectcalico.org/globalnetworkpolicies/p1")
	want := mustJSON(t, `{"selector":"has(web)","tier":"default","types":["Ingress"],
		"ingress":[{"action":"Pass"},{"action":"Deny"},{"action":"Allow","protocol":"TCP","destination":{"ports":[80]}}]}`)
	if d := diffJSON(want, specOf(got)); d != "" {
		t.Errorf("spec: %s", d)
	}
	md := metaOf(got)
	if d := diffJSON(map[string]any{"a/b": "x", "b": "y", "projectcalico.org/tier": "default"}, md["labels"]); d != "" {
		t.Errorf("labels: %s", d)
	}
	if md["annotations"].(map[string]any)["sel"] != "all()" {
		t.Errorf("annotations: %v", md["annotations"])
	}
}

func TestJSONPatchOperations(t *testing.T) {
	doc := func() any {
		return map[string]any{"a": []any{"x", "y"}, "b": map[string]any{"c~d": 1.0}}
	}
	tests := []struct {
		name, patch, want, err string
	}{
		{"add to object", `[{"op":"add","path":"/z","value":true}]`, `{"a":["x","y"],"b":{"c~d":1},"z":true}`, ""},
		{"insert in list", `[{"op":"add","path":"/a/1","value":"q"}]`, `{"a":["x","q","y"],"b":{"c~d":1}}`, ""},
		{"escaped key", `[{"op":"replace","path":"/b/c~0d","value":2}]`, `{"a":["x","y"],"b":{"c~d":2}}`, ""},
		{"move into itself", `[{"op":"move","from":"/b","path":"/b/e"}]`, "", "cannot move /b into itself"},
		{"replace missing", `[{"op":"replace","path":"/nope","value":1}]`, "", `"nope" does not exist`},
		{"leading zero index", `[{"op":"remove","path":"/a/01"}]`, "", `"01" is not a list index`},
		{"whole document", `[{"op":"replace","path":"","value":{"k":1}}]`, `{"k":1}`, ""},
		{"test then fail atomically", `[{"op":"add","path":"/z","value":1},{"op":"test","path":"/a/0","value":"y"}]`, "", "test failed"},
	}
	for _, tc := range tests {
		ops, err := parseJSONPatch(tc.patch)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got, err := applyJSONPatch(doc(), ops)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if d := diffJSON(mustJSON(t, tc.want), got); d != "" {
			t.Errorf("%s: %s", tc.name, d)
		}
	}
}
