package calicoctl

import (
	"strings"
	"testing"
)

// peerYAML is a BGPPeer document.
func peerYAML(name, spec string) string {
	return "apiVersion: projectcalico.org/v3\nkind: BGPPeer\nmetadata: {name: " + name + "}\nspec: " + spec + "\n"
}

// TestMessageFormats holds each message format of Project Calico's calicoctl that scripts parse
// (its crud_commands.go, get_command.go and libcalico-go's error types): the structure of
// results and errors, the field names and values of validation errors, decode errors and the
// flag parser's errors. Each case runs calicoctl against a real etcd, with setup applied first.
func TestMessageFormats(t *testing.T) {
	pools := poolYAML("m-a", "10.70.0.0/24") + "---\n" + poolYAML("m-b", "10.70.1.0/24") + "---\n" + poolYAML("m-c", "10.70.2.0/24")
	tests := []struct {
		name           string
		setup          string // applied first
		stdin          string
		args           []string
		offline        bool // without --config
		code           int
		stdout, stderr string
	}{{
		name:   "one resource refused: its errors in brackets",
		stdin:  peerYAML("tor-1", "{peerIP: 198.18.7.300, asNumber: 64600}"),
		args:   []string{"create", "-f", "-"},
		code:   1,
		stderr: "failed to create 'BGPPeer' resource: [error with field PeerIP = '198.18.7.300' (invalid peer IP \"198.18.7.300\")]\n",
	}, {
		name:   "every resource of one kind refused",
		stdin:  peerYAML("tor-1", "{peerIP: not-an-ip, asNumber: 64600}") + "---\n" + peerYAML("tor-2", "{node: rack 7, peerIP: 198.18.7.1}"),
		args:   []string{"apply", "-f", "-"},
		code:   1,
		stderr: "failed to apply any 'BGPPeer' resources: [error with field PeerIP = 'not-an-ip' (invalid peer IP \"not-an-ip\") error with field Node = 'rack 7' (invalid node name \"rack 7\")]\n",
	}, {
		name:   "resources of several kinds refused",
		stdin:  peerYAML("tor-1", "{peerIP: not-an-ip}") + "---\n" + poolYAML("m-x", "10.70.9.0/33"),
		args:   []string{"create", "-f", "-"},
		code:   1,
		stderr: "failed to create any resources: [error with field PeerIP = 'not-an-ip' (invalid peer IP \"not-an-ip\") error with field IPPool.Spec.CIDR = '10.70.9.0/33' (IPPool CIDR must be a valid subnet)]\n",
	}, {
		name:  "several failures of one resource",
		stdin: "apiVersion: projectcalico.org/v3\nkind: GlobalNetworkPolicy\nmetadata: {name: web}\nspec:\n  ingress:\n  - {action: Allow, protocol: TCP, destination: {ports: [0, 443]}}\n  - {action: Allow, protocol: ICMP, icmp: {type: 300}}\n",
		args:  []string{"create", "-f", "-"},
		code:  1,
		stderr: "failed to create 'GlobalNetworkPolicy' resource: [error with the following fields:\n" +
			"-  Type = '300' (ICMP type 300 must be between 0 and 254)\n" +
			"-  Port = '0' (port range invalid, port number must be between 1 and 65535)\n]\n",
	}, {
		name:   "a rule of Project Calico's schema: the field's path and the supported values",
		stdin:  "apiVersion: projectcalico.org/v3\nkind: GlobalNetworkPolicy\nmetadata: {name: web}\nspec: {egress: [{action: Permit}]}\n",
		args:   []string{"create", "-f", "-"},
		code:   1,
		stderr: "failed to create 'GlobalNetworkPolicy' resource: [error with field spec.egress[0].action (unsupported value \"Permit\": supported values: \"Allow\", \"Deny\", \"Log\", \"Pass\")]\n",
	}, {
		name:   "a rule of Project Calico's client, named as it names it",
		stdin:  poolYAML("m-x", "10.70.9.1/24"),
		args:   []string{"apply", "-f", "-"},
		code:   1,
		stderr: "failed to apply 'IPPool' resource: [error with field IPPool.Spec.CIDR = '10.70.9.0/24' (IPPool CIDR is not strictly masked)]\n",
	}, {
		name:   "success of one kind",
		stdin:  pools,
		args:   []string{"create", "-f", "-"},
		stdout: "Successfully created 3 'IPPool' resource(s)\n",
	}, {
		name:   "success of several kinds",
		stdin:  poolYAML("m-a", "10.70.0.0/24") + "---\n" + goodNetSet,
		args:   []string{"apply", "-f", "-"},
		stdout: "Successfully applied 2 resource(s)\n",
	}, {
		name:   "partial success: the datastore refused one",
		setup:  poolYAML("m-a", "10.70.0.0/24"),
		stdin:  pools,
		args:   []string{"create", "-f", "-"},
		code:   1,
		stdout: "Partial success: created the first 2 out of 3 'IPPool' resources:\n",
		stderr: "hit error: [resource already exists: IPPool(m-a) with error: <nil>]\n",
	}, {
		name:   "partial success is printed only when more succeeded than failed",
		setup:  poolYAML("m-a", "10.70.0.0/24"),
		stdin:  poolYAML("m-a", "10.70.0.0/24") + "---\n" + poolYAML("m-b", "10.70.1.0/24"),
		args:   []string{"create", "-f", "-"},
		code:   1,
		stderr: "hit error: [resource already exists: IPPool(m-a) with error: <nil>]\n",
	}, {
		name:   "replace counts the resource it failed to replace and reports the last error",
		stdin:  poolYAML("m-a", "10.70.0.0/24") + "---\n" + poolYAML("m-b", "10.70.1.0/24"),
		args:   []string{"replace", "-f", "-"},
		code:   1,
		stdout: "Partial success: replaced the first 2 out of 2 'IPPool' resources:\n",
		stderr: "hit error: resource does not exist: IPPool(m-b) with error: <nil>\n",
	}, {
		name:   "delete: what was deleted, then a line per failure",
		setup:  poolYAML("m-a", "10.70.0.0/24"),
		args:   []string{"delete", "ippool", "m-a", "m-z"},
		code:   1,
		stdout: "Successfully deleted 1 'IPPool' resource(s)\n",
		stderr: "Failed to delete 'IPPool' resource: resource does not exist: IPPool(m-z) with error: <nil>\n\n",
	}, {
		name:   "validate, partial",
		stdin:  poolYAML("m-a", "10.70.0.0/24") + "---\n" + poolYAML("m-b", "10.70.1.0/24") + "---\n" + peerYAML("tor-1", "{peerIP: not-an-ip}"),
		args:   []string{"validate", "-f", "-"},
		code:   1,
		stdout: "Partial success: validated the first 2 out of 3 resources:\n",
		stderr: "hit error: [error with field PeerIP = 'not-an-ip' (invalid peer IP \"not-an-ip\")]\n",
	}, {
		name:   "get: a problem before anything is read",
		args:   []string{"get", "gadgets"},
		code:   1,
		stderr: "failed to get resources: resource type 'gadgets' is not supported\n",
	}, {
		name:   "get: an empty name",
		args:   []string{"get", "ippool", "m-a", ""},
		code:   1,
		stderr: "failed to get resources: resource name may not be empty\n",
	}, {
		name:   "get: what was found, then a line per problem",
		setup:  poolYAML("m-a", "10.70.0.0/24"),
		args:   []string{"get", "ippool", "m-z", "m-y", "-o", "yaml"},
		code:   1,
		stdout: "null\n",
		stderr: "resource does not exist: IPPool(m-z) with error: <nil>\nresource does not exist: IPPool(m-y) with error: <nil>\n",
	}, {
		name:   "delete: an empty name",
		args:   []string{"delete", "ippool", ""},
		code:   1,
		stderr: "resource name may not be empty\n",
	}, {
		name:   "decode: a value of the wrong type",
		stdin:  peerYAML("tor-1", "{peerIP: 198.18.7.1, asNumber: 4294967296}"),
		args:   []string{"create", "-f", "-"},
		code:   1,
		stderr: "failed to execute command: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal number into Go struct field BGPPeerSpec.spec.asNumber of type string\n",
	}, {
		name:   "decode: a value Project Calico's types refuse",
		stdin:  "apiVersion: projectcalico.org/v3\nkind: GlobalNetworkPolicy\nmetadata: {name: web}\nspec: {ingress: [{action: Allow, protocol: TCP, destination: {ports: ['8443:443']}}]}\n",
		args:   []string{"apply", "-f", "-"},
		code:   1,
		stderr: "failed to execute command: error unmarshaling JSON: while decoding JSON: minimum port number (8443) is greater than maximum port number (443) in port range\n",
	}, {
		name:   "decode: an unknown field",
		stdin:  "apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: m-a}\nspec: {cidr: 10.70.0.0/24, natOutgoingg: true}\n",
		args:   []string{"create", "-f", "-"},
		code:   1,
		stderr: "field in document is not recognized or is in the wrong location: natOutgoingg\n",
	}, {
		name:   "decode: an unknown kind",
		stdin:  "apiVersion: projectcalico.org/v3\nkind: Gadget\nmetadata: {name: g}\n",
		args:   []string{"validate", "-f", "-"},
		code:   1,
		stderr: "failed to execute command: unknown resource type (Gadget) and/or version (projectcalico.org/v3)\n",
	}, {
		name:   "decode: no resources",
		stdin:  "# nothing\n",
		args:   []string{"apply", "-f", "-"},
		code:   1,
		stderr: "no resources specified in file -\n",
	}, {
		name:    "an unknown shorthand flag",
		args:    []string{"-q"},
		offline: true,
		code:    1,
		stderr:  "unknown shorthand flag: 'q' in -q\n",
	}, {
		name:   "an unknown flag",
		args:   []string{"get", "ippools", "--frob"},
		code:   1,
		stderr: "unknown flag: --frob\n",
	}, {
		name:    "a flag without its argument",
		args:    []string{"apply", "-f"},
		offline: true,
		code:    1,
		stderr:  "flag needs an argument: 'f' in -f\n",
	}, {
		name:    "an unknown command",
		args:    []string{"frob"},
		offline: true,
		code:    1,
		stderr:  "unknown command \"frob\" for \"calicoctl\"\n",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			if tc.setup != "" {
				h.ok(tc.setup, "apply", "-f", "-")
			}
			r := h.run(tc.stdin, tc.args...)
			if tc.offline {
				r = runOffline(t, tc.stdin, tc.args...)
			}
			if r.code != tc.code || r.stdout != tc.stdout || r.stderr != tc.stderr {
				t.Errorf("calicoctl %s\ngot  exit %d, stdout %q, stderr %q\nwant exit %d, stdout %q, stderr %q",
					strings.Join(tc.args, " "), r.code, r.stdout, r.stderr, tc.code, tc.stdout, tc.stderr)
			}
		})
	}
}
