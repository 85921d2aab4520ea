package dataplane

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// checkGolden compares got with testdata/<name>.nft (rewriting it with -update).
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".nft")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run with -update to create): %v", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s: ruleset differs from the golden file (-want +got):\n%s", name, diff)
	}
}

func TestGoldenExample19(t *testing.T) {
	h := newHarness(t, Config{Hostname: "host1"})
	h.up("cali1a2b3c4d5e6")
	h.send(example19()...)
	checkGolden(t, "example19", h.fake.Dump())
}
