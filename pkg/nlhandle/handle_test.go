package nlhandle

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/calico-host/calico-host/pkg/netnstest"
)

// TestHandleLinkRequests: the shared requests act on the namespace's link by index, as `ip`
// sees it, and a missing link is nil without an error.
func TestHandleLinkRequests(t *testing.T) {
	ns := netnstest.New(t, "nlhandle")
	ns.IP(t, "link", "add", "nlh0", "type", "veth", "peer", "name", "nlh1")
	h, err := OpenHandle(ns.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if !h.NS().IsOpen() {
		t.Error("a Handle opened by path has no namespace handle")
	}
	if l, err := h.FindLink("missing0"); l != nil || err != nil {
		t.Errorf("FindLink of a missing link: %v, %v", l, err)
	}
	l, err := h.FindLink("nlh0")
	if err != nil || l == nil {
		t.Fatalf("FindLink(nlh0): %v, %v", l, err)
	}
	idx, p := l.Attrs().Index, netip.MustParsePrefix("198.18.0.1/24")
	must(t, h.SetMTU(idx, 1400), h.SetUp(idx), h.AddAddr(idx, p), h.AddAddr(idx, p)) // AddAddr replaces
	if out := ns.IP(t, "-o", "link", "show", "nlh0"); !strings.Contains(out, "mtu 1400") || !strings.Contains(out, ",UP") {
		t.Errorf("nlh0 after SetMTU and SetUp: %s", out)
	}
	if got, err := h.LinkAddrs(context.Background(), idx, netlink.FAMILY_V4); err != nil || !slices.Equal(got, []netip.Prefix{p}) {
		t.Errorf("LinkAddrs: %v, %v; want %v", got, err, p)
	}
	must(t, h.DelAddr(idx, p))
	if got, err := h.LinkAddrs(context.Background(), idx, netlink.FAMILY_V4); err != nil || len(got) != 0 {
		t.Errorf("LinkAddrs after DelAddr: %v, %v", got, err)
	}
	must(t, h.DeleteLink(idx))
	if l, err := h.FindLink("nlh0"); l != nil || err != nil {
		t.Errorf("FindLink after DeleteLink: %v, %v", l, err)
	}
}

func must(t *testing.T, errs ...error) {
	t.Helper()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}
