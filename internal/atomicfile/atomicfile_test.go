package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "nodename")
	for _, content := range []string{"host-a", "host-b-longer", "h"} {
		if err := Write(path, []byte(content), 0o640); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != content {
			t.Fatalf("content %q, %v; want %q", got, err, content)
		}
		if st, _ := os.Stat(path); st.Mode().Perm() != 0o640 {
			t.Errorf("mode %v, want 0640", st.Mode().Perm())
		}
	}
	assertOnly(t, dir, "nodename")
}

// TestWriteNeverFollowsAPlantedTempName: a symlink at the old fixed temporary name
// (<path>.tmp) is neither written through nor used.
func TestWriteNeverFollowsAPlantedTempName(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "nodename")
	if err := os.Symlink(victim, path+".tmp"); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("host-a"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(victim); string(got) != "keep" {
		t.Errorf("the file behind the symlink was overwritten: %q", got)
	}
	if st, err := os.Lstat(path); err != nil || !st.Mode().IsRegular() {
		t.Errorf("path is not a regular file: %v %v", st, err)
	}
}

// TestConcurrentWriters: writers of the same file never share a temporary file: every write
// succeeds and the result is one of the contents, whole.
func TestConcurrentWriters(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	contents := map[string]bool{}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		c := fmt.Sprintf("writer-%02d-%s", i, strings.Repeat("x", 4096))
		contents[c] = true
		wg.Go(func() { errs <- Write(path, []byte(c), 0o644) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	got, _ := os.ReadFile(path)
	if !contents[string(got)] {
		t.Errorf("the file holds a mix or nothing: %d bytes", len(got))
	}
	assertOnly(t, dir, "f")
}

func TestWriteErrorLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "d")
	if err := os.Mkdir(path, 0o755); err != nil { // a directory cannot be replaced by a file
		t.Fatal(err)
	}
	if err := Write(path, []byte("x"), 0o644); err == nil {
		t.Fatal("replacing a directory succeeded")
	}
	assertOnly(t, dir, "d")
	if err := Write(filepath.Join(dir, "missing", "f"), []byte("x"), 0o644); err == nil {
		t.Error("writing into a missing directory succeeded")
	}
}

// assertOnly checks that dir holds exactly the named entries (no temporary files are left).
func assertOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if strings.Join(got, ",") != strings.Join(names, ",") {
		t.Errorf("directory holds %v, want %v", got, names)
	}
}
