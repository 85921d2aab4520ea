package ifaces

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/netnstest"
)

// createVeths creates n veth pairs (a<i>, b<i>), both ends up, in one `ip -batch`.
func createVeths(t testing.TB, ns *netnstest.NS, n int) {
	t.Helper()
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "link add a%d type veth peer name b%d\nlink set a%d up\nlink set b%d up\n", i, i, i, i)
	}
	f, err := os.CreateTemp(t.TempDir(), "batch")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(b.String()); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if out, err := exec.Command("ip", "-n", ns.Name, "-batch", f.Name()).CombinedOutput(); err != nil {
		t.Fatalf("ip -batch: %v\n%s", err, out)
	}
}

// waitAllUp reads updates until n interfaces besides lo are up.
func waitAllUp(t testing.TB, ch <-chan Update, n int) {
	t.Helper()
	up := map[string]bool{}
	deadline := time.After(60 * time.Second)
	for len(up) < n {
		select {
		case u := <-ch:
			if u.State != nil && u.Name != "lo" {
				if u.State.Up {
					up[u.Name] = true
				} else {
					delete(up, u.Name)
				}
			} else if u.State == nil && !u.InSync {
				delete(up, u.Name)
			}
		case <-deadline:
			t.Fatalf("only %d of %d interfaces reported up", len(up), n)
		}
	}
}

// TestNetnsMonitorBurst creates 1000 interfaces at once: the monitor reports every one up, from
// events or, if the socket overflowed, from the re-listing that follows.
func TestNetnsMonitorBurst(t *testing.T) {
	ns := netnstest.New(t, "ifaces")
	ch := startMonitor(t, openNetlink(t, ns), time.Hour)
	untilInSync(t, ch)
	start := time.Now()
	createVeths(t, ns, 500)
	waitAllUp(t, ch, 1000)
	t.Logf("1000 interfaces reported up %v after the batch started", time.Since(start))
}

// BenchmarkNetnsListInterfaces measures the periodic resync's listing of 1000 interfaces.
func BenchmarkNetnsListInterfaces(b *testing.B) {
	ns := netnstest.New(b, "ifaces")
	createVeths(b, ns, 500)
	h := openNetlink(b, ns)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		states, err := h.ListInterfaces(context.Background())
		if err != nil || len(states) != 1001 {
			b.Fatal(len(states), err)
		}
	}
}
