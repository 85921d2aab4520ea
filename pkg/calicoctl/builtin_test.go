package calicoctl

import (
	"strings"
	"testing"

	"github.com/calico-host/calico-host/pkg/api"
)

const builtinProfileKey = "/calico/resources/v3/projectcalico.org/profiles/projectcalico-default-allow"

// TestBuiltinProfileListed: with no profile in etcd, Project Calico's calicoctl lists its
// built-in projectcalico-default-allow profile; the YAML is the one its own tests expect.
func TestBuiltinProfileListed(t *testing.T) {
	h := newHarness(t)
	r := h.ok("", "get", "profiles", "-o", "yaml")
	want := "apiVersion: projectcalico.org/v3\n" +
		"items:\n" +
		"- apiVersion: projectcalico.org/v3\n" +
		"  kind: Profile\n" +
		"  metadata:\n" +
		"    name: projectcalico-default-allow\n" +
		"    resourceVersion: \"1\"\n" +
		"  spec:\n" +
		"    egress:\n" +
		"    - action: Allow\n" +
		"    ingress:\n" +
		"    - action: Allow\n" +
		"kind: ProfileList\n" +
		"metadata:\n" +
		"  resourceVersion: "
	if !strings.HasPrefix(r.stdout, want) {
		t.Errorf("get profiles -o yaml:\n%s\nwant it to start with:\n%s", r.stdout, want)
	}
	if got := h.ok("", "get", "profiles").stdout; got != "NAME                          \nprojectcalico-default-allow   \n\n" {
		t.Errorf("table:\n%q", got)
	}
	if h.get(builtinProfileKey) != nil {
		t.Error("the built-in profile was written to etcd")
	}
}

// TestBuiltinProfileAfterStored: a listing holds the stored profiles, then the built-in one; a
// Get by name returns it with resourceVersion 1.
func TestBuiltinProfileAfterStored(t *testing.T) {
	h := newHarness(t)
	h.ok("apiVersion: projectcalico.org/v3\nkind: Profile\nmetadata: {name: a-profile}\nspec: {}\n", "create", "-f", "-")
	list := mustJSON(t, h.ok("", "get", "profiles", "-o", "json").stdout).(map[string]any)
	items := list["items"].([]any)
	if len(items) != 2 {
		t.Fatalf("%d profiles listed, want 2", len(items))
	}
	names := []string{}
	for _, it := range items {
		names = append(names, it.(map[string]any)["metadata"].(map[string]any)["name"].(string))
	}
	if names[0] != "a-profile" || names[1] != api.DefaultAllowProfileName {
		t.Errorf("listed %v", names)
	}
	one := mustJSON(t, h.ok("", "get", "profile", api.DefaultAllowProfileName, "-o", "json").stdout)
	want := map[string]any{"apiVersion": "projectcalico.org/v3", "kind": "Profile",
		"metadata": map[string]any{"name": api.DefaultAllowProfileName, "resourceVersion": "1"},
		"spec":     map[string]any{"ingress": []any{map[string]any{"action": "Allow"}}, "egress": []any{map[string]any{"action": "Allow"}}}}
	if d := diffJSON(want, one); d != "" {
		t.Error(d)
	}
	if d := diffJSON(want, items[1]); d != "" {
		t.Errorf("listed: %s", d)
	}
}

// TestBuiltinProfileReadOnly: every write of the built-in profile is refused with Project Calico's
// errors, except create --skip-exists, which treats it as existing; nothing reaches etcd.
func TestBuiltinProfileReadOnly(t *testing.T) {
	h := newHarness(t)
	doc := "apiVersion: projectcalico.org/v3\nkind: Profile\nmetadata: {name: projectcalico-default-allow}\nspec: {ingress: [{action: Deny}]}\n"
	exists := `resource already exists: projectcalico-default-allow with error: projectcalico-default-allow already exists. The profile "projectcalico-default-allow" is default provided by Calico`
	update := `operation Update is not supported on projectcalico-default-allow: The profile "projectcalico-default-allow" is a default provided by Calico and cannot be updated`
	del := `operation Delete is not supported on projectcalico-default-allow: The profile "projectcalico-default-allow" is a default provided by Calico and cannot be deleted`
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"create", "-f", "-"}, "failed to create 'Profile' resource: [" + exists + "]"},
		{[]string{"apply", "-f", "-"}, "failed to apply 'Profile' resource: [" + update + "]"},
		{[]string{"replace", "-f", "-"}, "hit error: " + update},
		{[]string{"delete", "-f", "-"}, "Failed to delete 'Profile' resource: " + del},
		{[]string{"delete", "profile", api.DefaultAllowProfileName}, "Failed to delete 'Profile' resource: " + del},
		{[]string{"label", "profile", api.DefaultAllowProfileName, "a=b"}, "failed to update profile projectcalico-default-allow, label not changed: " + update},
		{[]string{"patch", "profile", api.DefaultAllowProfileName, "-p", `{"spec":{"egress":[]}}`}, "hit error: updating existing resource: " + update},
	} {
		r := h.fail(doc, tc.args...)
		if !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: stderr %q, want %q", tc.args, r.stderr, tc.want)
		}
	}
	if r := h.ok(doc, "create", "--skip-exists", "-f", "-"); r.stdout != "Successfully created 1 'Profile' resource(s)\n" {
		t.Errorf("create --skip-exists: %q", r.stdout)
	}
	if h.get(builtinProfileKey) != nil {
		t.Error("the built-in profile was written to etcd")
	}
}
