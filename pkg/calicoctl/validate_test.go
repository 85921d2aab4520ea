package calicoctl

import (
	"testing"

	"github.com/calico-host/calico-host/pkg/datastore/etcdtest"
)

const goodNetSet = `apiVersion: projectcalico.org/v3
kind: GlobalNetworkSet
metadata:
  name: ok-set
spec:
  nets: [192.0.2.0/24]
`

// TestBadInputWritesNothing checks each class of validation rule: the exact message in Project
// Calico's words (its field names and values, its reasons where it has the rule), a non-zero
// exit, and an unchanged etcd revision (nothing written, not even the documents before the bad
// one).
func TestBadInputWritesNothing(t *testing.T) {
	h := newHarness(t)
	h.ok("", "apply", "-f", etcdtest.FixturePath("calicoctl-corpus.yaml"))
	tests := []struct {
		name  string
		args  []string
		input string
		want  string
	}{{
		name: "field validation",
		input: goodNetSet + `---
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool-ok}
spec: {cidr: 10.90.0.0/16}
---
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool-x}
spec: {cidr: 10.0.0/8}
`,
		// Nothing is written when a document is refused: Project Calico would write the others.
		want: `failed to apply any resources: [error with field IPPool.Spec.CIDR = '10.0.0/8' (IPPool CIDR must be a valid subnet)]` + "\n",
	}, {
		name: "every problem of every document is reported",
		input: `apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool-a}
spec: {cidr: 10.91.0.0/16, blockSize: 12, vxlanMode: Sometimes}
---
apiVersion: projectcalico.org/v3
kind: HostEndpoint
metadata: {name: hep-b}
spec: {interfaceName: eth0}
`,
		want: `failed to apply any resources: [error with the following fields:
-  spec.blockSize (block size 12 must be between 20 and 32 for an IPv4 pool)
-  spec.vxlanMode (unsupported value "Sometimes": supported values: "Never", "Always", "CrossSubnet")
 error with field spec.node (node is required)]
`,
	}, {
		name: "selector",
		input: `apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: bad-sel}
spec: {selector: "role == ", ingress: [{action: Allow}]}
`,
		want: "failed to apply 'GlobalNetworkPolicy' resource: [error with field Selector = 'role == ' (invalid selector \"role == \": " + selectorError(t, "role == ") + ")]\n",
	}, {
		name: "pool overlaps a stored enabled pool",
		input: `apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool-y}
spec: {cidr: 10.65.128.0/18}
`,
		want: `failed to apply 'IPPool' resource: [error with field IPPool.Spec.CIDR = '10.65.128.0/18' (IPPool(pool-y) CIDR overlaps with IPPool(pool-v4) CIDR 10.65.0.0/16)]` + "\n",
	}, {
		name: "pools of the input overlap each other",
		input: `apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool-p}
spec: {cidr: 10.80.0.0/16}
---
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool-q}
spec: {cidr: 10.80.1.0/24, blockSize: 26}
`,
		want: `failed to apply any 'IPPool' resources: [error with field IPPool.Spec.CIDR = '10.80.0.0/16' (IPPool(pool-p) CIDR overlaps with IPPool(pool-q) CIDR 10.80.1.0/24)` +
			` error with field IPPool.Spec.CIDR = '10.80.1.0/24' (IPPool(pool-q) CIDR overlaps with IPPool(pool-p) CIDR 10.80.0.0/16)]` + "\n",
	}, {
		name: "re-enabling a disabled pool that overlaps",
		input: `apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool-disabled}
spec: {cidr: 10.66.0.0/24, blockSize: 28}
---
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool-r}
spec: {cidr: 10.66.0.0/16}
`,
		want: `failed to apply any 'IPPool' resources: [error with field IPPool.Spec.CIDR = '10.66.0.0/24' (IPPool(pool-disabled) CIDR overlaps with IPPool(pool-r) CIDR 10.66.0.0/16)` +
			` error with field IPPool.Spec.CIDR = '10.66.0.0/16' (IPPool(pool-r) CIDR overlaps with IPPool(pool-disabled) CIDR 10.66.0.0/24)]` + "\n",
	}, {
		name: "pool CIDR and block size are immutable",
		input: `apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool-v4}
spec: {cidr: 10.67.0.0/16, blockSize: 28}
`,
		want: `failed to apply 'IPPool' resource: [error with the following fields:
-  IPPool.Spec.CIDR = '10.67.0.0/16' (IPPool CIDR cannot be modified)
-  IPPool.Spec.BlockSize = '28' (IPPool BlockSize cannot be modified)
]
`,
	}, {
		name: "missing tier",
		input: `apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: ghost.p}
spec: {tier: ghost, selector: all(), ingress: [{action: Allow}]}
`,
		want: `failed to apply 'GlobalNetworkPolicy' resource: [resource does not exist: Tier(ghost) with error: <nil>]` + "\n",
	}, {
		name: "namespace on a cluster-wide kind",
		input: `apiVersion: projectcalico.org/v3
kind: GlobalNetworkSet
metadata: {name: gs, namespace: openstack}
spec: {nets: [192.0.2.0/24]}
`,
		want: `failed to apply 'GlobalNetworkSet' resource: [namespace should not be specified for a non-namespaced resource. GlobalNetworkSet is not a namespaced resource]` + "\n",
	}, {
		name: "namespace differs from -n",
		args: []string{"-n", "openstack"},
		input: `apiVersion: projectcalico.org/v3
kind: NetworkSet
metadata: {name: ns1, namespace: other}
spec: {nets: [192.0.2.0/24]}
`,
		want: `failed to apply 'NetworkSet' resource: [resource namespace does not match client namespace. other != openstack]` + "\n",
	}, {
		name:  "-n with a cluster-wide kind",
		args:  []string{"-n", "openstack"},
		input: goodNetSet,
		want:  `failed to apply 'GlobalNetworkSet' resource: [GlobalNetworkSet is not namespaced]` + "\n",
	}, {
		name:  "ClusterInformation is read-only",
		input: "apiVersion: projectcalico.org/v3\nkind: ClusterInformation\nmetadata: {name: default}\nspec: {clusterType: x}\n",
		want:  `failed to apply 'ClusterInformation' resource: [operation apply is not supported on ClusterInformation: resource is readonly]` + "\n",
	}, {
		name: "BGP password secret name with a line break (BIRD configuration injection)",
		input: `apiVersion: projectcalico.org/v3
kind: BGPPeer
metadata: {name: tor}
spec:
  peerIP: 198.18.0.99
  asNumber: 64512
  password:
    secretKeyRef:
      name: "x\nprotocol bgp evil { local as 64512; neighbor 198.18.0.66 as 65066; ipv4 { import all; export all; }; } #"
      key: k
`,
		want: `failed to apply 'BGPPeer' resource: [error with field spec.password.secretKeyRef.name (invalid secret name "x\nprotocol bgp evil { local as 64512; neighbor 198.18.0.66 as 65066; ipv4 { import all; export all; }; } #": it must be a DNS-1123 subdomain)]` + "\n",
	}, {
		name: "BGP filter settings calico-host cannot enforce",
		input: `apiVersion: projectcalico.org/v3
kind: BGPFilter
metadata: {name: prio}
spec:
  exportV4:
  - {action: Reject, priority: 512}
  - {action: Accept, cidr: 10.65.0.0/16, matchOperator: Equal, prefixLength: {max: 24}}
  importV4:
  - {action: Accept, operations: [{setPriority: {value: 1024}}]}
`,
		want: `failed to apply 'BGPFilter' resource: [error with field spec.exportV4[1].prefixLength (a prefix length range cannot be applied with matchOperator Equal (not supported by calico-host))]
`,
	}, {
		name:  "unknown kind",
		input: goodNetSet + "---\napiVersion: projectcalico.org/v3\nkind: Gadget\nmetadata: {name: g}\n",
		want:  "failed to execute command: unknown resource type (Gadget) and/or version (projectcalico.org/v3)\n",
	}, {
		name:  "wrong apiVersion",
		input: "apiVersion: projectcalico.org/v1\nkind: IPPool\nmetadata: {name: p}\nspec: {cidr: 10.92.0.0/16}\n",
		want:  "failed to execute command: unknown resource type (IPPool) and/or version (projectcalico.org/v1)\n",
	}, {
		name:  "unknown field",
		input: "apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: p}\nspec: {cidrr: 10.92.0.0/16}\n",
		want:  `field in document is not recognized or is in the wrong location: cidrr` + "\n",
	}, {
		name:  "wrong type",
		input: "apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: p}\nspec: {cidr: 10.92.0.0/16, blockSize: big}\n",
		want:  `failed to execute command: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal string into Go struct field IPPoolSpec.spec.blockSize of type int` + "\n",
	}, {
		name:  "invalid YAML",
		input: goodNetSet + "---\nkind: [unclosed\n",
		want:  "failed to execute command: error converting YAML to JSON: yaml: line 1: did not find expected ',' or ']'\n",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := h.revision()
			r := h.fail(tc.input, append([]string{"apply", "-f", "-"}, tc.args...)...)
			if r.stderr != tc.want {
				t.Errorf("stderr:\n%s\nwant:\n%s", r.stderr, tc.want)
			}
			if r.stdout != "" {
				t.Errorf("stdout = %q, want nothing", r.stdout)
			}
			if after := h.revision(); after != before {
				t.Errorf("etcd revision moved from %d to %d: something was written", before, after)
			}
		})
	}
}

// TestCreateRefusesResourceVersion: create, like Project Calico's, takes no resourceVersion.
func TestCreateRefusesResourceVersion(t *testing.T) {
	h := newHarness(t)
	before := h.revision()
	r := h.fail("apiVersion: projectcalico.org/v3\nkind: GlobalNetworkSet\nmetadata: {name: s, resourceVersion: \"12\"}\nspec: {}\n",
		"create", "-f", "-")
	want := `failed to create 'GlobalNetworkSet' resource: [error with field Metadata.ResourceVersion = '12' (field must not be set for a Create request)]` + "\n"
	if r.stderr != want || h.revision() != before {
		t.Errorf("stderr %q (want %q), revision %d -> %d", r.stderr, want, before, h.revision())
	}
}

// TestDisabledPoolMayOverlap: only enabled pools must not overlap.
func TestDisabledPoolMayOverlap(t *testing.T) {
	h := newHarness(t)
	h.ok("", "apply", "-f", etcdtest.FixturePath("calicoctl-corpus.yaml"))
	r := h.ok("apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: pool-z}\nspec: {cidr: 10.65.64.0/18, disabled: true}\n",
		"apply", "-f", "-")
	if r.stdout != "Successfully applied 1 'IPPool' resource(s)\n" {
		t.Errorf("stdout = %q", r.stdout)
	}
	if h.get("/calico/resources/v3/projectcalico.org/ippools/pool-z") == nil {
		t.Error("pool-z was not written")
	}
}

// TestPolicyMayUseTierOfSameInput: a tier created by the same input counts as existing.
func TestPolicyMayUseTierOfSameInput(t *testing.T) {
	h := newHarness(t)
	h.ok(`apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: blue.p}
spec: {tier: blue, selector: all(), ingress: [{action: Allow}]}
---
apiVersion: projectcalico.org/v3
kind: Tier
metadata: {name: blue}
spec: {order: 5}
`, "apply", "-f", "-")
	got := h.get("/calico/resources/v3/projectcalico.org/globalnetworkpolicies/blue.p")
	if got == nil || got["metadata"].(map[string]any)["labels"].(map[string]any)["projectcalico.org/tier"] != "blue" {
		t.Errorf("policy blue.p = %v", got)
	}
}

// TestPoolCIDRStoredCanonical: like Project Calico, the pool CIDR is stored in canonical form.
func TestPoolCIDRStoredCanonical(t *testing.T) {
	h := newHarness(t)
	h.ok(poolYAML("p6", "FD5C:0001:0002::/48"), "apply", "-f", "-")
	if got := specOf(h.get(poolKey + "p6"))["cidr"]; got != "fd5c:1:2::/48" {
		t.Errorf("stored cidr %v, want fd5c:1:2::/48", got)
	}
}

// TestProjectCalicoPeerAndPortRules: calicoctl refuses what Project Calico refuses and accepts
// what it accepts for BGP peers and policy ports.
func TestProjectCalicoPeerAndPortRules(t *testing.T) {
	h := newHarness(t)
	gnp := func(ports string) string {
		return "apiVersion: projectcalico.org/v3\nkind: GlobalNetworkPolicy\nmetadata: {name: p}\nspec: {ingress: [{action: Deny, protocol: UDP, source: {ports: " + ports + "}}]}\n"
	}
	tests := []struct {
		name, input string
		err         string // "" when accepted
	}{
		{"a peer with another node's address needs no asNumber", peerYAML("rr", "{node: host-a, peerIP: 198.18.0.2}"), ""},
		{"reachableBy without asNumber", peerYAML("tor", "{node: host-a, peerIP: 198.18.9.1, reachableBy: 198.18.0.254}"), ""},
		{"a peer with only node and ttlSecurity", peerYAML("gtsm", "{node: host-a, ttlSecurity: 1}"), ""},
		{"a node that is not a node name", peerYAML("bad", "{node: host a, peerIP: 198.18.0.2, asNumber: 64512}"),
			"failed to apply 'BGPPeer' resource: [error with field Node = 'host a' (invalid node name \"host a\")]"},
		{"port 0", gnp("[53, 0]"),
			"failed to apply 'GlobalNetworkPolicy' resource: [error with field Port = '0' (port range invalid, port number must be between 1 and 65535)]"},
		{"a range from 0", gnp("['0:1024']"),
			"failed to apply 'GlobalNetworkPolicy' resource: [error with field Port = '0' (port range invalid, port number must be between 1 and 65535)]"},
		{"ports 1 and 65535", gnp("[1, '2:65535']"), ""},
	}
	for _, tc := range tests {
		r := h.run(tc.input, "apply", "-f", "-")
		switch {
		case tc.err == "" && r.code != 0:
			t.Errorf("%s: refused: %s", tc.name, r.stderr)
		case tc.err != "" && r.stderr != tc.err+"\n":
			t.Errorf("%s: exit %d, stderr %q, want %q", tc.name, r.code, r.stderr, tc.err+"\n")
		}
	}
}
