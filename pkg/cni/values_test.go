package cni

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containernetworking/cni/pkg/types"
)

func TestTypedValues(t *testing.T) {
	for _, s := range []string{"", ".", "..", "a/b", "eth0:1", "with space", "sixteen-chars-xx", "../../x"} {
		if _, err := ParseIfName("CNI_IFNAME", s); err == nil {
			t.Errorf("interface name %q accepted", s)
		}
	}
	for _, s := range []string{"eth0", "cali12345678901", "net1.100", "a_b-c"} {
		if _, err := ParseIfName("CNI_IFNAME", s); err != nil {
			t.Errorf("interface name %q: %v", s, err)
		}
	}
	for _, n := range []int{0, 575, 65536, -1} {
		if _, err := ParseMTU("mtu", n); err == nil {
			t.Errorf("MTU %d accepted", n)
		}
	}
	for _, s := range []string{"rel/path", "/a/../b", "/a//b", "/a/", "/a\x00b"} {
		if _, err := ParseFilePath("log_file_path", s); err == nil {
			t.Errorf("path %q accepted", s)
		}
	}
}

// TestNewWorkloadRefuses: each invalid identity part is refused with a CNI error naming its input.
func TestNewWorkloadRefuses(t *testing.T) {
	k8s := func(ns, pod string) *Args {
		a, err := ParseArgs("K8S_POD_NAMESPACE=" + ns + ";K8S_POD_NAME=" + pod)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	cases := []struct {
		name, node, id, ifName string
		args                   *Args
		testNS, naming         string
		code                   uint
	}{
		{"node", "Host_A", "abc", "eth0", &Args{}, "", "node name", types.ErrInvalidNetworkConfig},
		{"container ID", "host-a", "abc/def", "eth0", &Args{}, "", "CNI_CONTAINERID", types.ErrInvalidEnvironmentVariables},
		{"container ID too long", "host-a", strings.Repeat("a", 201), "eth0", k8s("ns", "p"), "", "CNI_CONTAINERID", types.ErrInvalidEnvironmentVariables},
		{"container ID edge dash", "host-a", "-abc", "eth0", &Args{}, "", "CNI_CONTAINERID", types.ErrInvalidEnvironmentVariables},
		{"interface", "host-a", "abc", "../x", &Args{}, "", "CNI_IFNAME", types.ErrInvalidEnvironmentVariables},
		{"namespace", "host-a", "abc", "eth0", k8s("a.b", "p"), "", "K8S_POD_NAMESPACE", types.ErrInvalidEnvironmentVariables},
		{"pod", "host-a", "abc", "eth0", k8s("ns", "p-"), "", "K8S_POD_NAME", types.ErrInvalidEnvironmentVariables},
		{"test namespace", "host-a", "abc", "eth0", &Args{}, "a/b", "CNI_TEST_NAMESPACE", types.ErrInvalidEnvironmentVariables},
	}
	for _, c := range cases {
		_, err := NewWorkload("net", c.node, c.id, c.ifName, c.args, c.testNS)
		var e *types.Error
		if !errors.As(err, &e) || e.Code != c.code || !strings.Contains(e.Msg, c.naming) {
			t.Errorf("%s: want code %d naming %s, got %v", c.name, c.code, c.naming, err)
		}
	}
	if w, err := NewWorkload("net", "host-a", "ABC-def", "eth0", k8s("ns", "p"), ""); err != nil || w.ContainerID != "ABC-def" {
		t.Errorf("an upper-case container ID is valid in Kubernetes mode (Project Calico's rule): %v", err)
	}
}

// TestConcurrentRotation: plugin invocations opening a full log at once rotate it exactly once.
func TestConcurrentRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cni.log")
	if err := os.WriteFile(path, make([]byte, 2048), 0o644); err != nil {
		t.Fatal(err)
	}
	r := rotation{maxBytes: 1024, maxAge: time.Hour, maxCount: 5}
	now := time.Now()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			f, err := openLogFile(FilePath(path), r, now)
			if err != nil {
				t.Error(err)
				return
			}
			f.WriteString("line\n")
			f.Close()
		})
	}
	wg.Wait()
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Fatalf("log directory %v: want cni.log and one rotated file", entries)
	}
	if data, _ := os.ReadFile(path); string(data) != strings.Repeat("line\n", 8) {
		t.Errorf("cni.log holds %q", data)
	}
}
