package calicoctl

import (
	"strings"
	"testing"
)

const stagedPrefix = "/calico/resources/v3/projectcalico.org/"

// TestStagedPoliciesWrittenByCalico: staged policies as Project Calico's calicoctl stores them
// are listed, shown and re-applied by ours, and ordinary listings are not disturbed.
func TestStagedPoliciesWrittenByCalico(t *testing.T) {
	h := newHarness(t)
	h.put(stagedPrefix+"stagednetworkpolicies/default/default.staged", `{"kind":"StagedNetworkPolicy","apiVersion":"projectcalico.org/v3","metadata":{"name":"default.staged","namespace":"default","uid":"2c2a3a8e-5b1d-4a55-8f0e-5a7c8f1b0d11","creationTimestamp":"2024-05-01T10:00:00Z","labels":{"projectcalico.org/tier":"default"},"annotations":{"projectcalico.org/metadata":"{\"name\":\"default.staged\"}"}},"spec":{"stagedAction":"Set","tier":"default","order":10,"selector":"all()","types":["Ingress"]}}`)
	h.put(stagedPrefix+"stagedglobalnetworkpolicies/default.gstaged", `{"kind":"StagedGlobalNetworkPolicy","apiVersion":"projectcalico.org/v3","metadata":{"name":"default.gstaged","uid":"1b1a3a8e-5b1d-4a55-8f0e-5a7c8f1b0d11","creationTimestamp":"2024-05-01T10:00:00Z","labels":{"projectcalico.org/tier":"default"},"annotations":{"projectcalico.org/metadata":"{\"name\":\"default.gstaged\"}"}},"spec":{"stagedAction":"Delete","tier":"default"}}`)
	h.put(stagedPrefix+"stagedkubernetesnetworkpolicies/default/knp", `{"kind":"StagedKubernetesNetworkPolicy","apiVersion":"projectcalico.org/v3","metadata":{"name":"knp","namespace":"default","uid":"3b1a3a8e-5b1d-4a55-8f0e-5a7c8f1b0d11","creationTimestamp":"2024-05-01T10:00:00Z"},"spec":{"stagedAction":"Set","podSelector":{"matchLabels":{"role":"db"}},"policyTypes":["Ingress"]}}`)
	h.ok("apiVersion: projectcalico.org/v3\nkind: NetworkPolicy\nmetadata: {name: real, namespace: default}\nspec: {selector: all()}\n", "apply", "-f", "-")

	if r := h.ok("", "get", "networkpolicies", "-A", "-o", "name"); r.stdout != "networkpolicy/default/real\n" || r.stderr != "" {
		t.Errorf("get networkpolicies: %q %q", r.stdout, r.stderr)
	}
	if r := h.ok("", "get", "snp", "-A", "-o", "wide"); !strings.Contains(r.stdout, "default.staged") || !strings.Contains(r.stdout, "all()") {
		t.Errorf("get snp -o wide:\n%s", r.stdout)
	}
	r := h.ok("", "get", "sgnp", "default.gstaged", "-o", "json")
	if d := diffJSON(mustJSON(t, `{"kind":"StagedGlobalNetworkPolicy","apiVersion":"projectcalico.org/v3","metadata":{"name":"default.gstaged","uid":"1b1a3a8e-5b1d-4a55-8f0e-5a7c8f1b0d11","creationTimestamp":"2024-05-01T10:00:00Z","labels":{"projectcalico.org/tier":"default"}},"spec":{"stagedAction":"Delete","tier":"default"}}`),
		dropMeta(mustJSON(t, r.stdout), "resourceVersion")); d != "" {
		t.Errorf("get sgnp: %s", d)
	}
	r = h.ok("", "get", "sknp", "-n", "default", "-o", "wide")
	if want := "&LabelSelector{MatchLabels:map[string]string{role: db,},MatchExpressions:[]LabelSelectorRequirement{},}"; !strings.Contains(r.stdout, want) {
		t.Errorf("get sknp -o wide: %q, want the PODSELECTOR %s", r.stdout, want)
	}

	// Re-applying what get printed changes nothing but the revisions.
	before := h.dump()
	for _, args := range [][]string{{"stagednetworkpolicies", "-A"}, {"stagedglobalnetworkpolicies"}, {"stagedkubernetesnetworkpolicies", "-A"}} {
		out := h.ok("", append([]string{"get", "-o", "yaml"}, args...)...).stdout
		h.ok(out, "apply", "-f", "-")
	}
	after := h.dump()
	for key, b := range before {
		if d := diffJSON(b, after[key]); d != "" {
			t.Errorf("%s changed on re-apply:\n%s", key, d)
		}
	}
}

// TestStagedApplyWarns: writing a staged policy stores it and says on stderr that it is not
// enforced; ordinary policies carry no such warning.
func TestStagedApplyWarns(t *testing.T) {
	h := newHarness(t)
	r := h.ok("apiVersion: projectcalico.org/v3\nkind: StagedGlobalNetworkPolicy\nmetadata: {name: try-deny}\nspec: {selector: all(), ingress: [{action: Deny}]}\n", "apply", "-f", "-")
	if r.stdout != "Successfully applied 1 'StagedGlobalNetworkPolicy' resource(s)\n" {
		t.Errorf("stdout %q", r.stdout)
	}
	if !strings.Contains(r.stderr, "StagedGlobalNetworkPolicy(try-deny) is stored but not enforced") ||
		!strings.Contains(r.stderr, "policies.pending") {
		t.Errorf("no warning on stderr: %q", r.stderr)
	}
	if h.get(stagedPrefix+"stagedglobalnetworkpolicies/try-deny") == nil {
		t.Error("not stored under Project Calico's key")
	}
	r = h.ok("apiVersion: projectcalico.org/v3\nkind: GlobalNetworkPolicy\nmetadata: {name: real}\nspec: {selector: all()}\n", "apply", "-f", "-")
	if strings.Contains(r.stderr, "not enforced") {
		t.Errorf("warning for an ordinary policy: %q", r.stderr)
	}
	h.ok("", "delete", "sgnp", "try-deny")
	if h.get(stagedPrefix+"stagedglobalnetworkpolicies/try-deny") != nil {
		t.Error("delete left the key")
	}
}

// TestStagedKubernetesApplyWarns: a StagedKubernetesNetworkPolicy is stored under Project
// Calico's key with the staged policies' warning, and one saying whom it selects.
func TestStagedKubernetesApplyWarns(t *testing.T) {
	h := newHarness(t)
	r := h.ok("apiVersion: projectcalico.org/v3\nkind: StagedKubernetesNetworkPolicy\nmetadata: {name: db, namespace: prod}\n"+
		"spec: {podSelector: {matchLabels: {app: db}}, policyTypes: [Ingress], ingress: [{ports: [{port: 5432}]}]}\n", "apply", "-f", "-")
	if !strings.Contains(r.stderr, "StagedKubernetesNetworkPolicy(prod/db) is stored but not enforced") ||
		!strings.Contains(r.stderr, "calicoctl trace") || !strings.Contains(r.stderr, "orchestrator == 'k8s' only") {
		t.Errorf("warnings on stderr: %q", r.stderr)
	}
	if h.get(stagedPrefix+"stagedkubernetesnetworkpolicies/prod/db") == nil {
		t.Error("not stored under Project Calico's key")
	}
}
