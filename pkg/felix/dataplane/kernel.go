package dataplane

import (
	"context"
	"net"
	"net/netip"
)

// The kernel pieces other than nftables sit behind the three interfaces below. Their
// implementations (packages routes, ifaces and vxlan) are handed to New with WithRoutes,
// WithInterfaces and WithVXLAN; the dataplane computes their desired state and calls them from
// its loop, one call at a time.

// RouteScope is a route's scope, with the kernel's values.
type RouteScope uint8

// Route scopes.
const (
	ScopeUniverse RouteScope = 0
	ScopeLink     RouteScope = 253
)

// Route is one route the dataplane wants in the main routing table.
type Route struct {
	Dst       netip.Prefix
	Dev       string     // output interface ("" for blackhole routes)
	Gateway   netip.Addr // invalid: directly connected
	Onlink    bool       // the gateway is reachable on Dev without a route to it
	Blackhole bool
	Scope     RouteScope
}

// RouteSyncer reconciles the routes tagged with our route protocol (Config.RouteProtocol).
type RouteSyncer interface {
	// Apply makes our routes equal to desired: it adds or replaces what is missing or
	// different and deletes only our own stale routes. It may diff against what it last wrote;
	// after an error, or after RequestResync, it must read the kernel again.
	Apply(ctx context.Context, desired []Route) error
	// RequestResync makes the next Apply read the kernel's routes (drift repair). It may be
	// called from any goroutine.
	RequestResync()
}

// InterfaceUpdate is the state of one interface, or the monitor's in-sync marker.
type InterfaceUpdate struct {
	Name  string
	Up    bool           // operationally up
	Addrs []netip.Prefix // its addresses
	Gone  bool           // the interface was deleted
	// InSync marks the end of the initial dump (and of every periodic resync): the monitor has
	// reported every interface that exists. Name is empty in an InSync update.
	InSync bool
}

// Interfaces watches the host's interfaces and configures workload interfaces.
type Interfaces interface {
	// Run reports every interface (its full state on each change, Gone when deleted), then an
	// InSync update, until ctx is done; it resyncs every Config.InterfaceRefreshInterval and
	// sends InSync again after each resync. It must not block the caller's loop: out is
	// drained promptly.
	Run(ctx context.Context, out chan<- InterfaceUpdate)
	// ConfigureWorkload applies the host-side sysctls of a workload interface: IPv4
	// proxy_arp=1, neigh proxy_delay=0, forwarding=1, route_localnet=1; when v6, IPv6
	// proxy_ndp=1, forwarding=1, accept_ra=0.
	ConfigureWorkload(name string, v6 bool) error
	// SetStaticNeighbors installs permanent neighbour entries for addrs with lladdr mac on the
	// interface (OpenStack VMs, whose MAC is known), replacing any other entry for those
	// addresses.
	SetStaticNeighbors(name string, mac net.HardwareAddr, addrs []netip.Addr) error
}

// VXLANPeer is another host's VTEP.
type VXLANPeer struct {
	MAC        net.HardwareAddr
	TunnelAddr netip.Addr // its tunnel device address: the ARP/neighbour entry
	HostAddr   netip.Addr // its underlay address: the FDB entry's destination
}

// VXLANDevice is the desired state of one VXLAN tunnel device and its peers.
type VXLANDevice struct {
	Name       string // "vxlan.calico" (IPv4) or "vxlan-v6.calico"
	VNI        int
	Port       int
	MTU        int // 0: the host's MTU minus the encapsulation overhead
	MAC        net.HardwareAddr
	LocalAddr  netip.Addr  // this host's underlay address (the VXLAN source)
	TunnelAddr netip.Addr  // the device's own address (/32 or /128)
	Peers      []VXLANPeer // exactly these ARP and FDB entries
}

// VXLAN ensures the VXLAN devices.
type VXLAN interface {
	// Apply makes the devices match: creates or updates each listed device, its address and
	// its ARP/FDB entries (and nothing else on it), and deletes vxlan.calico or
	// vxlan-v6.calico when not listed.
	Apply(ctx context.Context, devices []VXLANDevice) error
}

// nullRoutes, nullInterfaces and nullVXLAN stand in when New is not given the kernel pieces:
// no routes, no interfaces (the monitor is in sync at once), no devices.
type nullRoutes struct{}

func (nullRoutes) Apply(context.Context, []Route) error { return nil }
func (nullRoutes) RequestResync()                       {}

type nullInterfaces struct{}

func (nullInterfaces) Run(ctx context.Context, out chan<- InterfaceUpdate) {
	select {
	case out <- InterfaceUpdate{InSync: true}:
	case <-ctx.Done():
	}
}
func (nullInterfaces) ConfigureWorkload(string, bool) error { return nil }
func (nullInterfaces) SetStaticNeighbors(string, net.HardwareAddr, []netip.Addr) error {
	return nil
}

type nullVXLAN struct{}

func (nullVXLAN) Apply(context.Context, []VXLANDevice) error { return nil }
