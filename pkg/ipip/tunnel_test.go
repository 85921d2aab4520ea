package ipip

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/calico-host/calico-host/internal/logtest"
)

var ctx = context.Background()

func hostMTU(mtu int) func(context.Context) (int, error) {
	return func(context.Context) (int, error) { return mtu, nil }
}

func want(addr string, mtu int) *Device {
	return &Device{Addr: netip.MustParseAddr(addr), MTU: mtu}
}

func check(t *testing.T, f *Fake, want []string) {
	t.Helper()
	if d := cmp.Diff(want, f.Requests()); d != "" {
		t.Errorf("requests (-want +got):\n%s", d)
	}
}

// TestTunnelCreate: tunl0 is created as a link of kind ipip with the host MTU less 20, given the
// tunnel address as a /32 and set up, in that order; a second Apply sends nothing.
func TestTunnelCreate(t *testing.T) {
	f := NewFake()
	log, _ := logtest.Capture(t)
	tun := New(f, log, hostMTU(1500))
	st, err := tun.Apply(ctx, want("10.65.0.1", 0))
	if err != nil || st != StateReady {
		t.Fatalf("state %v err %v", st, err)
	}
	check(t, f, []string{
		"link add tunl0 type ipip mtu 1480",
		"addr add 10.65.0.1/32 dev tunl0",
		"link set tunl0 up",
	})
	if st, err := tun.Apply(ctx, want("10.65.0.1", 0)); err != nil || st != StateReady {
		t.Fatalf("state %v err %v", st, err)
	}
	check(t, f, nil)
	if got := f.Dump(); got != "tunl0 ipip mtu 1480 up [10.65.0.1/32]" {
		t.Errorf("device %q", got)
	}
}

// TestTunnelConverge: an existing tunl0 (the ipip module makes it down, MTU 1480, no address)
// gets IpInIpMtu, loses a stale address for the new one; a resync repairs drift; IPIP off
// removes the address and leaves the device.
func TestTunnelConverge(t *testing.T) {
	f := NewFake()
	f.AddLink("tunl0", "ipip", 1480, false, netip.MustParsePrefix("10.65.9.9/32"))
	log, _ := logtest.Capture(t)
	tun := New(f, log, hostMTU(9000))
	if st, err := tun.Apply(ctx, want("10.65.0.1", 1440)); err != nil || st != StateReady {
		t.Fatalf("state %v err %v", st, err)
	}
	check(t, f, []string{
		"link set tunl0 mtu 1440",
		"addr del 10.65.9.9/32 dev tunl0",
		"addr add 10.65.0.1/32 dev tunl0",
		"link set tunl0 up",
	})
	// Default MTU from a 9000 host MTU, and a new address.
	if _, err := tun.Apply(ctx, want("10.65.0.2", 0)); err != nil {
		t.Fatal(err)
	}
	check(t, f, []string{"link set tunl0 mtu 8980", "addr del 10.65.0.1/32 dev tunl0", "addr add 10.65.0.2/32 dev tunl0"})
	// Drift: someone removed the address; InterfaceChanged makes the next Apply look.
	_ = f.DelAddr(2, netip.MustParsePrefix("10.65.0.2/32"))
	f.Requests()
	tun.InterfaceChanged("eth0")
	if _, err := tun.Apply(ctx, want("10.65.0.2", 0)); err != nil {
		t.Fatal(err)
	}
	check(t, f, nil)
	tun.InterfaceChanged("tunl0")
	if _, err := tun.Apply(ctx, want("10.65.0.2", 0)); err != nil {
		t.Fatal(err)
	}
	check(t, f, []string{"addr add 10.65.0.2/32 dev tunl0"})
	if st, err := tun.Apply(ctx, nil); err != nil || st != StateOff {
		t.Fatalf("state %v err %v", st, err)
	}
	check(t, f, []string{"addr del 10.65.0.2/32 dev tunl0"})
	if got := f.Dump(); got != "tunl0 ipip mtu 8980 up []" {
		t.Errorf("device %q", got)
	}
}

// TestTunnelNoDriver: a kernel without the ipip driver gives StateNoDriver with no error, one
// error log line naming the consequence, no retry until a resync, and StateOff when IPIP goes off.
func TestTunnelNoDriver(t *testing.T) {
	f := NewFake()
	f.NoDriver = true
	log, logs := logtest.Capture(t)
	tun := New(f, log, hostMTU(1500))
	for range 3 {
		if st, err := tun.Apply(ctx, want("10.65.0.1", 0)); err != nil || st != StateNoDriver {
			t.Fatalf("state %v err %v", st, err)
		}
	}
	check(t, f, []string{"link add tunl0 type ipip mtu 1480"})
	if n := strings.Count(logs.String(), "routes of IPIP pools are not programmed"); n != 1 {
		t.Errorf("no-driver report logged %d times:\n%s", n, logs)
	}
	tun.RequestResync()
	if st, _ := tun.Apply(ctx, want("10.65.0.1", 0)); st != StateNoDriver {
		t.Fatalf("state %v", st)
	}
	check(t, f, []string{"link add tunl0 type ipip mtu 1480"})
	if n := strings.Count(logs.String(), "routes of IPIP pools are not programmed"); n != 1 {
		t.Errorf("no-driver report logged %d times after a resync", n)
	}
	if st, err := tun.Apply(ctx, nil); err != nil || st != StateOff {
		t.Fatalf("state %v err %v", st, err)
	}
	// The driver appears (module loaded): the next Apply creates the device.
	f.NoDriver = false
	if st, err := tun.Apply(ctx, want("10.65.0.1", 0)); err != nil || st != StateReady {
		t.Fatalf("state %v err %v", st, err)
	}
}

// TestTunnelRefusesForeignDevice: a tunl0 that is not an ipip link is not touched.
func TestTunnelRefusesForeignDevice(t *testing.T) {
	f := NewFake()
	f.AddLink("tunl0", "veth", 1500, true)
	log, _ := logtest.Capture(t)
	st, err := New(f, log, nil).Apply(ctx, want("10.65.0.1", 0))
	if err == nil || st != StateFailed {
		t.Fatalf("state %v err %v", st, err)
	}
	check(t, f, nil)
	if _, err := New(f, log, nil).Apply(ctx, &Device{Addr: netip.MustParseAddr("fd5c::1")}); err == nil {
		t.Errorf("an IPv6 tunnel address was accepted")
	}
	if errors.Is(err, ErrNoDriver) {
		t.Errorf("foreign device reported as a missing driver")
	}
}
