package ifaces

import (
	"context"
	"fmt"
	"net"
	"net/netip"

	"github.com/calico-host/calico-host/pkg/nlhandle"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Handle is the monitor's and the neighbour setter's access to one network namespace. Netlink
// implements it; Fake implements it in memory.
type Handle interface {
	// ListInterfaces lists every interface with its addresses.
	ListInterfaces(ctx context.Context) ([]State, error)
	// Subscribe delivers link and address events until ctx is done or the subscription fails;
	// the channel is closed then (events may have been lost: list again).
	Subscribe(ctx context.Context) (<-chan Event, error)
	// SetNeighbor installs (or replaces) a permanent neighbour entry on the interface.
	SetNeighbor(iface string, ip netip.Addr, mac net.HardwareAddr) error
	// InterfaceAddrs lists the addresses of an interface.
	InterfaceAddrs(iface string) ([]netip.Prefix, error)
	// AddInterfaceAddr adds an address (of link scope) to an interface.
	AddInterfaceAddr(iface string, p netip.Prefix) error
	// DelInterfaceAddr removes an address from an interface.
	DelInterfaceAddr(iface string, p netip.Prefix) error
}

// Netlink is Handle over netlink in one network namespace (nlhandle's handle, shared with the
// other kernel pieces).
type Netlink struct{ *nlhandle.Handle }

// OpenNetlink opens netlink in the namespace at nsPath ("" = the current one). Close releases
// the netlink socket and the namespace handle.
func OpenNetlink(nsPath string) (*Netlink, error) {
	h, err := nlhandle.OpenHandle(nsPath)
	if err != nil {
		return nil, err
	}
	return &Netlink{h}, nil
}

// ListInterfaces implements Handle.
func (n *Netlink) ListInterfaces(ctx context.Context) ([]State, error) {
	links, err := nlhandle.RetryDump(ctx, n.LinkList)
	if err != nil {
		return nil, fmt.Errorf("listing interfaces: %w", err)
	}
	addrs, err := nlhandle.RetryDump(ctx, func() ([]netlink.Addr, error) { return n.AddrList(nil, netlink.FAMILY_ALL) })
	if err != nil {
		return nil, fmt.Errorf("listing addresses: %w", err)
	}
	byIndex := map[int][]netip.Prefix{}
	for _, a := range addrs {
		if p, ok := nlhandle.Prefix(a.IPNet); ok {
			byIndex[a.LinkIndex] = append(byIndex[a.LinkIndex], p)
		}
	}
	out := make([]State, 0, len(links))
	for _, l := range links {
		s := stateOf(l)
		s.Addrs = byIndex[s.Index]
		sortPrefixes(s.Addrs)
		out = append(out, s)
	}
	return out, nil
}

func stateOf(l netlink.Link) State {
	a := l.Attrs()
	return State{
		Name:  a.Name,
		Index: a.Index,
		Up:    a.RawFlags&unix.IFF_UP != 0 && a.RawFlags&unix.IFF_RUNNING != 0,
		MTU:   a.MTU,
	}
}

const subscribeBuffer = 4 << 20 // socket receive buffer: bursts of link creation overflow the default

// Subscribe implements Handle. Link and address events come from two sockets, so their relative
// order is not kept.
func (n *Netlink) Subscribe(ctx context.Context) (<-chan Event, error) {
	links, addrs, done := make(chan netlink.LinkUpdate, 256), make(chan netlink.AddrUpdate, 256), make(chan struct{})
	var ns *netns.NsHandle
	if h := n.NS(); h.IsOpen() {
		ns = &h
	}
	err := netlink.LinkSubscribeWithOptions(links, done, netlink.LinkSubscribeOptions{
		Namespace: ns, ReceiveBufferSize: subscribeBuffer, ReceiveBufferForceSize: true})
	if err != nil {
		close(done)
		return nil, fmt.Errorf("subscribing to link events: %w", err)
	}
	err = netlink.AddrSubscribeWithOptions(addrs, done, netlink.AddrSubscribeOptions{
		Namespace: ns, ReceiveBufferSize: subscribeBuffer, ReceiveBufferForceSize: true})
	if err != nil {
		close(done)
		go drain(links)
		return nil, fmt.Errorf("subscribing to address events: %w", err)
	}
	out := make(chan Event, 256)
	go forward(ctx, links, addrs, done, out)
	return out, nil
}

// forward turns netlink updates into Events until ctx is done or either subscription ends, then
// stops both and closes out.
func forward(ctx context.Context, links <-chan netlink.LinkUpdate, addrs <-chan netlink.AddrUpdate, done chan struct{}, out chan<- Event) {
	defer func() {
		close(done)
		go drain(links) // unblock the library's receivers so they see the closed socket
		go drain(addrs)
		close(out)
	}()
	for {
		var ev Event
		select {
		case <-ctx.Done():
			return
		case u, ok := <-links:
			if !ok {
				return
			}
			ev = Event{Kind: LinkChanged, Link: stateOf(u.Link)}
			if u.Header.Type == unix.RTM_DELLINK {
				ev.Kind = LinkDeleted
			}
		case u, ok := <-addrs:
			if !ok {
				return
			}
			p, valid := nlhandle.Prefix(&u.LinkAddress)
			if !valid {
				continue
			}
			ev = Event{Kind: AddrDeleted, Index: u.LinkIndex, Addr: p}
			if u.NewAddr {
				ev.Kind = AddrAdded
			}
		}
		select {
		case out <- ev:
		case <-ctx.Done():
			return
		}
	}
}

func drain[T any](ch <-chan T) {
	for range ch {
	}
}

// SetNeighbor implements Handle.
func (n *Netlink) SetNeighbor(iface string, ip netip.Addr, mac net.HardwareAddr) error {
	link, err := n.LinkByName(iface)
	if err != nil {
		return fmt.Errorf("finding interface %s: %w", iface, err)
	}
	family := netlink.FAMILY_V4
	if ip.Is6() {
		family = netlink.FAMILY_V6
	}
	return n.NeighSet(&netlink.Neigh{
		LinkIndex:    link.Attrs().Index,
		Family:       family,
		State:        netlink.NUD_PERMANENT,
		Type:         unix.RTN_UNICAST,
		IP:           ip.AsSlice(),
		HardwareAddr: mac,
	})
}
