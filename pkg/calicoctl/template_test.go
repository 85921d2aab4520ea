package calicoctl

import (
	"strings"
	"testing"
	"time"
)

// TestGoTemplateCalicoShape: templates written for Project Calico's calicoctl print the same
// with ours: the data is a list of the things got, a listing being the kind's list object.
func TestGoTemplateCalicoShape(t *testing.T) {
	h := newHarness(t)
	h.ok(poolYAML("p1", "10.65.0.0/24")+"---\n"+poolYAML("p2", "10.65.1.0/24"), "apply", "-f", "-")
	h.ok("apiVersion: projectcalico.org/v3\nkind: NetworkPolicy\nmetadata: {name: np1, namespace: ns1, labels: {b: '2', a: '1'}}\nspec: {selector: all(), order: 5}\n", "apply", "-f", "-")

	cases := []struct {
		args []string
		want string
	}{
		{[]string{"get", "ippools", "-o", "go-template={{range .}}{{range .Items}}{{.ObjectMeta.Name}} {{end}}{{end}}"}, "p1 p2 "},
		{[]string{"get", "ippools", "-o", "go-template={{range .}}{{.Kind}} {{.APIVersion}}{{range .Items}} {{.Name}}={{.Spec.CIDR}}/{{.Spec.BlockSize}}/{{.Spec.IPIPMode}}{{end}}{{end}}"},
			"IPPoolList projectcalico.org/v3 p1=10.65.0.0/24/26/Never p2=10.65.1.0/24/26/Never"},
		{[]string{"get", "ippool", "p2", "p1", "-o", "go-template={{range .}}{{.ObjectMeta.Name}},{{.TypeMeta.Kind}};{{end}}"}, "p2,IPPool;p1,IPPool;"},
		{[]string{"get", "networkpolicy", "np1", "-n", "ns1", "-o", `go-template={{range .}}{{.Namespace}}/{{.Name}} {{.Spec.Tier}} {{.Spec.Order}} {{join .Spec.Types ","}} {{join .Labels ";"}}{{end}}`},
			"ns1/np1 default 5 Ingress a=1;b=2;projectcalico.org/tier=default"},
		{[]string{"get", "ippools", "-o", `go-template={{range .}}{{range .Items}}{{joinAndTruncate .Spec.AllowedUses "," 10}} {{config "asnumber"}}{{"\n"}}{{end}}{{end}}`},
			"Workloa... 64512\nWorkloa... 64512\n"},
	}
	for _, c := range cases {
		if r := h.ok("", c.args...); r.stdout != c.want {
			t.Errorf("%v:\n got %q\nwant %q", c.args, r.stdout, c.want)
		}
	}

	// The listing's metadata is its revision; timestamps print as metav1.Time does.
	r := h.ok("", "get", "ippools", "-o", "go-template={{range .}}{{.ListMeta.ResourceVersion}}{{end}}")
	if r.stdout == "" || strings.Trim(r.stdout, "0123456789") != "" {
		t.Errorf("resourceVersion %q", r.stdout)
	}
	created := h.get(poolKey + "p1")["metadata"].(map[string]any)["creationTimestamp"].(string)
	ts, _ := time.Parse(time.RFC3339, created)
	r = h.ok("", "get", "ippool", "p1", "-o", "go-template={{range .}}{{.CreationTimestamp}}{{end}}")
	if want := ts.Local().String(); r.stdout != want {
		t.Errorf("creationTimestamp %q, want %q", r.stdout, want)
	}

	file := writeFile(t, "t.tmpl", "{{range .}}{{range .Items}}- {{.ObjectMeta.Name}}\n{{end}}{{end}}")
	if r := h.ok("", "get", "ippools", "-o", "go-template-file="+file); r.stdout != "- p1\n- p2\n" {
		t.Errorf("go-template-file: %q", r.stdout)
	}

	for _, c := range []struct{ output, err string }{
		{"go-template=", "need to specify a template"},
		{"go-template-file=", "need to specify a template file"},
		{"go-template={{range .}}{{.NoSuchField}}{{end}}", "can't evaluate field NoSuchField"},
		{`go-template={{config "other"}}`, "unhandled config type"},
		{"go-template={{range .}}{{range .Items}}name: {{.Name}}\n{{end}}{{end}}", "Invalid YAML Template"},
		{"go-template-file=/nonexistent/t.tmpl", "no such file"},
	} {
		r := h.fail("", "get", "ippools", "-o", c.output)
		if !strings.Contains(r.stderr, c.err) || r.stdout != "" {
			t.Errorf("-o %s: stdout %q stderr %q, want %q", c.output, r.stdout, r.stderr, c.err)
		}
	}
}
