package startup

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestDetermineNodeName(t *testing.T) {
	dir := t.TempDir()
	withFile := filepath.Join(dir, "nodename")
	if err := os.WriteFile(withFile, []byte("from-file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")
	host := func(name string) func() (string, error) { return func() (string, error) { return name, nil } }
	cases := []struct {
		name, configured, file string
		env                    envMap
		hostname               func() (string, error)
		want                   string
		wantErr                bool
	}{
		{"configured wins", "host-z", withFile, envMap{"HOSTNAME": "h"}, host("os"), "host-z", false},
		{"file next", "", withFile, envMap{"HOSTNAME": "h"}, host("os"), "from-file", false},
		{"HOSTNAME lower-cased", "", missing, envMap{"HOSTNAME": " Host-B "}, host("os"), "host-b", false},
		{"OS hostname last", "", missing, envMap{}, host("Host-C.Example.Com"), "host-c.example.com", false},
		{"hostname error", "", missing, envMap{}, func() (string, error) { return "", errors.New("boom") }, "", true},
		{"invalid hostname", "", missing, envMap{}, host("bad_name"), "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DetermineNodeName(tc.configured, tc.file, tc.env.lookup, tc.hostname)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("got %q, %v; want %q (error %v)", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestWriteNodeName(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "nodename")
	if err := writeNodeName(path, "host-z"); err != nil {
		t.Fatal(err)
	}
	st1, _ := os.Stat(path)
	if err := writeNodeName(path, "host-z"); err != nil {
		t.Fatal(err)
	}
	st2, _ := os.Stat(path)
	if got, _ := os.ReadFile(path); string(got) != "host-z" {
		t.Errorf("file holds %q", got)
	}
	if !st1.ModTime().Equal(st2.ModTime()) || !os.SameFile(st1, st2) {
		t.Errorf("an unchanged name must not rewrite the file")
	}
}

// TestWriteNodeNameUsesAUniqueTempFile: the nodename file used to be written through the fixed
// name <path>.tmp: a symlink (or a second writer) there was written through. Now the temporary
// file has a unique name: the file behind the planted link is untouched, the nodename file is a
// regular file holding the name, and no temporary file is left behind.
func TestWriteNodeNameUsesAUniqueTempFile(t *testing.T) {
	dir := t.TempDir()
	path, victim := filepath.Join(dir, "nodename"), filepath.Join(dir, "datastore.toml")
	if err := os.WriteFile(victim, []byte("[etcd]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, path+".tmp"); err != nil {
		t.Fatal(err)
	}
	if err := writeNodeName(path, "host-z"); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(victim); string(got) != "[etcd]\n" {
		t.Errorf("the file behind %s.tmp was overwritten with %q", path, got)
	}
	if st, err := os.Lstat(path); err != nil || !st.Mode().IsRegular() || st.Mode().Perm() != 0o644 {
		t.Fatalf("nodename file: %v, %v", st, err)
	}
	if got, _ := os.ReadFile(path); string(got) != "host-z" {
		t.Errorf("nodename file holds %q", got)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 3 { // nodename, datastore.toml and the planted link
		t.Errorf("directory holds %d entries, want 3 (no temporary file left)", len(entries))
	}
}
