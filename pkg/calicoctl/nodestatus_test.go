package calicoctl

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/calico-host/calico-host/pkg/birdctl/birdtest"
)

// birdShowProtocolsAll is BIRD 2.0.12's control-socket answer to "show protocols all" (abridged)
// for a host with an IPv4 mesh peer, a node-specific IPv4 peer on port 1179, an IPv6 global
// peer that is down, and confd's non-BGP protocols.
const birdShowProtocolsAll = `2002-Name       Proto      Table      State  Since         Info
1002-device1    Device     ---        up     14:33:03.162  
1006-
1002-kernel4    Kernel     master4    up     14:33:03.162  
1006-  Channel ipv4
 
1002-Mesh_198_18_10_2 BGP        ---        up     14:40:01.500  Established   
1006-  Description:    Connection to BGP peer
   BGP state:          Established
     Neighbor address: 198.18.10.2
     Neighbor AS:      64512
 
1002-Node_198_18_10_254_port_1179 BGP        ---        up     2026-11-28 23:59:59  Established   
1006-  Description:    Connection to BGP peer
   BGP state:          Established
     Neighbor address: 198.18.10.254
     Neighbor port:    1179
     Neighbor AS:      65001
 
1002-Global_fd5c_ff__fe BGP        ---        start  14:33:03.162  Active        Socket: Connection refused
1006-  Description:    Connection to BGP peer
   BGP state:          Active
     Neighbor address: fd5c:ff::fe
     Neighbor AS:      65001
     Last error:       Socket: Connection refused
 
1002-other_bgp  BGP        ---        up     14:33:03.162  Established
0000 
`

// serveBIRD answers "show protocols all" on a unix socket like BIRD does.
func serveBIRD(t *testing.T, path string) {
	birdtest.Serve(t, path, birdtest.Replies(map[string]string{"show protocols all": birdShowProtocolsAll}))
}

// fakeFelix runs a process named calico-felix (a copy of sleep) until the test ends.
func fakeFelix(t *testing.T) {
	t.Helper()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	data, err := os.ReadFile(sleep)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "calico-felix")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
}

func runNodeStatus(t *testing.T, socket string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	env := func(k string) (string, bool) { return socket, k == "CALICOCTL_BIRD_SOCKET" }
	code := run(ctx, []string{"node", "status"}, strings.NewReader(""), &out, &errb, env)
	return code, out.String(), errb.String()
}

func TestNodeStatus(t *testing.T) {
	fakeFelix(t)
	sock := filepath.Join(t.TempDir(), "bird.ctl")
	serveBIRD(t, sock)
	code, out, errs := runNodeStatus(t, sock)
	want := `Calico process is running.

IPv4 BGP status
+---------------+-------------------+-------+---------------------+-------------+
| PEER ADDRESS  |     PEER TYPE     | STATE |        SINCE        |    INFO     |
+---------------+-------------------+-------+---------------------+-------------+
| 198.18.10.2   | node-to-node mesh | up    | 14:40:01            | Established |
| 198.18.10.254 | node specific     | up    | 2026-11-28 23:59:59 | Established |
+---------------+-------------------+-------+---------------------+-------------+

IPv6 BGP status
+--------------+-----------+-------+----------+-----------------------------------+
| PEER ADDRESS | PEER TYPE | STATE |  SINCE   |               INFO                |
+--------------+-----------+-------+----------+-----------------------------------+
| fd5c:ff::fe  | global    | start | 14:33:03 | Active Socket: Connection refused |
+--------------+-----------+-------+----------+-----------------------------------+

`
	if code != 0 || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}

	// No BIRD: said so, exit 0 (as Project Calico's calicoctl).
	code, out, _ = runNodeStatus(t, filepath.Join(t.TempDir(), "absent.ctl"))
	if code != 0 || out != "Calico process is running.\n\nThe BGP backend process (BIRD) is not running.\n\n" {
		t.Errorf("without BIRD: exit %d, output %q", code, out)
	}
}

func TestNodeStatusArgs(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"node", "status", "extra"}, strings.NewReader(""), &out, &errb, noEnv); code != 1 ||
		!strings.Contains(errb.String(), "Invalid option: 'calicoctl node status extra'") {
		t.Errorf("extra argument: exit %d, stderr %q", code, errb.String())
	}
	out.Reset()
	if code := run(context.Background(), []string{"node", "status", "--help"}, strings.NewReader(""), &out, &errb, noEnv); code != 0 ||
		!strings.HasPrefix(out.String(), "Usage:\n  calicoctl node status") {
		t.Errorf("--help: exit %d, stdout %q", code, out.String())
	}
}

func TestFelixRunning(t *testing.T) {
	tests := []struct {
		name    string
		cmdline string
		want    bool
	}{
		{"calico-felix", "/usr/bin/calico-felix\x00--config\x00/etc/calico/felix.toml\x00", true},
		{"calico-node -felix", "calico-node\x00-felix\x00", true},
		{"calico-node -confd", "/bin/calico-node\x00-confd\x00", false},
		{"something else", "/usr/sbin/bird\x00-f\x00", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			proc := t.TempDir()
			os.MkdirAll(filepath.Join(proc, "42"), 0o755)
			os.MkdirAll(filepath.Join(proc, "self"), 0o755)
			os.WriteFile(filepath.Join(proc, "42", "cmdline"), []byte(tc.cmdline), 0o644)
			if got := felixRunning(proc); got != tc.want {
				t.Errorf("felixRunning = %v, want %v", got, tc.want)
			}
		})
	}
}
