package calicoctl

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/calico-host/calico-host/pkg/datastore/etcdtest"
)

// TestTableColumns: the default and -o wide tables of every kind have Project Calico's columns
// (its resourcemgr's headings), in its order.
func TestTableColumns(t *testing.T) {
	h := newHarness(t)
	h.ok("", "apply", "-f", etcdtest.FixturePath("calicoctl-corpus.yaml"))
	h.ok(`apiVersion: projectcalico.org/v3
kind: IPReservation
metadata: {name: reserved}
spec: {reservedCIDRs: [10.65.0.0/28, 10.65.0.16/28, 10.65.0.32/28, 10.65.0.48/28, 10.65.0.64/28, 10.65.0.80/28, 10.65.0.96/28]}
---
apiVersion: projectcalico.org/v3
kind: BGPFilter
metadata: {name: f}
spec:
  exportV4: [{action: Accept, cidr: 10.65.0.0/16, matchOperator: In}]
  importV6: [{action: Reject, cidr: "fd5c::/16", matchOperator: In}, {action: Accept}]
---
apiVersion: projectcalico.org/v3
kind: StagedKubernetesNetworkPolicy
metadata: {name: db, namespace: web}
spec: {stagedAction: Set, podSelector: {matchLabels: {role: db}}, policyTypes: [Ingress]}
---
apiVersion: projectcalico.org/v3
kind: IPAMConfiguration
metadata: {name: default}
spec: {strictAffinity: false, autoAllocateBlocks: true}
---
apiVersion: projectcalico.org/v3
kind: KubeControllersConfiguration
metadata: {name: default}
spec: {controllers: {}}
`, "apply", "-f", "-")
	tests := []struct {
		kind         string
		normal, wide []string
	}{
		{"ippool", []string{"NAME", "CIDR", "SELECTOR"},
			[]string{"NAME", "CIDR", "NAT", "IPIPMODE", "VXLANMODE", "DISABLED", "DISABLEBGPEXPORT", "SELECTOR", "ASSIGNMENTMODE"}},
		{"ipreservation", []string{"NAME"}, []string{"NAME", "CIDRS"}},
		{"bgpfilter", []string{"NAME", "NUMEXPORTV4", "NUMIMPORTV4", "NUMEXPORTV6", "NUMIMPORTV6"},
			[]string{"NAME", "NUMEXPORTV4", "NUMIMPORTV4", "NUMEXPORTV6", "NUMIMPORTV6"}},
		{"bgppeer", []string{"NAME", "PEERIP", "NODE", "ASN"}, []string{"NAME", "PEERIP", "NODE", "ASN"}},
		{"bgpconfig", []string{"NAME", "LOGSEVERITY", "MESHENABLED", "ASNUMBER"}, []string{"NAME", "LOGSEVERITY", "MESHENABLED", "ASNUMBER"}},
		{"node", []string{"NAME"}, []string{"NAME", "ASN", "IPV4", "IPV6"}},
		{"hep", []string{"NAME", "NODE"}, []string{"NAME", "NODE", "INTERFACE", "IPS", "PROFILES"}},
		{"wep", []string{"NAMESPACE", "WORKLOAD", "NODE", "NETWORKS", "INTERFACE"},
			[]string{"NAMESPACE", "NAME", "WORKLOAD", "NODE", "NETWORKS", "INTERFACE", "PROFILES", "NATS"}},
		{"gnp", []string{"NAME", "TIER"}, []string{"NAME", "TIER", "ORDER", "SELECTOR"}},
		{"networkpolicy", []string{"NAMESPACE", "NAME", "TIER"}, []string{"NAMESPACE", "NAME", "TIER", "ORDER", "SELECTOR"}},
		{"sknp", []string{"NAMESPACE", "NAME"}, []string{"NAMESPACE", "NAME", "PODSELECTOR"}},
		{"globalnetworkset", []string{"NAME"}, []string{"NAME", "NETS"}},
		{"netsets", []string{"NAMESPACE", "NAME"}, []string{"NAMESPACE", "NAME", "NETS"}},
		{"profile", []string{"NAME"}, []string{"NAME", "LABELS"}},
		{"tier", []string{"NAME", "ORDER"}, []string{"NAME", "ORDER"}},
		{"ipamconfig", []string{"NAME", "STRICTAFFINITY", "AUTOALLOCATEBLOCKS"}, []string{"NAME", "STRICTAFFINITY", "AUTOALLOCATEBLOCKS", "MAXBLOCKSPERHOST"}},
		{"clusterinfo", []string{"NAME", "CLUSTERGUID", "CLUSTERTYPE", "CALICOVERSION", "DATASTOREREADY"},
			[]string{"NAME", "CLUSTERGUID", "CLUSTERTYPE", "CALICOVERSION", "DATASTOREREADY"}},
		{"felixconfig", []string{"NAME"}, []string{"NAME"}},
		{"kubecontrollersconfigs", []string{"NAME"}, []string{"NAME"}},
	}
	for _, tc := range tests {
		for _, c := range []struct {
			args []string
			want []string
		}{{[]string{"get", tc.kind, "-A"}, tc.normal}, {[]string{"get", tc.kind, "-A", "-o", "wide"}, tc.wide}} {
			if k, _ := lookupKind(tc.kind); !k.Namespaced {
				c.args = slices.DeleteFunc(c.args, func(a string) bool { return a == "-A" })
			}
			out := h.ok("", c.args...).stdout
			if got := strings.Fields(strings.SplitN(out, "\n", 2)[0]); !reflect.DeepEqual(got, c.want) {
				t.Errorf("%v: headings %q, want %q", c.args, got, c.want)
			}
		}
	}
	rows := map[string][]string{
		"ipreservation": {"reserved", "10.65.0.0/28,10.65.0.16/28,10.65.0.32/28,10.65.0.48/28,10.65.0.64/28,10.65.0...."},
		"bgpfilter":     {"f", "1", "0", "0", "2"},
	}
	for kind, want := range rows {
		out := h.ok("", "get", kind, "-o", "wide").stdout
		if !slices.ContainsFunc(strings.Split(out, "\n"), func(l string) bool { return reflect.DeepEqual(strings.Fields(l), want) }) {
			t.Errorf("get %s -o wide:\n%s\nwant the row %q", kind, out, want)
		}
	}
}

// TestPolicyMetadataAnnotationHidden: the projectcalico.org/metadata annotation that (staged)
// policies carry in etcd, as Project Calico stores them, is never shown: not in YAML, JSON or
// listings, and re-applying what get printed keeps it stored.
func TestPolicyMetadataAnnotationHidden(t *testing.T) {
	h := newHarness(t)
	h.ok(`apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: deny-ssh, annotations: {owner: net-team}}
spec: {selector: all(), ingress: [{action: Deny, protocol: TCP, destination: {ports: [22]}}]}
---
apiVersion: projectcalico.org/v3
kind: StagedNetworkPolicy
metadata: {name: trial, namespace: web}
spec: {stagedAction: Set, selector: all()}
`, "apply", "-f", "-")
	const gnpKey = "/calico/resources/v3/projectcalico.org/globalnetworkpolicies/deny-ssh"
	if a := metaOf(h.get(gnpKey))["annotations"].(map[string]any); a["projectcalico.org/metadata"] != `{"name":"deny-ssh"}` || a["owner"] != "net-team" {
		t.Fatalf("stored annotations %v", a)
	}
	for _, args := range [][]string{
		{"get", "gnp", "deny-ssh", "-o", "yaml"}, {"get", "gnp", "deny-ssh", "-o", "json"},
		{"get", "gnp", "-o", "yaml"}, {"get", "snp", "-A", "-o", "json"}, {"get", "snp", "trial", "-n", "web", "-o", "yaml"},
	} {
		out := h.ok("", args...).stdout
		if strings.Contains(out, "projectcalico.org/metadata") {
			t.Errorf("%v shows the metadata annotation:\n%s", args, out)
		}
		if args[1] == "gnp" && !strings.Contains(out, "net-team") {
			t.Errorf("%v lost the user's annotation:\n%s", args, out)
		}
	}
	h.ok(h.ok("", "get", "gnp", "deny-ssh", "-o", "yaml").stdout, "apply", "-f", "-")
	h.ok("", "label", "gnp", "deny-ssh", "team=blue")
	if a := metaOf(h.get(gnpKey))["annotations"].(map[string]any); a["projectcalico.org/metadata"] != `{"name":"deny-ssh"}` {
		t.Errorf("after apply and label, stored annotations %v", a)
	}
}
