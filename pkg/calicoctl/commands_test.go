package calicoctl

import (
	"strconv"
	"strings"
	"testing"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore/etcdtest"
)

const (
	poolKey   = "/calico/resources/v3/projectcalico.org/ippools/"
	netSetKey = "/calico/resources/v3/projectcalico.org/networksets/"
)

func poolYAML(name, cidr string) string {
	return "apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: " + name + "}\nspec: {cidr: " + cidr + "}\n"
}

func metaOf(v map[string]any) map[string]any { return v["metadata"].(map[string]any) }
func specOf(v map[string]any) map[string]any { return v["spec"].(map[string]any) }

// TestReapplyGetOutputIsNoOp: `get KIND -o yaml` applied again changes nothing but the
// resourceVersions (the mod revisions), for every kind of every fixture.
func TestReapplyGetOutputIsNoOp(t *testing.T) {
	h := newHarness(t)
	for _, f := range []string{"calicoctl-corpus.json", "cni-ipam-and-status.json", "startup-result.json"} {
		etcdtest.LoadFixture(t, h.cli, f)
	}
	before := h.dump()
	for _, k := range api.Kinds() {
		if k.Kind == "ClusterInformation" {
			continue // read-only for calicoctl; see TestBadInputWritesNothing
		}
		t.Run(k.Kind, func(t *testing.T) {
			args := []string{"get", k.Plural, "-o", "yaml"}
			if k.Namespaced {
				args = append(args, "-A")
			}
			out := h.ok("", args...).stdout
			rev := h.revision()
			r := h.run(out, "apply", "-f", "-", "--skip-empty")
			if strings.Contains(out, "items: []") {
				if r.code != 0 || r.stdout != "No resources specified\n" {
					t.Errorf("empty list: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
				}
				return
			}
			if k.Kind == "Profile" {
				// As in Project Calico, the listing ends with the built-in profile, which
				// cannot be updated: the stored ones are applied, it is refused.
				if r.code != 1 || !strings.Contains(r.stderr, "projectcalico-default-allow") {
					t.Fatalf("re-apply of profiles: exit %d\n%s%s", r.code, r.stdout, r.stderr)
				}
			} else if r.code != 0 {
				t.Fatalf("re-apply: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			if h.revision() == rev {
				t.Error("re-apply wrote nothing")
			}
		})
	}
	after := h.dump()
	assertSameKeys(t, before, after)
	for key, b := range before {
		if d := diffJSON(b, after[key]); d != "" {
			t.Errorf("%s changed:\n%s", key, d)
		}
	}
}

func TestCreateSemantics(t *testing.T) {
	h := newHarness(t)
	h.ok(poolYAML("p1", "10.65.0.0/24"), "create", "-f", "-")
	first := h.get(poolKey + "p1")

	r := h.fail(poolYAML("p1", "10.65.0.0/24"), "create", "-f", "-")
	if want := "failed to create 'IPPool' resource: [resource already exists: IPPool(p1) with error: <nil>]\n"; r.stderr != want {
		t.Errorf("stderr = %q, want %q", r.stderr, want)
	}
	r = h.ok(poolYAML("p1", "10.65.0.0/24"), "create", "-f", "-", "--skip-exists")
	if want := "Successfully created 1 'IPPool' resource(s)\n"; r.stdout != want {
		t.Errorf("stdout = %q, want %q", r.stdout, want)
	}
	// Project Calico prints the partial success line only when more resources were created than
	// failed.
	r = h.fail(poolYAML("p1", "10.65.0.0/24")+"---\n"+poolYAML("p2", "10.65.1.0/24"), "create", "-f", "-")
	if r.stdout != "" {
		t.Errorf("stdout = %q, want none", r.stdout)
	}
	if want := "hit error: [resource already exists: IPPool(p1) with error: <nil>]\n"; r.stderr != want {
		t.Errorf("stderr = %q, want %q", r.stderr, want)
	}
	if d := diffJSON(first, h.get(poolKey+"p1")); d != "" {
		t.Errorf("failed create changed p1:\n%s", d)
	}
	if h.get(poolKey+"p2") == nil {
		t.Error("p2 was not created")
	}
	r = h.fail(poolYAML("p1", "10.65.0.0/24")+"---\n"+poolYAML("p3", "10.65.2.0/24")+"---\n"+poolYAML("p4", "10.65.3.0/24"), "create", "-f", "-")
	if want := "Partial success: created the first 2 out of 3 'IPPool' resources:\n"; r.stdout != want {
		t.Errorf("stdout = %q, want %q", r.stdout, want)
	}
}

func TestReplaceSemantics(t *testing.T) {
	h := newHarness(t)
	// Project Calico counts a resource it failed to replace as handled.
	r := h.fail(poolYAML("p1", "10.65.0.0/24"), "replace", "-f", "-")
	if want := "hit error: resource does not exist: IPPool(p1) with error: <nil>\n"; r.stderr != want {
		t.Errorf("stderr = %q, want %q", r.stderr, want)
	}
	if want := "Partial success: replaced the first 1 out of 1 'IPPool' resources:\n"; r.stdout != want {
		t.Errorf("stdout = %q, want %q", r.stdout, want)
	}
	h.ok(poolYAML("p1", "10.65.0.0/24"), "create", "-f", "-")
	created := h.get(poolKey + "p1")

	out := h.ok("", "get", "ippool", "p1", "-o", "yaml").stdout
	changed := strings.Replace(out, "  ipipMode: Never\n", "  ipipMode: Never\n  natOutgoing: true\n", 1)
	r = h.ok(changed, "replace", "-f", "-")
	if want := "Successfully replaced 1 'IPPool' resource(s)\n"; r.stdout != want {
		t.Errorf("stdout = %q, want %q", r.stdout, want)
	}
	got := h.get(poolKey + "p1")
	if specOf(got)["natOutgoing"] != true {
		t.Errorf("natOutgoing not set: %v", got)
	}
	for _, f := range []string{"uid", "creationTimestamp"} {
		if metaOf(got)[f] != metaOf(created)[f] {
			t.Errorf("%s changed from %v to %v", f, metaOf(created)[f], metaOf(got)[f])
		}
	}
	// The same YAML again carries a resourceVersion that is no longer current.
	rev := h.revision()
	r = h.fail(changed, "replace", "-f", "-")
	if r.stderr != "hit error: update conflict: IPPool(p1)\n" || h.revision() != rev {
		t.Errorf("stale replace: stderr %q, revision %d -> %d", r.stderr, rev, h.revision())
	}
}

// TestApplyKeepsMetadataAndReplacesLabels: as Project Calico's calicoctl (mergeMetadataForUpdate),
// an apply of an existing object keeps the stored metadata but takes the new labels and
// annotations whole: a label left out is removed.
func TestApplyKeepsMetadataAndReplacesLabels(t *testing.T) {
	h := newHarness(t)
	h.ok("apiVersion: projectcalico.org/v3\nkind: Profile\nmetadata: {name: pr, labels: {a: \"1\", b: \"2\"}}\nspec: {}\n", "apply", "-f", "-")
	first := h.get("/calico/resources/v3/projectcalico.org/profiles/pr")
	h.ok("apiVersion: projectcalico.org/v3\nkind: Profile\nmetadata: {name: pr, labels: {b: \"3\"}}\nspec: {labelsToApply: {x: \"z\"}}\n", "apply", "-f", "-")
	got := h.get("/calico/resources/v3/projectcalico.org/profiles/pr")
	want := map[string]any{"b": "3"}
	if d := diffJSON(want, metaOf(got)["labels"]); d != "" {
		t.Errorf("labels:\n%s", d)
	}
	if metaOf(got)["uid"] != metaOf(first)["uid"] || metaOf(got)["creationTimestamp"] != metaOf(first)["creationTimestamp"] {
		t.Errorf("uid/creationTimestamp not kept: %v -> %v", metaOf(first), metaOf(got))
	}
	if d := diffJSON(map[string]any{"labelsToApply": map[string]any{"x": "z"}}, specOf(got)); d != "" {
		t.Errorf("spec:\n%s", d)
	}
}

// TestVXLANPoolLeavesFelixConfigurationAlone: current Project Calico no longer turns on
// vxlanEnabled when a VXLAN pool is written (felix derives it from the pools): calico-node wrote
// the VXLAN pool of startup-result.json without touching FelixConfiguration's vxlanEnabled.
func TestVXLANPoolLeavesFelixConfigurationAlone(t *testing.T) {
	h := newHarness(t)
	h.ok("apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: v}\nspec: {cidr: 10.65.0.0/16, vxlanMode: Always}\n", "apply", "-f", "-")
	if got := h.get("/calico/resources/v3/projectcalico.org/felixconfigurations/default"); got != nil {
		t.Errorf("FelixConfiguration default was written: %v", got)
	}
}

func TestDeleteSemantics(t *testing.T) {
	h := newHarness(t)
	h.ok(poolYAML("p1", "10.65.0.0/24")+"---\n"+poolYAML("p2", "10.65.1.0/24")+"---\n"+poolYAML("p3", "10.65.2.0/24"), "apply", "-f", "-")

	r := h.ok("", "delete", "ippool", "p1")
	if want := "Successfully deleted 1 'IPPool' resource(s)\n"; r.stdout != want || h.get(poolKey+"p1") != nil {
		t.Errorf("stdout = %q (want %q); p1 = %v", r.stdout, want, h.get(poolKey+"p1"))
	}
	r = h.fail("", "delete", "ippool", "p1")
	if want := "Failed to delete 'IPPool' resource: resource does not exist: IPPool(p1) with error: <nil>\n\n"; r.stderr != want {
		t.Errorf("stderr = %q, want %q", r.stderr, want)
	}
	r = h.ok("", "delete", "pools", "p1", "p2", "--skip-not-exists")
	if want := "Successfully deleted 2 'IPPool' resource(s)\n"; r.stdout != want || h.get(poolKey+"p2") != nil {
		t.Errorf("stdout = %q, want %q", r.stdout, want)
	}
	// delete -f with a stale resourceVersion is a conflict; with the current one it deletes.
	out := h.ok("", "get", "ippool", "p3", "-o", "yaml").stdout
	h.ok(poolYAML("p3", "10.65.2.0/24"), "apply", "-f", "-")
	r = h.fail(out, "delete", "-f", "-")
	if want := "Failed to delete 'IPPool' resource: update conflict: IPPool(p3)\n\n"; r.stderr != want || h.get(poolKey+"p3") == nil {
		t.Errorf("stale delete: stderr %q, want %q", r.stderr, want)
	}
	h.ok(h.ok("", "get", "ippool", "p3", "-o", "yaml").stdout, "delete", "-f", "-")
	if h.get(poolKey+"p3") != nil {
		t.Error("p3 not deleted")
	}
	r = h.fail("", "delete", "clusterinfo", "default")
	if want := "Failed to delete 'ClusterInformation' resource: operation delete is not supported on ClusterInformation\n\n"; r.stderr != want {
		t.Errorf("stderr = %q, want %q", r.stderr, want)
	}
}

// TestDeleteTieredPolicyFromFile: a policy in a non-default tier is stored under the name it was
// given (Project Calico no longer adds the tier prefix) and deleted by the same file.
func TestDeleteTieredPolicyFromFile(t *testing.T) {
	h := newHarness(t)
	in := "apiVersion: projectcalico.org/v3\nkind: Tier\nmetadata: {name: sec}\nspec: {order: 1}\n---\n" +
		"apiVersion: projectcalico.org/v3\nkind: GlobalNetworkPolicy\nmetadata: {name: p}\nspec: {tier: sec, selector: all()}\n"
	h.ok(in, "apply", "-f", "-")
	const key = "/calico/resources/v3/projectcalico.org/globalnetworkpolicies/p"
	if h.get(key) == nil {
		t.Fatal("policy not stored under its name")
	}
	r := h.ok(in, "delete", "-f", "-")
	if r.stdout != "Successfully deleted 2 resource(s)\n" || h.get(key) != nil {
		t.Errorf("stdout %q; policy %v", r.stdout, h.get(key))
	}
}

func TestLabel(t *testing.T) {
	h := newHarness(t)
	h.ok("", "apply", "-f", etcdtest.FixturePath("calicoctl-corpus.yaml"))
	const node = "/calico/resources/v3/projectcalico.org/nodes/host-a"
	labels := func() map[string]any { return metaOf(h.get(node))["labels"].(map[string]any) }
	steps := []struct {
		args   []string
		code   int
		out    string
		labels map[string]any
	}{
		{[]string{"nodes", "host-a", "zone=z1"}, 0, "Successfully set label zone on nodes host-a\n",
			map[string]any{"rack": "r1", "route-reflector": "true", "zone": "z1"}},
		{[]string{"nodes", "host-a", "zone=z2"}, 1, "failed to update label of nodes host-a, key zone is already present. please use '--overwrite' to set a new value\n", nil},
		{[]string{"node", "host-a", "zone=z2", "--overwrite"}, 0, "Successfully updated label zone on node host-a\n",
			map[string]any{"rack": "r1", "route-reflector": "true", "zone": "z2"}},
		{[]string{"node", "host-a", "zone", "--remove"}, 0, "Successfully removed label zone from node host-a\n",
			map[string]any{"rack": "r1", "route-reflector": "true"}},
		{[]string{"node", "host-a", "rack-"}, 0, "Successfully removed label rack from node host-a\n",
			map[string]any{"route-reflector": "true"}},
		{[]string{"node", "host-a", "rack", "--remove"}, 1, "cannot remove label of node host-a, key rack does not exist\n", nil},
		{[]string{"node", "nope", "a=b"}, 1, "failed to get node nope, error resource does not exist: Node(nope) with error: <nil>\n", nil},
		{[]string{"node", "host-a", "bad key=b"}, 1, "failed to update node host-a, label not changed: invalid Node \"host-a\": metadata.labels: invalid label key \"bad key\"\n", nil},
	}
	for _, s := range steps {
		before := labels()
		r := h.run("", append([]string{"label"}, s.args...)...)
		got := r.stdout
		if s.code != 0 {
			got = r.stderr
		}
		if r.code != s.code || got != s.out {
			t.Errorf("label %v: exit %d, output %q; want %d, %q", s.args, r.code, got, s.code, s.out)
		}
		want := s.labels
		if want == nil {
			want = before
		}
		if d := diffJSON(want, labels()); d != "" {
			t.Errorf("label %v: labels:\n%s", s.args, d)
		}
	}
	h.ok("", "label", "wep", "host--b-cni-0123456789abcdef-eth0", "app=web")
	h.ok("", "label", "netset", "partners", "-n", "openstack", "tier=gold")
	if metaOf(h.get(netSetKey + "openstack/partners"))["labels"].(map[string]any)["tier"] != "gold" {
		t.Error("namespaced label not set")
	}
}

func TestNamespacesAndOutputs(t *testing.T) {
	h := newHarness(t)
	h.ok("", "apply", "-f", etcdtest.FixturePath("calicoctl-corpus.yaml"))
	h.ok("apiVersion: projectcalico.org/v3\nkind: NetworkSet\nmetadata: {name: local}\nspec: {nets: [198.51.100.0/28]}\n", "apply", "-f", "-")
	if h.get(netSetKey+"default/local") == nil {
		t.Fatal("NetworkSet without namespace was not put in namespace default")
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"get", "networksets"}, "NAME    \nlocal   \n\n"},
		{[]string{"get", "networksets", "-n", "openstack"}, "NAMESPACE   NAME       \nopenstack   partners   \n\n"},
		{[]string{"get", "networksets", "-A", "-o", "wide"},
			"NAMESPACE   NAME       NETS              \ndefault     local      198.51.100.0/28   \nopenstack   partners   192.0.2.0/28      \n\n"},
		{[]string{"get", "networksets", "-a", "-o", "name"}, "networkset/default/local\nnetworkset/openstack/partners\n"},
		{[]string{"get", "ippools", "-o", "name"}, "ippool/pool-disabled\nippool/pool-v4\nippool/pool-v6\n"},
		{[]string{"get", "ippools"},
			"NAME            CIDR            SELECTOR       \npool-disabled   10.66.0.0/24    all()          \npool-v4         10.65.0.0/16    rack == 'r1'   \npool-v6         fd5c:1:2::/48   all()          \n\n"},
		{[]string{"get", "ippools", "-o", "wide"},
			"NAME            CIDR            NAT     IPIPMODE   VXLANMODE     DISABLED   DISABLEBGPEXPORT   SELECTOR       ASSIGNMENTMODE   \n" +
				"pool-disabled   10.66.0.0/24    false   Never      Never         true       false              all()          Automatic        \n" +
				"pool-v4         10.65.0.0/16    true    Never      CrossSubnet   false      false              rack == 'r1'   Automatic        \n" +
				"pool-v6         fd5c:1:2::/48   false   Never      Never         false      true               all()          Automatic        \n\n"},
		{[]string{"get", "ippool", "pool-v4", "-o", "custom-columns=NAME,NAT"}, "NAME      NAT    \npool-v4   true   \n\n"},
		{[]string{"get", "nodes", "-o", "wide"},
			"NAME     ASN       IPV4            IPV6                \nhost-a   64512     198.18.0.1/24   fd00:198:18::1/64   \nhost-b   (64512)   198.18.1.1/24                       \n\n"},
		{[]string{"get", "tiers"},
			"NAME            ORDER   \nsecurity        100     \nkube-admin      1000    \ndefault         1e+06   \nkube-baseline   1e+07   \n\n"},
		{[]string{"get", "bgppeers"},
			"NAME            PEERIP              NODE           ASN     \nnode-specific   198.18.1.254:1179   host-a         64600   \nrr-mesh                             all()          0       \ntor-peer        198.18.0.254        rack == 'r1'   64513   \n\n"},
		{[]string{"get", "wep", "-A"},
			"NAMESPACE   WORKLOAD        NODE     NETWORKS                        INTERFACE         \ndefault     0123456789ab    host-b   10.65.40.2/32                   cali0123456789a   \nopenstack   instance-0001   host-a   10.65.12.5/32,fd5c:1:2::5/128   tap1234abcd       \n\n"},
		{[]string{"get", "gnp", "allow-web", "host-protect", "-o", "name"}, "globalnetworkpolicy/allow-web\nglobalnetworkpolicy/host-protect\n"},
	}
	for _, tc := range tests {
		if got := h.ok("", tc.args...).stdout; got != tc.want {
			t.Errorf("%v:\n%q\nwant:\n%q", tc.args, got, tc.want)
		}
	}
	errs := []struct {
		args []string
		want string
	}{
		{[]string{"get", "ippools", "-A"}, "IPPool is not namespaced\n"},
		{[]string{"get", "netsets", "partners", "-A"}, "cannot use --all-namespace flag for getting a single resource\n"},
		{[]string{"get", "netsets", "-A", "-n", "x"}, "cannot use both --namespace and --all-namespaces flags at the same time\n"},
		{[]string{"get", "gadgets"}, "failed to get resources: resource type 'gadgets' is not supported\n"},
		{[]string{"get", "ippools", ""}, "failed to get resources: resource name may not be empty\n"},
		{[]string{"get", "ippools", "-o", "table"}, "unrecognized output format 'table'\n"},
		{[]string{"get", "ippools", "-o", "custom-columns=NAME,SIZE"}, "Unknown heading SIZE, valid values are: ASSIGNMENTMODE, CIDR, DISABLEBGPEXPORT, DISABLED, IPIPMODE, NAME, NAT, SELECTOR, VXLANMODE\n"},
		{[]string{"get", "ippool", "pool-v4", "nope"}, "resource does not exist: IPPool(nope) with error: <nil>\n"},
	}
	for _, tc := range errs {
		if r := h.fail("", tc.args...); r.stderr != tc.want {
			t.Errorf("%v: stderr %q, want %q", tc.args, r.stderr, tc.want)
		}
	}
}

func TestGetNamedObjects(t *testing.T) {
	h := newHarness(t)
	h.ok("", "apply", "-f", etcdtest.FixturePath("calicoctl-corpus.yaml"))
	one := mustJSON(t, h.ok("", "get", "netset", "partners", "-n", "openstack", "-o", "json").stdout).(map[string]any)
	if one["kind"] != "NetworkSet" || metaOf(one)["name"] != "partners" || metaOf(one)["resourceVersion"] == nil {
		t.Errorf("single get printed %v", one)
	}
	two := mustJSON(t, h.ok("", "get", "ippool", "pool-v4", "pool-v6", "-o", "json").stdout).([]any)
	if len(two) != 2 || metaOf(two[1].(map[string]any))["name"] != "pool-v6" {
		t.Errorf("two named gets printed %v", two)
	}
	exp := mustJSON(t, h.ok("", "get", "ippool", "pool-v4", "-o", "json", "--export").stdout).(map[string]any)
	if d := diffJSON(map[string]any{"name": "pool-v4"}, metaOf(exp)); d != "" {
		t.Errorf("--export metadata:\n%s", d)
	}
	byFile := mustJSON(t, h.ok(poolYAML("pool-v6", "fd5c:1:2::/48"), "get", "-f", "-", "-o", "json").stdout).(map[string]any)
	if metaOf(byFile)["name"] != "pool-v6" {
		t.Errorf("get -f printed %v", byFile)
	}
}

// TestGetSkipsGarbage: an undecodable value is reported with its key on stderr and the other
// objects are still listed; the exit code is 0, as Project Calico silently skips such values.
func TestGetSkipsGarbage(t *testing.T) {
	h := newHarness(t)
	h.ok("", "apply", "-f", etcdtest.FixturePath("calicoctl-corpus.yaml"))
	h.put(poolKey+"garbage", `{"kind":"IPPool","spec":{"cidr":`)
	h.put(poolKey+"wrong-type", `{"kind":"IPPool","spec":{"blockSize":"x"}}`)
	r := h.ok("", "get", "ippools", "-o", "name")
	if want := "ippool/pool-disabled\nippool/pool-v4\nippool/pool-v6\n"; r.stdout != want {
		t.Errorf("stdout %q, want %q", r.stdout, want)
	}
	for _, key := range []string{poolKey + "garbage", poolKey + "wrong-type"} {
		if !strings.Contains(r.stderr, "Warning: skipping "+key+": ") {
			t.Errorf("stderr does not report %s:\n%s", key, r.stderr)
		}
	}
	if n := strings.Count(r.stderr, "\n"); n != 2 {
		t.Errorf("stderr has %d lines, want 2:\n%s", n, r.stderr)
	}
	r = h.fail("", "get", "ippool", "garbage")
	if !strings.Contains(r.stderr, poolKey+"garbage") {
		t.Errorf("named get of garbage: stderr %q does not name the key", r.stderr)
	}
	// apply over garbage repairs it.
	h.ok(poolYAML("garbage", "10.70.0.0/16"), "apply", "-f", "-")
	if got := h.get(poolKey + "garbage"); got == nil || specOf(got)["cidr"] != "10.70.0.0/16" {
		t.Errorf("apply over garbage stored %v", got)
	}
}

func TestVersion(t *testing.T) {
	h := newHarness(t)
	r := h.fail("", "version")
	if !strings.HasPrefix(r.stdout, "Client Version:    dev\nGit commit:        \n") ||
		r.stderr != "Unable to retrieve Cluster Version or Type: resource does not exist: ClusterInformation(default) with error: <nil>\n" {
		t.Errorf("stdout %q stderr %q", r.stdout, r.stderr)
	}
	h.put(clusterInfoKey, `{"kind":"ClusterInformation","apiVersion":"projectcalico.org/v3","metadata":{"name":"default"},"spec":{"calicoVersion":"v3.30.0","clusterType":"bgp,openstack"}}`)
	r = h.ok("", "version")
	want := "Client Version:    dev\nGit commit:        \nCluster Version:   v3.30.0\nCluster Type:      bgp,openstack\n"
	if r.stdout != want {
		t.Errorf("stdout %q, want %q", r.stdout, want)
	}
}

// TestInitializeKeepsExistingClusterInformation: writes create ClusterInformation only when it
// is missing, and fill in only what is missing.
func TestInitializeKeepsExistingClusterInformation(t *testing.T) {
	h := newHarness(t)
	h.put(clusterInfoKey, `{"kind":"ClusterInformation","apiVersion":"projectcalico.org/v3","metadata":{"name":"default","uid":"u"},"spec":{"calicoVersion":"v3.30.0","datastoreReady":false}}`)
	h.ok(poolYAML("p", "10.65.0.0/24"), "apply", "-f", "-")
	spec := specOf(h.get(clusterInfoKey))
	if spec["datastoreReady"] != false || spec["calicoVersion"] != "v3.30.0" || !hexGUID.MatchString(str(spec["clusterGUID"])) {
		t.Errorf("ClusterInformation spec = %v", spec)
	}
}

func TestUsageAndBadOptions(t *testing.T) {
	h := newHarness(t)
	if r := h.ok("", "apply", "--help"); !strings.HasPrefix(r.stdout, "Usage:\n  calicoctl apply --filename=<FILENAME>") {
		t.Errorf("apply --help: %q", r.stdout)
	}
	if r := h.fail("", "apply"); !strings.HasPrefix(r.stderr, "Invalid option: 'calicoctl apply'.") {
		t.Errorf("apply without -f: %q", r.stderr)
	}
	if r := h.fail("", "get", "ippools", "--bogus"); r.stderr != "unknown flag: --bogus\n" {
		t.Errorf("unknown option: %q", r.stderr)
	}
	if r := h.fail("", "frobnicate"); r.stderr != `unknown command "frobnicate" for "calicoctl"`+"\n" {
		t.Errorf("unknown command: %q", r.stderr)
	}
	if r := h.ok("", "--log-level=debug", "get", "ippools", "-o", "name"); r.stdout != "" {
		t.Errorf("get on empty etcd printed %q", r.stdout)
	}
}

// TestConcurrentWritersAllLand: calicoctl processes labelling and applying one object at the
// same time all succeed, and no label set by `label` is lost: every write is a compare-and-swap
// retried on conflict. (An apply replaces the labels, as in Project Calico, so the concurrent
// writers beside `label` are patches of spec.labelsToApply.)
func TestConcurrentWritersAllLand(t *testing.T) {
	h := newHarness(t)
	h.ok("apiVersion: projectcalico.org/v3\nkind: Profile\nmetadata: {name: pr}\nspec: {}\n", "apply", "-f", "-")
	const n = 8
	results := make(chan runResult, 2*n)
	for i := range n {
		go func() {
			var out, errb strings.Builder
			code := run(t.Context(), []string{"label", "profile", "pr", "k" + strconv.Itoa(i) + "=v", "--config", h.config},
				strings.NewReader(""), &out, &errb, noEnv)
			results <- runResult{code, out.String(), errb.String()}
		}()
		go func() {
			var out, errb strings.Builder
			code := run(t.Context(), []string{"patch", "profile", "pr", "-p", `{"spec":{"labelsToApply":{"a` + strconv.Itoa(i) + `":"v"}}}`, "--config", h.config},
				strings.NewReader(""), &out, &errb, noEnv)
			results <- runResult{code, out.String(), errb.String()}
		}()
	}
	for range 2 * n {
		if r := <-results; r.code != 0 {
			t.Errorf("concurrent write failed: %q %q", r.stdout, r.stderr)
		}
	}
	got := h.get("/calico/resources/v3/projectcalico.org/profiles/pr")
	labels := metaOf(got)["labels"].(map[string]any)
	toApply := specOf(got)["labelsToApply"].(map[string]any)
	if len(labels) != n || len(toApply) != n {
		t.Errorf("%d labels and %d labelsToApply survived, want %d each: %v %v", len(labels), len(toApply), n, labels, toApply)
	}
}
