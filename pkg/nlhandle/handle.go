package nlhandle

import (
	"context"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// Handle is a netlink handle in one network namespace with the requests on links and addresses
// that the dataplane's kernel pieces share. Each piece's Netlink adapter (routes, ifaces, vxlan,
// ipip) embeds it and adds only the conversions to its own types; the library's handle is
// embedded for every other request.
type Handle struct {
	*netlink.Handle
	ns netns.NsHandle // closed by Close; netns.None() for the current namespace or a wrapped handle
}

// OpenHandle opens a Handle in the namespace at nsPath ("" = the current one); Close releases it.
func OpenHandle(nsPath string) (*Handle, error) {
	h, ns, err := OpenNS(nsPath)
	if err != nil {
		return nil, err
	}
	return &Handle{Handle: h, ns: ns}, nil
}

// Wrap makes a Handle of a netlink handle opened elsewhere; closing h stays with the caller (who
// must not call the Handle's Close).
func Wrap(h *netlink.Handle) *Handle { return &Handle{Handle: h, ns: netns.None()} }

// Close releases the netlink handle and the namespace handle.
func (h *Handle) Close() {
	h.Handle.Close()
	if h.ns.IsOpen() {
		h.ns.Close()
	}
}

// NS is the namespace the Handle was opened in, for what needs the namespace itself, such as
// subscriptions; netns.None() for the current one. It stays the Handle's.
func (h *Handle) NS() netns.NsHandle { return h.ns }

// byIndex is a link for the requests that need only its index.
func byIndex(index int) netlink.Link {
	return &netlink.Device{LinkAttrs: netlink.LinkAttrs{Index: index}}
}

// FindLink returns the named link, or nil (and no error) if there is none.
func (h *Handle) FindLink(name string) (netlink.Link, error) {
	l, err := h.LinkByName(name)
	if IsLinkNotFound(err) {
		return nil, nil
	}
	return l, err
}

// DeleteLink deletes the link.
func (h *Handle) DeleteLink(index int) error { return h.LinkDel(byIndex(index)) }

// SetMTU sets the link's MTU.
func (h *Handle) SetMTU(index, mtu int) error { return h.LinkSetMTU(byIndex(index), mtu) }

// SetMAC sets the link's hardware address.
func (h *Handle) SetMAC(index int, mac net.HardwareAddr) error {
	return h.LinkSetHardwareAddr(byIndex(index), mac)
}

// SetUp sets the link administratively up.
func (h *Handle) SetUp(index int) error { return h.LinkSetUp(byIndex(index)) }

// LinkAddrs lists the link's addresses of one family (netlink.FAMILY_V4, FAMILY_V6), repeating
// an interrupted dump (RetryDump). IPv4 comes out plain; malformed addresses are left out.
func (h *Handle) LinkAddrs(ctx context.Context, index, family int) ([]netip.Prefix, error) {
	addrs, err := RetryDump(ctx, func() ([]netlink.Addr, error) { return h.AddrList(byIndex(index), family) })
	if err != nil {
		return nil, err
	}
	out := make([]netip.Prefix, 0, len(addrs))
	for _, a := range addrs {
		if ip := Addr(a.IP); ip.IsValid() {
			ones, _ := a.Mask.Size()
			out = append(out, netip.PrefixFrom(ip, ones))
		}
	}
	return out, nil
}

// AddAddr adds the address to the link, or replaces it if the link has it.
func (h *Handle) AddAddr(index int, p netip.Prefix) error {
	return h.AddrReplace(byIndex(index), &netlink.Addr{IPNet: IPNet(p)})
}

// DelAddr removes the address from the link.
func (h *Handle) DelAddr(index int, p netip.Prefix) error {
	return h.AddrDel(byIndex(index), &netlink.Addr{IPNet: IPNet(p)})
}
