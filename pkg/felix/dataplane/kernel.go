package dataplane

import (
	"context"
	"net"
	"net/netip"

	"github.com/calico-host/calico-host/pkg/felix/dataplane/ifaces"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/routes"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/vxlan"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/wireguard"
	"github.com/calico-host/calico-host/pkg/ipip"
)

// The kernel pieces other than nftables sit behind the three interfaces below, in the types of
// the packages that implement them (routes, ifaces and vxlan; they never import this one). New
// opens the netlink implementations in Config.NetNS unless WithRoutes, WithInterfaces or
// WithVXLAN supply others (tests); the dataplane computes their desired state and calls them
// from its loop, one call at a time.

// RouteSyncer reconciles the routes tagged with our route protocol (routes.Reconciler).
type RouteSyncer interface {
	// Apply makes our routes equal to desired: it adds or replaces what is missing or
	// different and deletes only our own stale routes. It may diff against what it last wrote;
	// after an error, or after RequestResync, it must read the kernel again.
	Apply(ctx context.Context, desired []routes.Route) (routes.Stats, error)
	// RequestResync makes the next Apply read the kernel's routes (drift repair).
	RequestResync()
	// InterfaceChanged says an interface changed (a re-created device lost its routes).
	InterfaceChanged(name string)
}

// Interfaces watches the host's interfaces and configures workload interfaces
// (ifaces.Interfaces).
type Interfaces interface {
	// Run reports every interface (its full state on each change, State nil when deleted),
	// then an InSync update, until ctx is done; it resyncs every Config.InterfaceRefreshInterval
	// and sends InSync again after each resync. The dataplane drains out promptly.
	Run(ctx context.Context, out chan<- ifaces.Update)
	// ConfigureWorkload applies the host-side sysctls of a workload interface: IPv4
	// proxy_arp=1, neigh proxy_delay=0, forwarding=1, route_localnet=1; when v6, IPv6
	// proxy_ndp=1, forwarding=1, accept_ra=0.
	ConfigureWorkload(name string, v6 bool) error
	// SetStaticNeighbors installs permanent neighbour entries for addrs with lladdr mac on the
	// interface (OpenStack VMs, whose MAC is known), replacing any other entry for those
	// addresses.
	SetStaticNeighbors(name string, mac net.HardwareAddr, addrs []netip.Addr) error
	// SetHostAddrs makes the host-side addresses of a workload interface equal to addrs (the
	// BGP peering addresses of a local BGP peer, link scope, /32 or /128): other addresses of
	// IPv4 (and IPv6 when v6) go, except the kernel's fe80::/64.
	SetHostAddrs(name string, addrs []netip.Addr, v6 bool) error
}

// VXLAN ensures the VXLAN devices (vxlan.Devices).
type VXLAN interface {
	// Apply makes the devices match: creates or updates each listed device, its address and
	// its ARP/FDB entries (and nothing else on it), and deletes vxlan.calico or
	// vxlan-v6.calico when not listed.
	Apply(ctx context.Context, devices []vxlan.Device) error
	// InterfaceChanged says an interface changed (a device set down lost its ARP entries).
	InterfaceChanged(name string)
}

// IPIP keeps the IPIP tunnel device tunl0 (ipip.Tunnel).
type IPIP interface {
	// Apply converges tunl0 on want (nil: IPIP off, addresses removed) and returns its state;
	// a kernel without the ipip driver is ipip.StateNoDriver with no error.
	Apply(ctx context.Context, want *ipip.Device) (ipip.State, error)
	// RequestResync makes the next Apply check the device (and retry a missing driver).
	RequestResync()
	// InterfaceChanged says an interface changed (tunl0 set down or re-created).
	InterfaceChanged(name string)
}

// WireGuard programs the WireGuard devices of the enabled IP versions (wireguard.Manager) and
// removes what felix owns of the disabled ones.
type WireGuard interface {
	Apply(ctx context.Context, on []wireguard.Device, off []wireguard.Family) error
}

// noWireGuard is used when the dataplane does not own the kernel (tests with fakes).
type noWireGuard struct{}

func (noWireGuard) Apply(context.Context, []wireguard.Device, []wireguard.Family) error { return nil }

// noRoutes programs no route (RouteSyncDisabled): the kernel's routes are left as they are.
type noRoutes struct{}

func (noRoutes) Apply(context.Context, []routes.Route) (routes.Stats, error) {
	return routes.Stats{}, nil
}
func (noRoutes) RequestResync()          {}
func (noRoutes) InterfaceChanged(string) {}
