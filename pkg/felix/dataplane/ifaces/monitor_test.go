package ifaces

import (
	"context"
	"net/netip"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/calico-host/calico-host/internal/logtest"
)

func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }

// startMonitor runs a Monitor over h until the test ends.
func startMonitor(t *testing.T, h Handle, resync time.Duration) <-chan Update {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan Update)
	done := make(chan struct{})
	go func() {
		defer close(done)
		NewMonitor(h, logtest.Logger(t), resync).Run(ctx, out)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return out
}

// brief renders an update compactly: "name up mtu addrs", "name gone" or "in-sync".
func brief(u Update) string {
	switch {
	case u.InSync:
		return "in-sync"
	case u.State == nil:
		return u.Name + " gone"
	}
	s := u.State
	line := s.Name
	if s.Up {
		line += " up"
	} else {
		line += " down"
	}
	line += " " + strconv.Itoa(s.MTU)
	for _, a := range s.Addrs {
		line += " " + a.String()
	}
	return line
}

// next returns the next n updates, failing after a timeout.
func next(t *testing.T, ch <-chan Update, n int) []string {
	t.Helper()
	var got []string
	for len(got) < n {
		select {
		case u := <-ch:
			got = append(got, brief(u))
		case <-time.After(10 * time.Second):
			t.Fatalf("timed out after %v", got)
		}
	}
	return got
}

// untilInSync returns the updates before the next InSync, sorted.
func untilInSync(t *testing.T, ch <-chan Update) []string {
	t.Helper()
	var got []string
	for {
		u := next(t, ch, 1)[0]
		if u == "in-sync" {
			sort.Strings(got)
			return got
		}
		got = append(got, u)
	}
}

func expectNone(t *testing.T, ch <-chan Update, d time.Duration) {
	t.Helper()
	select {
	case u := <-ch:
		t.Fatalf("unexpected update %s", brief(u))
	case <-time.After(d):
	}
}

func TestMonitorEvents(t *testing.T) {
	f := NewFake()
	f.AddLink("eth0", true, 1500)
	f.AddAddr("eth0", pfx("198.18.0.1/24"))
	f.AddLink("cali1", false, 1500)
	ch := startMonitor(t, f, 0)

	want := []string{"cali1 down 1500", "eth0 up 1500 198.18.0.1/24", "lo up 65536"}
	if d := cmp.Diff(want, untilInSync(t, ch)); d != "" {
		t.Fatalf("initial (-want +got):\n%s", d)
	}
	steps := []struct {
		do   func()
		want []string
	}{
		{func() { f.SetLink("cali1", true, 1500) }, []string{"cali1 up 1500"}},
		{func() { f.SetLink("cali1", true, 1500) }, nil}, // no change, no update
		{func() { f.AddAddr("cali1", pfx("fd5c::1/128")) }, []string{"cali1 up 1500 fd5c::1/128"}},
		{func() { f.AddAddr("cali1", pfx("10.65.0.1/32")) }, []string{"cali1 up 1500 10.65.0.1/32 fd5c::1/128"}},
		{func() { f.DelAddr("cali1", pfx("fd5c::1/128")) }, []string{"cali1 up 1500 10.65.0.1/32"}},
		{func() { f.SetLink("eth0", true, 9000) }, []string{"eth0 up 9000 198.18.0.1/24"}},
		{func() { f.Rename("cali1", "cali2") }, []string{"cali1 gone", "cali2 up 1500 10.65.0.1/32"}},
		{func() { f.DelLink("cali2") }, []string{"cali2 gone"}},
		{func() { f.AddLink("tap1", false, 1450) }, []string{"tap1 down 1450"}},
	}
	for i, s := range steps {
		s.do()
		if s.want == nil {
			continue
		}
		if d := cmp.Diff(s.want, next(t, ch, len(s.want))); d != "" {
			t.Fatalf("step %d (-want +got):\n%s", i, d)
		}
	}
	expectNone(t, ch, 50*time.Millisecond)
}

func TestMonitorAddressBeforeLink(t *testing.T) {
	f := NewFake()
	ch := startMonitor(t, f, 0)
	untilInSync(t, ch)
	// The address event overtakes its link's event (they come on different sockets).
	f.Notify(Event{Kind: AddrAdded, Index: 42, Addr: pfx("10.65.0.1/32")})
	f.Notify(Event{Kind: LinkChanged, Link: State{Name: "cali9", Index: 42, Up: true, MTU: 1500}})
	if d := cmp.Diff([]string{"cali9 up 1500 10.65.0.1/32"}, next(t, ch, 1)); d != "" {
		t.Fatalf("(-want +got):\n%s", d)
	}
}

func TestMonitorResyncRepairsLostEvents(t *testing.T) {
	f := NewFake()
	f.AddLink("eth0", true, 1500)
	f.AddLink("cali1", true, 1500)
	f.AddLink("cali2", true, 1500)
	ch := startMonitor(t, f, 100*time.Millisecond)
	untilInSync(t, ch)

	f.Quiet = true
	f.SetLink("cali1", false, 1500)
	f.DelLink("cali2")
	f.AddLink("cali3", true, 1400)
	f.AddAddr("eth0", pfx("198.18.0.1/24"))
	// Only the differences, then InSync; unchanged interfaces are not repeated.
	want := []string{"cali1 down 1500", "cali2 gone", "cali3 up 1400", "eth0 up 1500 198.18.0.1/24"}
	if d := cmp.Diff(want, untilInSync(t, ch)); d != "" {
		t.Fatalf("resync (-want +got):\n%s", d)
	}
	// The next resync finds nothing new.
	if d := cmp.Diff([]string(nil), untilInSync(t, ch)); d != "" {
		t.Fatalf("second resync (-want +got):\n%s", d)
	}
}

func TestMonitorResubscribes(t *testing.T) {
	f := NewFake()
	f.AddLink("eth0", true, 1500)
	ch := startMonitor(t, f, 0)
	untilInSync(t, ch)
	f.Quiet = true
	f.AddLink("cali1", true, 1500)
	f.Quiet = false
	f.BreakSubscription()
	if d := cmp.Diff([]string{"cali1 up 1500"}, untilInSync(t, ch)); d != "" {
		t.Fatalf("after resubscribing (-want +got):\n%s", d)
	}
	f.AddLink("cali2", true, 1500)
	if d := cmp.Diff([]string{"cali2 up 1500"}, next(t, ch, 1)); d != "" {
		t.Fatalf("events after resubscribing (-want +got):\n%s", d)
	}
	if f.Subscriptions != 2 {
		t.Errorf("subscriptions = %d", f.Subscriptions)
	}
}

func TestInterfacesRun(t *testing.T) {
	f := NewFake()
	f.AddLink("cali1", true, 1500)
	f.AddAddr("cali1", pfx("10.65.0.1/32"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := make(chan Update, 16)
	go NewInterfaces(f, NewFakeSysctl(), logtest.Logger(t), 0).Run(ctx, out)

	got := map[string]Update{}
	for u := range out {
		if u.InSync {
			break
		}
		got[u.Name] = u
	}
	want := Update{Name: "cali1", State: &State{Name: "cali1", Index: got["cali1"].State.Index, Up: true, MTU: 1500,
		Addrs: []netip.Prefix{pfx("10.65.0.1/32")}}}
	if d := cmp.Diff(want, got["cali1"], cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); d != "" {
		t.Fatalf("(-want +got):\n%s", d)
	}
	f.DelLink("cali1")
	if u := <-out; u.Name != "cali1" || u.State != nil || u.InSync {
		t.Fatalf("deletion: %+v", u)
	}
}
