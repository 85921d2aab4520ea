package sim

import (
	"errors"
	"fmt"
	"math/bits"
	"net/netip"

	"golang.org/x/sys/unix"

	"github.com/calico-host/calico-host/pkg/nft"
)

// Iface is a network interface of the host.
type Iface struct {
	Name  string
	Index uint32
	Type  uint16 // ARPHRD_*: unix.ARPHRD_ETHER, ARPHRD_LOOPBACK, ARPHRD_NONE (tun, wireguard)...
}

// Loopback reports whether the interface is a loopback interface.
func (i *Iface) Loopback() bool { return i != nil && i.Type == unix.ARPHRD_LOOPBACK }

func (i *Iface) validate() error {
	if i.Name == "" || len(i.Name) >= unix.IFNAMSIZ || i.Index == 0 {
		return fmt.Errorf("interface %q (index %d): a name of 1 to 15 bytes and an index are needed", i.Name, i.Index)
	}
	return nil
}

func (i *Iface) name() string {
	if i == nil {
		return ""
	}
	return i.Name
}

// Conntrack is what connection tracking makes of the packet when it
// reaches conntrack's hook (prerouting or output, priority -200): its
// state (exactly one of nft.CTStateNew, Established, Related, Invalid or
// Untracked) and, for a tracked packet, the connection's status bits.
// Untracked is for packets conntrack skips for reasons the tables do not
// show; a notrack statement of the tables is simulated on its own.
type Conntrack struct {
	State  nft.CTState
	Status nft.CTStatus
}

func (c Conntrack) validate() error {
	known := nft.CTStateNew | nft.CTStateEstablished | nft.CTStateRelated | nft.CTStateInvalid | nft.CTStateUntracked
	if bits.OnesCount32(uint32(c.State)) != 1 || c.State&^known != 0 {
		return fmt.Errorf("conntrack state %#x: want exactly one state", uint32(c.State))
	}
	if c.Status != 0 && !c.tracked() {
		return errors.New("an untracked or invalid packet has no connection status")
	}
	return nil
}

func (c Conntrack) tracked() bool {
	return c.State != nft.CTStateInvalid && c.State != nft.CTStateUntracked
}

// FIB answers the routing questions of the host the tables belong to:
// those of fib expressions and those the kernel asks to route the packet
// between hooks. Its answers must be the kernel's for that host.
type FIB interface {
	// AddrType is the route type fib's `type` lookup gives address a:
	// nft.AddrTypeLocal for an address of the host (of interface dev only,
	// when dev is not nil), else unicast, broadcast, multicast, or (IPv6)
	// the type of a reject route covering it.
	AddrType(a netip.Addr, dev *Iface) nft.AddrType
	// Route looks up the route of a packet to q.Dst, as the kernel's fib
	// lookup does; ok is false when there is none, or an error route
	// (unreachable, blackhole, prohibit).
	Route(q RouteQuery) (r Route, ok bool)
}

// RouteQuery is one route lookup.
type RouteQuery struct {
	Dst, Src netip.Addr // Src may be unset
	Mark     uint32
	// Input is set for the routing decision of a received packet after
	// prerouting (ip_route_input: it fails for a destination that is not
	// local when the host does not forward); IIF is then the interface it
	// came in on.
	Input bool
	// IIF is the input interface of the lookup: the packet's for Input; for
	// fib's iif lookup in forward, the output interface (the kernel's
	// flowi iif); nil otherwise (the kernel looks up as from loopback).
	IIF *Iface
	// OIF binds the lookup to an interface: an IPv6 link-local destination
	// (RT6_LOOKUP_F_IFACE).
	OIF *Iface
}

// Route is the answer to a RouteQuery.
type Route struct {
	Type nft.AddrType // unicast, local...
	// OIFs are the route's output interfaces: the one the packet takes
	// first, then the other nexthops of a multipath route.
	OIFs []Iface
	// Src is the address masquerade gives a packet leaving by this route:
	// the kernel's inet_select_addr(OIFs[0], gateway or destination,
	// universe scope) for IPv4 (the first primary global address of the
	// interface, one in the nexthop's subnet first, else of the first
	// interface that has one), ipv6_dev_get_saddr for IPv6.
	Src netip.Addr
}

// Input is what Run needs: the packet, where it comes from, its mark,
// what conntrack makes of it, and the host's routing.
type Input struct {
	Packet Packet
	// IIF is the interface the packet arrived on; nil for a packet the host
	// itself sends.
	IIF *Iface
	// Mark is the packet's mark as it enters the first hook (a socket's
	// SO_MARK for a packet the host sends).
	Mark uint32
	CT   Conntrack
	FIB  FIB
}

func (in *Input) validate() error {
	if in.FIB == nil {
		return errors.New("no FIB")
	}
	if in.IIF != nil {
		if err := in.IIF.validate(); err != nil {
			return err
		}
	}
	if in.IIF == nil && len(in.Packet.Link) > 0 {
		return errors.New("a packet the host sends has no link-layer header in netfilter")
	}
	if len(in.Packet.Link) != 0 && len(in.Packet.Link) != 14 {
		return fmt.Errorf("link-layer header of %d bytes, want an Ethernet header (14)", len(in.Packet.Link))
	}
	return in.CT.validate()
}
