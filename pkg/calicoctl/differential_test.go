package calicoctl

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	"sigs.k8s.io/yaml"

	"github.com/calico-host/calico-host/pkg/api"
)

// The differential corpus (testdata/differential/*.yaml) lists objects with the outcome Project
// Calico's calicoctl has on them in etcd mode, established from its code (libcalico-go's
// validator and clientv3 defaulting, its CRD schema defaults and rules, calicoctl's resource
// manager): accepted with the exact JSON stored, or rejected. It covers the cases of Project
// Calico's own calicoctl tests (calicoctl/tests/st/utils/data.py) and validator tests with
// objects of our own, and edge cases of every kind. Where calico-host deliberately differs (a
// fail-closed refusal of something it cannot enforce), the case says so ("ours" and "reason").
// TestDifferentialCorpus runs each case with our calicoctl against a real etcd.

type diffCase struct {
	Name   string            `json:"name"`
	Covers string            `json:"covers"`
	Setup  []json.RawMessage `json:"setup"`
	Op     string            `json:"op"` // create (default) or apply
	Object json.RawMessage   `json:"object"`
	Calico string            `json:"calico"` // accepted or rejected
	Key    string            `json:"key"`    // "<plural>/[<namespace>/]<name>" of the stored object
	Stored map[string]any    `json:"stored"` // metadata and spec as stored, without uid and creationTimestamp
	Error  string            `json:"error"`  // a part of our message for a rejected case
	Ours   string            `json:"ours"`   // our outcome, only where we deliberately differ
	Reason string            `json:"reason"` // why we differ
}

func (c *diffCase) want() string {
	if c.Ours != "" {
		return c.Ours
	}
	return c.Calico
}

func loadCorpus(t *testing.T) []*diffCase {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "differential", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	var all []*diffCase
	names := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var cases []*diffCase
		if err := yaml.UnmarshalStrict(data, &cases); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, c := range cases {
			checkCaseShape(t, f, c)
			if names[c.Name] {
				t.Fatalf("%s: duplicate case %s", f, c.Name)
			}
			names[c.Name] = true
		}
		all = append(all, cases...)
	}
	return all
}

func checkCaseShape(t *testing.T, file string, c *diffCase) {
	t.Helper()
	switch {
	case c.Name == "" || c.Covers == "" || len(c.Object) == 0:
		t.Fatalf("%s: case %q needs name, covers and object", file, c.Name)
	case c.Calico != "accepted" && c.Calico != "rejected":
		t.Fatalf("%s: %s: calico must be accepted or rejected", file, c.Name)
	case c.Ours != "" && (c.Ours == c.Calico || c.Reason == ""):
		t.Fatalf("%s: %s: ours differs from calico only with a reason", file, c.Name)
	case c.want() == "accepted" && (c.Key == "" || c.Stored == nil):
		t.Fatalf("%s: %s: an accepted case needs key and stored", file, c.Name)
	}
}

func TestDifferentialCorpus(t *testing.T) {
	cases := loadCorpus(t)
	h := newHarness(t)
	outcomes := map[string]int{}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			h.clear()
			for i, s := range c.Setup {
				if r := h.run(string(s), "apply", "-f", "-"); r.code != 0 {
					t.Fatalf("setup %d: %s%s", i, r.stdout, r.stderr)
				}
			}
			op := c.Op
			if op == "" {
				op = "create"
			}
			r := h.run(string(c.Object), op, "-f", "-")
			got := map[int]string{0: "accepted", 1: "rejected"}[r.code]
			outcomes[c.want()]++
			if got != c.want() {
				t.Fatalf("%s: %s, want %s (Project Calico: %s)\n%s%s", c.Covers, got, c.want(), c.Calico, r.stdout, r.stderr)
			}
			if got == "rejected" {
				if !strings.Contains(r.stderr, c.Error) {
					t.Errorf("error %q does not mention %q", r.stderr, c.Error)
				}
				if c.Error == "" && strings.Contains(r.stderr, "cannot decode") {
					t.Errorf("rejected as undecodable, not for the case's reason (a YAML scalar such as n or On read as a boolean?): %s", r.stderr)
				}
				return
			}
			h.checkStored(t, c)
		})
	}
	t.Logf("%d cases: %d accepted, %d rejected", len(cases), outcomes["accepted"], outcomes["rejected"])
}

// clear removes everything calicoctl wrote.
func (h *harness) clear() {
	h.t.Helper()
	if _, err := h.cli.Delete(context.Background(), "/calico/", clientv3.WithPrefix()); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) checkStored(t *testing.T, c *diffCase) {
	t.Helper()
	key := "/calico/resources/v3/projectcalico.org/" + c.Key
	got := h.get(key)
	if got == nil {
		t.Fatalf("%s not stored; keys: %v", key, h.keys())
	}
	checkUIDAndTimestamp(t, key, got)
	want := map[string]any{}
	for k, v := range c.Stored {
		want[k] = v
	}
	kind, _, _ := strings.Cut(c.Key, "/")
	if k, ok := api.KindByPlural(kind); ok {
		want["kind"], want["apiVersion"] = k.Kind, api.APIVersion
	}
	if d := diffJSON(normalJSON(t, want), dropMeta(got, "uid", "creationTimestamp")); d != "" {
		t.Errorf("%s: stored value differs from Project Calico's:\n%s", c.Covers, d)
	}
}

// normalJSON turns YAML-decoded values into what decoding the stored JSON gives.
func normalJSON(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return mustJSON(t, string(b))
}

func (h *harness) keys() []string {
	var out []string
	for k := range h.dump() {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
