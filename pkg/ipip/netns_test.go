package ipip

import (
	"crypto/rand"
	"encoding/hex"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
)

func newNS(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs ip")
	}
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	name := "ipip-" + hex.EncodeToString(b)
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	return "/run/netns/" + name
}

// TestNetnsTunnel runs the Tunnel against the real kernel in a fresh namespace. Where the kernel
// has no ipip driver (this one), the request is refused and mapped to StateNoDriver; the test
// says so in its log and checks that nothing named tunl0 was left behind. Where the kernel has
// the driver, it checks the device as the kernel reports it.
func TestNetnsTunnel(t *testing.T) {
	ns := newNS(t)
	h, err := OpenNetlink(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	log, _ := testLog(t)
	tun := New(h, log, hostMTU(1500))
	st, err := tun.Apply(ctx, &Device{Addr: netip.MustParseAddr("10.65.0.1")})
	if err != nil {
		t.Fatal(err)
	}
	switch st {
	case StateNoDriver:
		t.Logf("KERNEL HAS NO IPIP DRIVER: link add tunl0 type ipip was refused (%v); checked the refusal is reported as %q", ErrNoDriver, st)
		if l, err := h.Link(DeviceName); err != nil || l != nil {
			t.Errorf("tunl0 after a refused create: %+v %v", l, err)
		}
	case StateReady:
		l, err := h.Link(DeviceName)
		if err != nil || l == nil || l.Kind != "ipip" || l.MTU != 1480 || !l.Up {
			t.Fatalf("tunl0: %+v %v", l, err)
		}
		addrs, err := h.Addrs(ctx, l.Index)
		if err != nil || len(addrs) != 1 || addrs[0] != netip.MustParsePrefix("10.65.0.1/32") {
			t.Errorf("tunl0 addresses %v %v", addrs, err)
		}
		out, _ := exec.Command("ip", "-n", strings.TrimPrefix(ns, "/run/netns/"), "-d", "link", "show", "tunl0").CombinedOutput()
		t.Logf("kernel has the ipip driver:\n%s", out)
	default:
		t.Fatalf("state %v", st)
	}
}
