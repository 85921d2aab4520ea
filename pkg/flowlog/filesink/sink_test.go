package filesink

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/flowlog"
)

func flows(from, n int) []flowlog.Flow {
	out := make([]flowlog.Flow, n)
	for i := range out {
		out[i] = flowlog.Flow{
			StartTime: time.Unix(0, 0).UTC(), EndTime: time.Unix(300, 0).UTC(),
			Key: flowlog.Key{SourceName: fmt.Sprintf("w-%04d", from+i), SourceNamespace: "-", SourceType: flowlog.HostEndpoint,
				DestName: "pvt", DestNamespace: "-", DestType: flowlog.Network, Proto: "tcp", DestPort: 22,
				Reporter: flowlog.Src, Action: flowlog.Allow,
				Policies: flowlog.Trace{Enforced: []flowlog.PolicyHit{}, Pending: []flowlog.PolicyHit{}}},
			SourceLabels: []string{}, DestLabels: []string{},
		}
	}
	return out
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var names []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var fl flowlog.Flow
		if err := json.Unmarshal(sc.Bytes(), &fl); err != nil {
			t.Fatalf("%s: line %q: %v", path, sc.Text(), err)
		}
		names = append(names, fl.SourceName)
	}
	return names
}

// Rotation by size keeps whole lines, the newest rotated file first, and at most MaxFiles
// rotated files; nothing is lost except what rotated out.
func TestRotation(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "flowlogs")
	one, _ := json.Marshal(flows(0, 1)[0])
	lineLen := int64(len(one) + 1)
	s, err := Open(Options{Dir: dir, MaxFileSize: 3 * lineLen, MaxFiles: 2})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i += 2 { // 10 lines, 2 per write: files of 3 lines
		if err := s.Write(flows(i, 2)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, f := range []string{"flows.log", "flows.log.1", "flows.log.2"} {
		got[f] = readLines(t, filepath.Join(dir, f))
	}
	want := map[string][]string{
		"flows.log.2": {"w-0003", "w-0004", "w-0005"},
		"flows.log.1": {"w-0006", "w-0007", "w-0008"},
		"flows.log":   {"w-0009"},
	}
	for f, w := range want {
		if !slices.Equal(got[f], w) {
			t.Errorf("%s: %v, want %v", f, got[f], w)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "flows.log.3")); !os.IsNotExist(err) {
		t.Errorf("flows.log.3 kept: %v", err)
	}
	for f := range want {
		if st, _ := os.Stat(filepath.Join(dir, f)); st.Size() > 3*lineLen {
			t.Errorf("%s has %d bytes", f, st.Size())
		}
	}
}

// Reopening appends to the existing file and counts its size.
func TestReopenAppends(t *testing.T) {
	dir := t.TempDir()
	for i := range 2 {
		s, err := Open(Options{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Write(flows(i, 1)); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	if got := readLines(t, filepath.Join(dir, FileName)); !slices.Equal(got, []string{"w-0000", "w-0001"}) {
		t.Errorf("lines %v", got)
	}
	if st, _ := os.Stat(filepath.Join(dir, FileName)); st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v", st.Mode())
	}
}

func TestOpenRefuses(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Options{Dir: file}); err == nil {
		t.Error("a file as directory accepted")
	}
	if _, err := Open(Options{Dir: t.TempDir(), MaxFiles: -1}); err == nil {
		t.Error("negative file count accepted")
	}
	s, _ := Open(Options{Dir: t.TempDir()})
	s.Close()
	if err := s.Write(flows(0, 1)); err == nil {
		t.Error("write after close accepted")
	}
}
