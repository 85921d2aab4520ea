// Package snapshot reads, for tests, pkg/compat/testdata/calico-settings.txt: the snapshot of
// Project Calico's settings that pkg/compat's tests keep up to date (go test ./pkg/compat
// -update). Each line is a kind and a setting: a felix parameter with its type and default, a
// FelixConfiguration field with the parameter it sets ("-" for none), or a resource's field.
package snapshot

import (
	"bufio"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// Setting is one line of the snapshot.
type Setting struct {
	Kind string // "Felix", "FelixConfiguration", "BGPPeer", ...
	Name string // a felix parameter's name; a resource field's JSON path ("spec.asNumber")
	// Felix parameters: the type and the default (unquoted).
	Type, Default string
	// FelixConfiguration fields: the felix parameter the field sets, "-" for none.
	Param string
}

// File is the snapshot's path.
func File() string {
	_, src, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(src), "..", "testdata", "calico-settings.txt")
}

// Read returns the snapshot's settings in order, and its header (the Project Calico commit it
// was taken from).
func Read(t testing.TB) ([]Setting, string) {
	t.Helper()
	f, err := os.Open(File())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []Setting
	var header string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if h, ok := strings.CutPrefix(line, "# "); ok {
			header = h
			continue
		}
		parts := strings.SplitN(line, " ", 4)
		s := Setting{Kind: parts[0], Name: parts[1]}
		switch {
		case s.Kind == "Felix" && len(parts) == 4:
			if s.Default, err = strconv.Unquote(parts[3]); err != nil {
				t.Fatalf("%s: %q: %v", File(), line, err)
			}
			s.Type = parts[2]
		case s.Kind == "FelixConfiguration" && len(parts) >= 3:
			s.Param = parts[2]
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out, header
}

// Fields are the names of the settings of one kind, in order: a resource's JSON paths.
func Fields(t testing.TB, kind string) []string {
	t.Helper()
	all, _ := Read(t)
	var out []string
	for _, s := range all {
		if s.Kind == kind {
			out = append(out, s.Name)
		}
	}
	return out
}
