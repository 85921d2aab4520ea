package ipip

import (
	"net/netip"
	"testing"

	"github.com/calico-host/calico-host/internal/logtest"
	"github.com/calico-host/calico-host/pkg/netnstest"
)

// TestNetnsTunnel runs the Tunnel against the real kernel in a fresh namespace. Where the kernel
// has no ipip driver (this one), the request is refused and mapped to StateNoDriver; the test
// says so in its log and checks that nothing named tunl0 was left behind. Where the kernel has
// the driver, it checks the device as the kernel reports it.
func TestNetnsTunnel(t *testing.T) {
	ns := netnstest.New(t, "ipip")
	h, err := OpenNetlink(ns.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	log, _ := logtest.Capture(t)
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
		out := ns.IP(t, "-d", "link", "show", "tunl0")
		t.Logf("kernel has the ipip driver:\n%s", out)
	default:
		t.Fatalf("state %v", st)
	}
}
