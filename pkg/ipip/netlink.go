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

// Netlink is Handle over netlink.
type Netlink struct{ h *netlink.Handle }

// NewNetlink wraps h; closing h stays with the caller.
func NewNetlink(h *netlink.Handle) *Netlink { return &Netlink{h: h} }

// OpenNetlink opens a netlink handle in the namespace at nsPath ("" = the current one).
func OpenNetlink(nsPath string) (*Netlink, error) {
	h, err := nlhandle.Open(nsPath)
	if err != nil {
		return nil, err
	}
	return &Netlink{h: h}, nil
}

// Close releases the netlink handle.
func (n *Netlink) Close() { n.h.Close() }

// Link implements Handle.
func (n *Netlink) Link(name string) (*Link, error) {
	l, err := n.h.LinkByName(name)
	if nlhandle.IsLinkNotFound(err) {
		return nil, nil
	}
	if err != nil {
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
	err := n.h.LinkAdd(&netlink.Iptun{LinkAttrs: attrs})
	if errors.Is(err, unix.EOPNOTSUPP) {
		return ErrNoDriver
	}
	return err
}

func (n *Netlink) link(index int) netlink.Link {
	return &netlink.Device{LinkAttrs: netlink.LinkAttrs{Index: index}}
}

// SetMTU implements Handle.
func (n *Netlink) SetMTU(index, mtu int) error { return n.h.LinkSetMTU(n.link(index), mtu) }

// SetUp implements Handle.
func (n *Netlink) SetUp(index int) error { return n.h.LinkSetUp(n.link(index)) }

// Addrs implements Handle.
func (n *Netlink) Addrs(ctx context.Context, index int) ([]netip.Prefix, error) {
	addrs, err := nlhandle.RetryDump(ctx, func() ([]netlink.Addr, error) { return n.h.AddrList(n.link(index), netlink.FAMILY_V4) })
	if err != nil {
		return nil, err
	}
	out := make([]netip.Prefix, 0, len(addrs))
	for _, a := range addrs {
		if ip := nlhandle.Addr(a.IP); ip.IsValid() {
			ones, _ := a.Mask.Size()
			out = append(out, netip.PrefixFrom(ip, ones))
		}
	}
	return out, nil
}

// AddAddr implements Handle.
func (n *Netlink) AddAddr(index int, p netip.Prefix) error {
	return n.h.AddrReplace(n.link(index), &netlink.Addr{IPNet: nlhandle.IPNet(p)})
}

// DelAddr implements Handle.
func (n *Netlink) DelAddr(index int, p netip.Prefix) error {
	return n.h.AddrDel(n.link(index), &netlink.Addr{IPNet: nlhandle.IPNet(p)})
}
