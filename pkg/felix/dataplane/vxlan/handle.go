package vxlan

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"

	"github.com/calico-host/calico-host/pkg/nlhandle"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Link is an interface as the Manager needs to see it. The VXLAN fields are set only when Kind is
// "vxlan".
type Link struct {
	Name  string
	Index int
	Kind  string // "vxlan", "veth"...
	Up    bool   // administratively up
	MTU   int
	MAC   net.HardwareAddr

	VNI         int
	Port        int
	Learning    bool
	ParentIndex int        // 0: none
	SrcAddr     netip.Addr // invalid: none
}

// Neigh is a permanent neighbour entry on the device: an ARP/NDP entry IP -> MAC, or (FDB) an
// FDB entry MAC -> IP (the VXLAN destination).
type Neigh struct {
	FDB bool
	IP  netip.Addr
	MAC net.HardwareAddr
}

func (n Neigh) String() string {
	if n.FDB {
		return fmt.Sprintf("fdb %s dst %s", n.MAC, n.IP)
	}
	return fmt.Sprintf("neigh %s lladdr %s", n.IP, n.MAC)
}

// Handle is the Manager's access to one network namespace. Netlink implements it; Fake
// implements it in memory.
type Handle interface {
	// Link returns the named interface, or nil (and no error) if there is none.
	Link(name string) (*Link, error)
	// LinkWithAddr returns the index of the interface holding addr, or 0.
	LinkWithAddr(ctx context.Context, addr netip.Addr) (int, error)
	// AddVXLAN creates a VXLAN device from l (name, VNI, port, learning, parent, source, MTU, MAC).
	AddVXLAN(l Link) error
	DeleteLink(index int) error
	SetMTU(index, mtu int) error
	SetMAC(index int, mac net.HardwareAddr) error
	SetUp(index int) error
	// Addrs lists the interface's addresses of one family (link-local IPv6 addresses excluded).
	Addrs(ctx context.Context, index int, ipv6 bool) ([]netip.Prefix, error)
	AddAddr(index int, p netip.Prefix) error
	DelAddr(index int, p netip.Prefix) error
	// Neighbors lists the interface's permanent entries: ARP/NDP ones of one family, or FDB ones.
	Neighbors(ctx context.Context, index int, fdb, ipv6 bool) ([]Neigh, error)
	SetNeighbor(index int, n Neigh) error // add or replace
	DelNeighbor(index int, n Neigh) error
}

// Netlink is Handle over netlink: DeleteLink, SetMTU, SetMAC, SetUp, AddAddr and DelAddr are
// nlhandle.Handle's.
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
	out := &Link{Name: a.Name, Index: a.Index, Kind: l.Type(), Up: a.Flags&net.FlagUp != 0, MTU: a.MTU, MAC: a.HardwareAddr}
	if v, ok := l.(*netlink.Vxlan); ok {
		out.VNI, out.Port, out.Learning, out.ParentIndex = v.VxlanId, v.Port, v.Learning, v.VtepDevIndex
		out.SrcAddr = nlhandle.Addr(v.SrcAddr)
	}
	return out, nil
}

// LinkWithAddr implements Handle.
func (n *Netlink) LinkWithAddr(ctx context.Context, addr netip.Addr) (int, error) {
	addrs, err := nlhandle.RetryDump(ctx, func() ([]netlink.Addr, error) { return n.AddrList(nil, familyOf(addr.Is6())) })
	if err != nil {
		return 0, err
	}
	for _, a := range addrs {
		if nlhandle.Addr(a.IP) == addr {
			return a.LinkIndex, nil
		}
	}
	return 0, nil
}

// AddVXLAN implements Handle.
func (n *Netlink) AddVXLAN(l Link) error {
	attrs := netlink.NewLinkAttrs()
	attrs.Name, attrs.MTU, attrs.HardwareAddr = l.Name, l.MTU, l.MAC
	v := &netlink.Vxlan{LinkAttrs: attrs, VxlanId: l.VNI, Port: l.Port, Learning: l.Learning, VtepDevIndex: l.ParentIndex}
	if l.SrcAddr.IsValid() {
		v.SrcAddr = l.SrcAddr.AsSlice()
	}
	return n.LinkAdd(v)
}

// Addrs implements Handle.
func (n *Netlink) Addrs(ctx context.Context, index int, ipv6 bool) ([]netip.Prefix, error) {
	addrs, err := n.LinkAddrs(ctx, index, familyOf(ipv6))
	return slices.DeleteFunc(addrs, func(p netip.Prefix) bool { return p.Addr().Is6() && p.Addr().IsLinkLocalUnicast() }), err
}

// Neighbors implements Handle.
func (n *Netlink) Neighbors(ctx context.Context, index int, fdb, ipv6 bool) ([]Neigh, error) {
	family := familyOf(ipv6)
	if fdb {
		family = unix.AF_BRIDGE
	}
	ns, err := nlhandle.RetryDump(ctx, func() ([]netlink.Neigh, error) { return n.NeighList(index, family) })
	if err != nil {
		return nil, err
	}
	var out []Neigh
	for _, nb := range ns {
		if nb.LinkIndex != index || nb.State&netlink.NUD_PERMANENT == 0 || len(nb.HardwareAddr) == 0 {
			continue // transient kernel entries, not ours to manage
		}
		ip := nlhandle.Addr(nb.IP)
		if fdb && ip.IsValid() && ip.Is6() != ipv6 {
			continue
		}
		out = append(out, Neigh{FDB: fdb, IP: ip, MAC: nb.HardwareAddr})
	}
	return out, nil
}

func (n *Netlink) neigh(index int, nb Neigh) *netlink.Neigh {
	out := &netlink.Neigh{LinkIndex: index, State: netlink.NUD_PERMANENT, IP: nb.IP.AsSlice(), HardwareAddr: nb.MAC}
	if nb.FDB {
		out.Family, out.Flags = unix.AF_BRIDGE, netlink.NTF_SELF
	} else {
		out.Family, out.Type = familyOf(nb.IP.Is6()), unix.RTN_UNICAST
	}
	return out
}

// SetNeighbor implements Handle.
func (n *Netlink) SetNeighbor(index int, nb Neigh) error { return n.NeighSet(n.neigh(index, nb)) }

// DelNeighbor implements Handle.
func (n *Netlink) DelNeighbor(index int, nb Neigh) error { return n.NeighDel(n.neigh(index, nb)) }

func familyOf(ipv6 bool) int {
	if ipv6 {
		return netlink.FAMILY_V6
	}
	return netlink.FAMILY_V4
}
