package selector

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fixtureDir holds the etcd contents written by Project Calico's own tools.
const fixtureDir = "../../test/fixtures"

// fixtureSelectors returns every distinct string stored under a JSON key ending in
// "selector" (selector, nodeSelector, namespaceSelector, peerSelector, ...) in the fixtures.
func fixtureSelectors(tb testing.TB) []string {
	files, err := filepath.Glob(filepath.Join(fixtureDir, "*.json"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("no fixtures in %s (err %v)", fixtureDir, err)
	}
	var out []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			tb.Fatalf("reading fixture: %v", err)
		}
		var doc any
		if err := json.Unmarshal(data, &doc); err != nil {
			tb.Fatalf("decoding fixture %s: %v", f, err)
		}
		out = collectSelectors(doc, "", out)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// collectSelectors walks a decoded JSON document.
func collectSelectors(v any, key string, out []string) []string {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			out = collectSelectors(x, k, out)
		}
	case []any:
		for _, x := range v {
			out = collectSelectors(x, key, out)
		}
	case string:
		if strings.HasSuffix(strings.ToLower(key), "selector") {
			out = append(out, v)
		}
	}
	return out
}

func TestFixtureSelectors(t *testing.T) {
	sels := fixtureSelectors(t)
	if len(sels) < 10 {
		t.Fatalf("found only %d selectors in the fixtures: %q", len(sels), sels)
	}
	for _, s := range sels {
		sel, err := Parse(s)
		if err != nil {
			t.Errorf("fixture selector %q: %v", s, err)
			continue
		}
		checkRoundTrip(t, sel)
		checkAgainstOracle(t, s)
	}
	for _, want := range []string{"global()", "all()", `role == 'web' && env in {'prod', 'staging'}`,
		"has(sg.projectcalico.org/openstack-3b2c1f0e)", "route-reflector == 'true'"} {
		if !slices.Contains(sels, want) {
			t.Errorf("fixtures no longer contain the selector %q", want)
		}
	}
}
