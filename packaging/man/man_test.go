package main

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/man")

const manDir = "../../docs/man"

// TestManPagesAreCurrent builds the binaries, generates every page from their --help and the
// shipped commented TOML files, and compares the result with docs/man (go test -update rewrites
// it). A changed flag, parameter or default without regenerated pages fails here.
func TestManPagesAreCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every binary")
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+"/", "./cmd/...")
	build.Dir = "../.."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	pages, err := Generate(bin, "../..")
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.RemoveAll(manDir); err != nil {
			t.Fatal(err)
		}
		if err := write(manDir, pages); err != nil {
			t.Fatal(err)
		}
	}
	have, _ := filepath.Glob(filepath.Join(manDir, "*"))
	var names []string
	for _, h := range have {
		names = append(names, filepath.Base(h))
	}
	for name, want := range pages {
		got, err := os.ReadFile(filepath.Join(manDir, name))
		if err != nil || string(got) != want {
			t.Errorf("docs/man/%s is stale or missing: run go test ./packaging/man -update", name)
		}
		if !slices.Contains(names, name) {
			continue
		}
		names = slices.DeleteFunc(names, func(n string) bool { return n == name })
	}
	if len(names) > 0 {
		t.Errorf("docs/man has pages nothing generates: %v", names)
	}
	if len(pages) != len(binaries)+len(tomls) {
		t.Errorf("%d pages, want %d", len(pages), len(binaries)+len(tomls))
	}
}
