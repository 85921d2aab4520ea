package netnstest

import (
	"errors"
	"net"
	"runtime"
	"slices"
	"testing"

	"github.com/vishvananda/netns"
)

// TestDoAndIn: Go code run with Do and In sees the namespace's interfaces, In returns fn's
// error, and the thread is back in the test's namespace afterwards.
func TestDoAndIn(t *testing.T) {
	runtime.LockOSThread() // Do and In lock it again: the thread checked at the end is theirs
	defer runtime.UnlockOSThread()
	ns := New(t, "kit")
	Link(t, ns, New(t, "peer"), "kit0", []string{"198.18.0.1/24"}, nil)
	names := func() []string {
		ifs, err := net.Interfaces()
		if err != nil {
			t.Error(err)
		}
		var out []string
		for _, i := range ifs {
			out = append(out, i.Name)
		}
		slices.Sort(out)
		return out
	}
	var inside []string
	ns.Do(t, func() { inside = names() })
	if !slices.Equal(inside, []string{"kit0", "lo"}) {
		t.Errorf("interfaces seen by Do: %v, want kit0 and lo", inside)
	}
	want := errors.New("from fn")
	if err := ns.In(func() error { inside = names(); return want }); err != want {
		t.Errorf("In returned %v, want fn's error", err)
	}
	if !slices.Equal(inside, []string{"kit0", "lo"}) {
		t.Errorf("interfaces seen by In: %v, want kit0 and lo", inside)
	}
	own, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	if kit := netns.NsHandle(ns.FD); own.Equal(kit) {
		t.Error("the thread stayed in the kit's namespace")
	}
}
