package calicoctl

import (
	"bytes"
	"strings"
	"testing"

	"github.com/calico-host/calico-host/pkg/datastore/etcdtest"
)

// runOffline runs calicoctl without any datastore configuration.
func runOffline(t *testing.T, stdin string, args ...string) runResult {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(t.Context(), args, strings.NewReader(stdin), &out, &errb, noEnv)
	return runResult{code: code, stdout: out.String(), stderr: errb.String()}
}

// TestValidateOffline: validate needs no datastore; it reports in Project Calico's words and
// exits non-zero when any resource is invalid.
func TestValidateOffline(t *testing.T) {
	tests := []struct {
		name           string
		input          string
		code           int
		stdout, stderr string
	}{{
		name:   "all valid, one kind",
		input:  poolYAML("p1", "10.65.0.0/24") + "---\n" + poolYAML("p2", "fd5c:1::/64"),
		stdout: "Successfully validated 2 'IPPool' resource(s)\n",
	}, {
		name: "all valid, several kinds (ClusterInformation too: validate writes nothing)",
		input: goodNetSet + "---\n" + poolYAML("p1", "10.65.0.0/24") +
			"---\napiVersion: projectcalico.org/v3\nkind: NetworkSet\nmetadata: {name: ns1}\nspec: {nets: [192.0.2.0/28]}\n" +
			"---\napiVersion: projectcalico.org/v3\nkind: ClusterInformation\nmetadata: {name: default}\nspec: {clusterType: bgp}\n",
		stdout: "Successfully validated 4 resource(s)\n",
	}, {
		name:   "partial success",
		input:  poolYAML("p1", "10.65.0.0/24") + "---\n" + poolYAML("p2", "10.65.1.0/24") + "---\n" + poolYAML("pool-x", "10.0.0/8"),
		code:   1,
		stdout: "Partial success: validated the first 2 out of 3 'IPPool' resources:\n",
		stderr: `hit error: [error with field IPPool.Spec.CIDR = '10.0.0/8' (IPPool CIDR must be a valid subnet)]` + "\n",
	}, {
		name:  "one invalid resource with two problems",
		input: "apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: pool-a}\nspec: {cidr: 10.91.0.0/16, blockSize: 12, vxlanMode: Sometimes}\n",
		code:  1,
		stderr: "failed to validate 'IPPool' resource: [error with the following fields:\n-  spec.blockSize (block size 12 must be between 20 and 32 for an IPv4 pool)\n" +
			"-  spec.vxlanMode (unsupported value \"Sometimes\": supported values: \"Never\", \"Always\", \"CrossSubnet\")\n]\n",
	}, {
		name:  "pools of the input overlap each other",
		input: poolYAML("big", "10.80.0.0/16") + "---\n" + poolYAML("small", "10.80.1.0/24"),
		code:  1,
		stderr: `failed to validate any 'IPPool' resources: [error with field IPPool.Spec.CIDR = '10.80.0.0/16' (IPPool(big) CIDR overlaps with IPPool(small) CIDR 10.80.1.0/24)` +
			` error with field IPPool.Spec.CIDR = '10.80.1.0/24' (IPPool(small) CIDR overlaps with IPPool(big) CIDR 10.80.0.0/16)]` + "\n",
	}, {
		name:   "no valid resource of several kinds",
		input:  poolYAML("bad", "10.0.0/8") + "---\napiVersion: projectcalico.org/v3\nkind: HostEndpoint\nmetadata: {name: hep}\nspec: {interfaceName: eth0}\n",
		code:   1,
		stderr: `failed to validate any resources: [error with field IPPool.Spec.CIDR = '10.0.0/8' (IPPool CIDR must be a valid subnet) error with field spec.node (node is required)]` + "\n",
	}, {
		name:   "undecodable input",
		input:  goodNetSet + "---\napiVersion: projectcalico.org/v3\nkind: Gadget\nmetadata: {name: g}\n",
		code:   1,
		stderr: "failed to execute command: unknown resource type (Gadget) and/or version (projectcalico.org/v3)\n",
	}, {
		name:   "empty input",
		input:  "# nothing\n",
		code:   1,
		stderr: "no resources specified in file -\n",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := runOffline(t, tc.input, "validate", "-f", "-")
			if r.code != tc.code || r.stdout != tc.stdout || r.stderr != tc.stderr {
				t.Errorf("exit %d, stdout %q, stderr %q\nwant exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr, tc.code, tc.stdout, tc.stderr)
			}
		})
	}
}

// TestValidateCorpus: every resource Project Calico's calicoctl applied validates.
func TestValidateCorpus(t *testing.T) {
	r := runOffline(t, "", "validate", "-f", etcdtest.FixturePath("calicoctl-corpus.yaml"))
	if r.code != 0 || r.stdout != "Successfully validated 25 resource(s)\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if r := runOffline(t, "", "validate", "-f", etcdtest.FixturePath("calicoctl-corpus.yaml"), "--skip-empty", "-R"); r.code != 0 {
		t.Errorf("with -R --skip-empty: exit %d, %q", r.code, r.stderr)
	}
}

// TestValidateNeverReadsTheDatastoreConfiguration: validate works offline, as Project Calico's:
// --config (even a missing file) and --context are accepted and ignored, and the stored objects
// play no part (a pool overlapping a stored one and a policy in a missing tier validate).
func TestValidateNeverReadsTheDatastoreConfiguration(t *testing.T) {
	h := newHarness(t)
	h.ok("", "apply", "-f", etcdtest.FixturePath("calicoctl-corpus.yaml"))
	input := poolYAML("pool-y", "10.65.128.0/18") + "---\n" +
		"apiVersion: projectcalico.org/v3\nkind: GlobalNetworkPolicy\nmetadata: {name: ghost.p}\nspec: {tier: ghost, selector: all()}\n---\n" +
		goodNetSet
	before := h.revision()
	for _, args := range [][]string{
		{"validate", "-f", "-", "--config", h.config},
		{"validate", "-f", "-", "--config=/nonexistent/calicoctl.cfg", "--context=test"},
		{"validate", "-c", "/nonexistent/datastore.toml", "-f", "-"},
	} {
		if r := runOffline(t, input, args...); r.code != 0 || r.stdout != "Successfully validated 3 resource(s)\n" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, r.code, r.stdout, r.stderr)
		}
	}
	if after := h.revision(); after != before {
		t.Errorf("validate wrote to etcd (revision %d -> %d)", before, after)
	}
	if r := h.fail("", "validate", "ippool", "p"); !strings.HasPrefix(r.stderr, "Invalid option: 'calicoctl validate ippool p") {
		t.Errorf("positional arguments: %q", r.stderr)
	}
}

// TestValidateNamespace: -n gives namespaced resources their namespace and refuses a resource
// in another one, as apply does.
func TestValidateNamespace(t *testing.T) {
	h := newHarness(t)
	doc := "apiVersion: projectcalico.org/v3\nkind: NetworkSet\nmetadata:\n  name: s\n  namespace: ns1\nspec:\n  nets: [10.65.0.0/24]\n"
	if r := h.ok(doc, "validate", "-f", "-", "-n", "ns1"); r.stdout != "Successfully validated 1 'NetworkSet' resource(s)\n" {
		t.Errorf("same namespace: %q", r.stdout)
	}
	if r := h.fail(doc, "validate", "-f", "-", "--namespace", "ns2"); !strings.Contains(r.stderr, "resource namespace does not match client namespace. ns1 != ns2") {
		t.Errorf("other namespace: %q", r.stderr)
	}
}
