package goldmane

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/flowlog"
	"github.com/calico-host/calico-host/pkg/netnstest"
)

// TestRealGoldmane is run by hand against Project Calico's own Goldmane, built from its
// source: GOLDMANE is its daemon (what `calico component goldmane` runs: daemon.Run with
// the configuration from the environment), GOLDMANE_STREAM its goldmane/cmd/stream client.
// In a fresh network namespace whose /etc/hosts names 127.0.0.1 "goldmane" (ip netns exec
// mounts /etc/netns/NAME/hosts), Goldmane serves mutual TLS on goldmane:7443; a child
// process of this test (in the namespace) sends flows with our client; the stream client
// reads them back. Skips unless both are given.
//
//	GOLDMANE=/work/ext/flows/goldmane GOLDMANE_STREAM=/work/ext/flows/stream \
//	  go test -count=1 -v -run RealGoldmane ./pkg/flowlog/goldmane/
func TestRealGoldmane(t *testing.T) {
	daemon, stream := os.Getenv("GOLDMANE"), os.Getenv("GOLDMANE_STREAM")
	if daemon == "" || stream == "" {
		t.Skip("set GOLDMANE and GOLDMANE_STREAM to Project Calico's goldmane daemon and stream client")
	}
	ns := netnstest.New(t, "gm")
	hostsDir := filepath.Join("/etc/netns", ns.Name)
	if err := os.MkdirAll(hostsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(hostsDir) })
	if err := os.WriteFile(filepath.Join(hostsDir, "hosts"), []byte("127.0.0.1 localhost goldmane\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pki := newPKI(t, "goldmane")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var gmLog bytes.Buffer // one writer for both: exec writes from one goroutine
	gm := exec.CommandContext(ctx, "ip", "netns", "exec", ns.Name, daemon)
	gm.Env = append(os.Environ(), "PORT=7443", "HEALTH_PORT=18080", "LOG_LEVEL=info",
		"SERVER_CERT_PATH="+pki.serverCertFile, "SERVER_KEY_PATH="+pki.serverKeyFile, "CA_CERT_PATH="+pki.caFile)
	gm.Stdout, gm.Stderr = &gmLog, &gmLog
	if err := gm.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel()
		_ = gm.Wait()
		t.Logf("goldmane's log:\n%s", gmLog.String())
	}()

	sender := exec.CommandContext(ctx, "ip", "netns", "exec", ns.Name, os.Args[0], "-test.run=^TestSendToGoldmaneHelper$", "-test.v")
	sender.Env = append(os.Environ(), "GOLDMANE_HELPER=1", "GOLDMANE_CERT="+pki.certFile, "GOLDMANE_KEY="+pki.keyFile, "GOLDMANE_CA="+pki.caFile)
	if out, err := sender.CombinedOutput(); err != nil || !strings.Contains(string(out), "sent 2") {
		t.Fatalf("sender: %v\n%s", err, out)
	}

	// The stream client reads ./tls.crt, ./tls.key and ./ca.crt and dials goldmane:7443.
	dir := t.TempDir()
	for from, to := range map[string]string{pki.certFile: "tls.crt", pki.keyFile: "tls.key", pki.caFile: "ca.crt"} {
		b, _ := os.ReadFile(from)
		_ = os.WriteFile(filepath.Join(dir, to), b, 0o600)
	}
	sc := exec.CommandContext(ctx, "ip", "netns", "exec", ns.Name, stream, "-start=-600")
	sc.Dir = dir
	out, err := sc.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	sc.Stderr = io.Discard
	if err := sc.Start(); err != nil {
		t.Fatal(err)
	}
	seen := readStream(t, out, 90*time.Second, "calico-host-allowed-*", "calico-host-denied-*")
	for name, f := range seen {
		t.Logf("read back from Goldmane (%s):\n%s", name, f)
	}
}

// readStream decodes the stream client's indented JSON flows until it has seen a flow of
// each source name, or the time is up.
func readStream(t *testing.T, r io.Reader, within time.Duration, names ...string) map[string]string {
	t.Helper()
	found := map[string]string{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		dec := json.NewDecoder(bufio.NewReader(r))
		for len(found) < len(names) {
			var res struct {
				Flow struct {
					Key struct {
						SourceName string `json:"source_name"`
					} `json:"Key"`
				} `json:"flow"`
			}
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return
			}
			if json.Unmarshal(raw, &res) != nil {
				continue
			}
			for _, n := range names {
				if res.Flow.Key.SourceName == n {
					var pretty bytes.Buffer
					_ = json.Indent(&pretty, raw, "", "  ")
					found[n] = pretty.String()
				}
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(within):
	}
	for _, n := range names {
		if _, ok := found[n]; !ok {
			t.Errorf("Goldmane's stream never showed a flow from %s", n)
		}
	}
	return found
}

// TestSendToGoldmaneHelper is the sender of TestRealGoldmane, run as its child inside the
// namespace: it sends an allowed and a denied flow to goldmane:7443 and waits for both
// receipts.
func TestSendToGoldmaneHelper(t *testing.T) {
	if os.Getenv("GOLDMANE_HELPER") != "1" {
		t.Skip("run by TestRealGoldmane")
	}
	c := runClient(t, Config{Server: "goldmane:7443", CertFile: os.Getenv("GOLDMANE_CERT"),
		KeyFile: os.Getenv("GOLDMANE_KEY"), CAFile: os.Getenv("GOLDMANE_CA")})
	now := time.Now()
	allowed := testFlow("calico-host-allowed-*")
	allowed.Action = flowlog.Allow
	allowed.Policies.Enforced = []flowlog.PolicyHit{{Kind: flowlog.KindGlobalNetworkPolicy, Name: "allow-db",
		Tier: "default", Action: flowlog.Allow, RuleIndex: 0}}
	denied := testFlow("calico-host-denied-*")
	for _, f := range []*flowlog.Flow{&allowed, &denied} {
		f.StartTime, f.EndTime = now.Add(-20*time.Second), now
	}
	c.Push(allowed, denied)
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if sent, _ := c.Stats(); sent == 2 {
			fmt.Println("sent " + strconv.Itoa(int(sent)))
			return
		}
	}
	t.Fatal("Goldmane did not acknowledge the flows")
}
