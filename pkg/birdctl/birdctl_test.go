package birdctl

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/calico-host/calico-host/pkg/birdctl/birdtest"
)

// fakeBIRD serves BIRD's control protocol on a unix socket: a greeting, then for each command
// line the scripted reply (raw lines, "\n"-terminated). It returns the socket path and the
// commands received.
func fakeBIRD(t *testing.T, replies map[string]string) (string, <-chan string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "bird.ctl")
	cmds := make(chan string, 16)
	table := birdtest.Replies(replies)
	birdtest.Serve(t, path, func(cmd string) string {
		cmds <- cmd
		return table(cmd)
	})
	return path, cmds
}

func TestConfigure(t *testing.T) {
	tests := []struct {
		name    string
		reply   string
		want    string
		wantErr string
	}{
		{"reconfigured", "0002-Reading configuration from /etc/bird.cfg\n0003 Reconfigured\n", "Reconfigured", ""},
		{"in progress", "0002-Reading configuration from x\n0004 Reconfiguration in progress\n", "Reconfiguration in progress", ""},
		{"parse error", "0002-Reading configuration from x\n8002 x:3:1 syntax error, unexpected GARBAGE\n", "",
			`BIRD rejected "configure": 8002 x:3:1 syntax error, unexpected GARBAGE`},
		{"shutting down", "0007 Shutdown in progress\n", "", `BIRD rejected "configure": 0007 Shutdown in progress`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path, cmds := fakeBIRD(t, map[string]string{"configure": tc.reply})
			got, err := Configure(context.Background(), path)
			if tc.wantErr != "" {
				var re *ReplyError
				if !errors.As(err, &re) || err.Error() != tc.wantErr {
					t.Fatalf("err = %v, want %s", err, tc.wantErr)
				}
			} else if err != nil || got != tc.want {
				t.Fatalf("Configure = %q, %v; want %q", got, err, tc.want)
			}
			if cmd := <-cmds; cmd != "configure" {
				t.Errorf("sent %q", cmd)
			}
		})
	}
}

func TestDialNotRunning(t *testing.T) {
	dir := t.TempDir()
	_, err := Dial(context.Background(), filepath.Join(dir, "absent.ctl"))
	if !errors.Is(err, ErrNotRunning) {
		t.Errorf("absent socket: err = %v, want ErrNotRunning", err)
	}
	// A stale socket file nobody listens on.
	stale := filepath.Join(dir, "stale.ctl")
	l, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	if _, err := Dial(context.Background(), stale); !errors.Is(err, ErrNotRunning) {
		t.Errorf("stale socket: err = %v, want ErrNotRunning", err)
	}
}

// showProtocolsAll is BIRD 2.0.12's answer to "show protocols all" on the control socket
// (abridged), with a long protocol name pushing the columns right and a two-word "since".
const showProtocolsAll = `2002-Name       Proto      Table      State  Since         Info
1002-device1    Device     ---        up     14:33:03.162  
1006-
1002-Mesh_198_18_0_2 BGP        ---        up     14:40:01.500  Established   
1006-  Description:    Connection to BGP peer
   BGP state:          Established
     Neighbor address: 198.18.0.2
     Neighbor AS:      64512
     Local AS:         64512
   Channel ipv4
     State:          UP
 
1002-Node_fd00_198_18__2_port_1179 BGP        ---        start  2026-11-28 23:59:59  Active        Socket: Connection refused
1006-  Description:    Connection to BGP peer
   BGP state:          Active
     Neighbor address: fd00:198:18::2
     Neighbor port:    1179
     Neighbor AS:      64512
     Last error:       Socket: Connection refused
 
0000 
`

func TestProtocols(t *testing.T) {
	path, _ := fakeBIRD(t, map[string]string{"show protocols all": showProtocolsAll})
	c, err := Dial(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Version != "BIRD 2.0.12" {
		t.Errorf("version %q", c.Version)
	}
	got, err := c.Protocols(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []Protocol{
		{Name: "device1", Proto: "Device", Table: "---", State: "up", Since: "14:33:03.162"},
		{Name: "Mesh_198_18_0_2", Proto: "BGP", Table: "---", State: "up", Since: "14:40:01.500", Info: "Established",
			NeighborAddress: "198.18.0.2", NeighborAS: "64512", BGPState: "Established"},
		{Name: "Node_fd00_198_18__2_port_1179", Proto: "BGP", Table: "---", State: "start", Since: "2026-11-28 23:59:59",
			Info: "Active Socket: Connection refused", NeighborAddress: "fd00:198:18::2", NeighborAS: "64512",
			BGPState: "Active", LastError: "Socket: Connection refused"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("protocols (-want +got):\n%s", diff)
	}
	// The connection stays usable for another command.
	if _, err := c.Command(context.Background(), "bogus"); err == nil {
		t.Error("a 9xxx reply is not an error")
	}
	if _, err := c.Command(context.Background(), "show status\nconfigure"); err == nil {
		t.Error("a command with a line break was sent")
	}
}

func TestParseLine(t *testing.T) {
	tests := []struct {
		raw        string
		prev       int
		want       Line
		final, ok_ bool
	}{
		{"0001 BIRD 2.0.12 ready.", 0, Line{1, "BIRD 2.0.12 ready."}, true, true},
		{"1002-x y", 0, Line{1002, "x y"}, false, true},
		{" continued", 1006, Line{1006, "continued"}, false, true},
		{"0000", 1006, Line{0, ""}, true, true},
		{"+0016 async", 0, Line{}, false, false},
	}
	for _, tc := range tests {
		l, final, ok := parseLine(tc.raw, tc.prev)
		if l != tc.want || final != tc.final || ok != tc.ok_ {
			t.Errorf("parseLine(%q) = %+v %v %v", tc.raw, l, final, ok)
		}
	}
}

// TestReplyControlCharacters: reply text comes partly from peers (a BGP shutdown message in
// "Last error"); control characters and invalid UTF-8 in it are escaped, so nothing reaching a
// terminal, a log or systemd's STATUS can carry terminal escapes or control characters.
func TestReplyControlCharacters(t *testing.T) {
	path, _ := fakeBIRD(t, map[string]string{"show protocols all": "2002-Name       Proto      Table      State  Since         Info\n" +
		"1002-Node_198_18_0_2 BGP        ---        start  10:11:12.345  Idle\n" +
		"1006-  BGP state:          Idle\n" +
		"    Last error:       Received: Administrative shutdown: \x1b[2J\x1b]0;pwn\x07\xff\r\n" +
		"0000 \n"})
	c, err := Dial(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	protos, err := c.Protocols(context.Background())
	if err != nil || len(protos) != 1 {
		t.Fatalf("Protocols = %+v, %v", protos, err)
	}
	if want := `Received: Administrative shutdown: \x1b[2J\x1b]0;pwn\a\xff`; protos[0].LastError != want {
		t.Errorf("LastError = %q, want %q", protos[0].LastError, want)
	}
}
