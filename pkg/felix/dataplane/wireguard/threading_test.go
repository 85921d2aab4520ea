package wireguard

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// TestThreading: threaded NAPI is written to a kernel device's sysfs file once it has a peer
// ("1", and "0" when turned off), never for a userspace device or a device in another
// namespace, which are logged once instead.
func TestThreading(t *testing.T) {
	dir := t.TempDir()
	old := sysClassNet
	sysClassNet = dir
	defer func() { sysClassNet = old }()
	for _, n := range []string{"wg0", "wg1", "wg2"} {
		if err := os.MkdirAll(filepath.Join(dir, n), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, n, "threaded"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var logs strings.Builder
	m := &Manager{log: zerolog.New(&logs), threaded: map[string]string{},
		kinds: map[string]string{"wg0": kindKernel, "wg1": kindUser, "wg2": kindKernel}}
	read := func(n string) string {
		b, _ := os.ReadFile(filepath.Join(dir, n, "threaded"))
		return string(b)
	}
	peer := []Peer{{Node: "b"}}
	dev := func(name string, on bool, peers []Peer) *Device {
		return &Device{Family: Family{Name: name}, Threaded: on, Peers: peers}
	}
	steps := []struct {
		d    *Device
		ns   string
		file string
		want string
	}{
		{dev("wg0", true, nil), "", "wg0", ""},   // no peer yet: the kernel would refuse
		{dev("wg0", true, peer), "", "wg0", "1"}, // set
		{dev("wg0", false, peer), "", "wg0", "0"},
		{dev("wg1", true, peer), "", "wg1", ""}, // userspace
		{dev("wg1", true, peer), "", "wg1", ""},
		{dev("wg2", true, peer), "/run/netns/x", "wg2", ""}, // another namespace
	}
	for i, s := range steps {
		m.nsPath = s.ns
		if err := m.ensureThreading(s.d); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got := read(s.file); got != s.want {
			t.Errorf("step %d: %s/threaded = %q, want %q", i, s.file, got, s.want)
		}
	}
	if n := strings.Count(logs.String(), "does not apply to a userspace"); n != 1 {
		t.Errorf("userspace note logged %d times, want once:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "outside felix's own network namespace") {
		t.Errorf("no note for the device in another namespace:\n%s", logs.String())
	}
}
