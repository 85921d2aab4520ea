package nlhandle

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/calico-host/calico-host/pkg/netnstest"
)

func TestRetryDump(t *testing.T) {
	for _, tc := range []struct {
		interrupted int
		wantErr     bool
	}{{0, false}, {1, false}, {DumpAttempts - 1, false}, {DumpAttempts, true}} {
		calls := 0
		v, err := RetryDump(context.Background(), func() (int, error) {
			calls++
			if calls <= tc.interrupted {
				return -1, netlink.ErrDumpInterrupted
			}
			return 42, nil
		})
		if tc.wantErr != (err != nil) || (!tc.wantErr && v != 42) || calls != min(tc.interrupted+1, DumpAttempts) {
			t.Errorf("interrupted %d times: got %d, %v after %d calls", tc.interrupted, v, err, calls)
		}
	}
	other := errors.New("other")
	calls := 0
	if _, err := RetryDump(context.Background(), func() (int, error) { calls++; return 0, other }); !errors.Is(err, other) || calls != 1 {
		t.Errorf("other error: %v after %d calls, want it at once", err, calls)
	}
	cctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := RetryDump(cctx, func() (int, error) { return 0, netlink.ErrDumpInterrupted }); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// TestOpenInNamespace: a handle opened by path sees the namespace's interfaces, not the
// caller's.
func TestOpenInNamespace(t *testing.T) {
	n := netnstest.New(t, "nlhandle")
	n.IP(t, "link", "add", "nlh0", "type", "veth", "peer", "name", "nlh1")
	h, ns, err := OpenNS(n.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	defer ns.Close()
	links, err := RetryDump(context.Background(), h.LinkList)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range links {
		names = append(names, l.Attrs().Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"lo", "nlh0", "nlh1"}) {
		t.Errorf("links in the namespace: %v, want lo, nlh0, nlh1", names)
	}
	if _, err := Open("/nonexistent/netns"); err == nil {
		t.Error("Open of a missing namespace succeeded")
	}
}
