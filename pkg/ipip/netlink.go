package ipip

import (
	"context"
	"errors"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/calico-host/calico-host/pkg/nlhandle"
)

// Netlink is Handle over netlink: SetMTU, SetUp, AddAddr and DelAddr are nlhandle.Handle's.
type Netlink struct{ *nlhandle.Handle }

// NewNetlink wraps h; closing h stays with the caller.
func NewNetlink(h *netlink.Handle) *Netlink { return &Netlink{nlhandle.Wrap(h)} }

// OpenNetlink opens a netlink handle in the namespace at nsPath ("" = the current one). Close
// releases it.
func OpenNetlink(nsPath string) (*Netlink, error) {
	h, err := nlhandle.OpenHandle(nsPath)
	if err != nil {
		return nil, err
	}
	return &Netlink{h}, nil
}

// Link implements Handle.
func (n *Netlink) Link(name string) (*Link, error) {
	l, err := n.FindLink(name)
	if l == nil || err != nil {
		return nil, err
	}
	a := l.Attrs()
	return &Link{Index: a.Index, Kind: l.Type(), Up: a.Flags&net.FlagUp != 0, MTU: a.MTU}, nil
}

// AddIPIP implements Handle: RTM_NEWLINK with IFLA_INFO_KIND "ipip". A kernel without the
// driver answers EOPNOTSUPP ("Unknown device type"), mapped to ErrNoDriver.
func (n *Netlink) AddIPIP(name string, mtu int) error {
	attrs := netlink.NewLinkAttrs()
	attrs.Name, attrs.MTU = name, mtu
	err := n.LinkAdd(&netlink.Iptun{LinkAttrs: attrs})
	if errors.Is(err, unix.EOPNOTSUPP) {
		return ErrNoDriver
	}
	return err
}

// Addrs implements Handle.
func (n *Netlink) Addrs(ctx context.Context, index int) ([]netip.Prefix, error) {
	return n.LinkAddrs(ctx, index, netlink.FAMILY_V4)
}
