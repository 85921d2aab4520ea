package calicoctl

import (
	"testing"
)

// TestKubernetesPoliciesRefused: NetworkPolicies named knp.default.* are Kubernetes policies in
// Project Calico's etcd mode, and its calicoctl refuses to manage them: create and delete are not
// supported, apply and replace find nothing to update (or, when one is stored, are not supported
// either). Nothing is written or deleted; other names with the same prefix elsewhere are fine.
func TestKubernetesPoliciesRefused(t *testing.T) {
	h := newHarness(t)
	const doc = "apiVersion: projectcalico.org/v3\nkind: NetworkPolicy\nmetadata: {name: knp.default.web, namespace: shop}\nspec: {selector: all()}\n"
	const key = "/calico/resources/v3/projectcalico.org/networkpolicies/shop/knp.default.web"
	const reason = "kubernetes network policies must be managed through the kubernetes API"
	missing := "resource does not exist: NetworkPolicy(shop/knp.default.web) with error: <nil>"
	tests := []struct {
		name, stdin string
		args        []string
		stdout      string
		stderr      string
	}{
		{"create", doc, []string{"create", "-f", "-"}, "",
			"failed to create 'NetworkPolicy' resource: [operation create or apply is not supported on NetworkPolicy(shop/knp.default.web): " + reason + "]\n"},
		{"apply of a missing one", doc, []string{"apply", "-f", "-"}, "", "failed to apply 'NetworkPolicy' resource: [" + missing + "]\n"},
		{"replace of a missing one", doc, []string{"replace", "-f", "-"},
			"Partial success: replaced the first 1 out of 1 'NetworkPolicy' resources:\n", "hit error: " + missing + "\n"},
		{"delete by file", doc, []string{"delete", "-f", "-"}, "",
			"Failed to delete 'NetworkPolicy' resource: operation delete is not supported on NetworkPolicy(shop/knp.default.web): " + reason + "\n\n"},
		{"delete by name", "", []string{"delete", "networkpolicy", "knp.default.web", "-n", "shop"}, "",
			"Failed to delete 'NetworkPolicy' resource: operation delete is not supported on NetworkPolicy(shop/knp.default.web): " + reason + "\n\n"},
	}
	for _, tc := range tests {
		r := h.fail(tc.stdin, tc.args...)
		if r.stdout != tc.stdout || r.stderr != tc.stderr {
			t.Errorf("%s:\nstdout %q\nstderr %q\nwant   %q\n       %q", tc.name, r.stdout, r.stderr, tc.stdout, tc.stderr)
		}
	}
	if h.get(key) != nil {
		t.Fatal("a Kubernetes policy was written")
	}
	// One stored by Kubernetes' policy controller is neither updated nor deleted.
	stored := `{"kind":"NetworkPolicy","apiVersion":"projectcalico.org/v3","metadata":{"name":"knp.default.web","namespace":"shop"},"spec":{"tier":"default","selector":"all()"}}`
	h.put(key, stored)
	before := h.revision()
	for _, cmd := range []string{"apply", "replace", "delete"} {
		h.fail(doc, cmd, "-f", "-")
	}
	if r := h.fail(doc, "apply", "-f", "-"); r.stderr != "failed to apply 'NetworkPolicy' resource: [operation apply or replace is not supported on NetworkPolicy(shop/knp.default.web): "+reason+"]\n" {
		t.Errorf("apply of a stored one: %q", r.stderr)
	}
	if h.revision() != before {
		t.Error("a stored Kubernetes policy was changed")
	}
	h.ok("apiVersion: projectcalico.org/v3\nkind: GlobalNetworkPolicy\nmetadata: {name: knp.default}\nspec: {selector: all()}\n", "create", "-f", "-")
}
