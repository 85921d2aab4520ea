package dataplane

import (
	"context"
	"fmt"
	"time"

	"github.com/calico-host/calico-host/pkg/felix/dataplane/ifaces"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/routes"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/vxlan"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/wireguard"
	"github.com/calico-host/calico-host/pkg/ipip"
)

// mtuTimeout bounds the lookup of the host MTU for the workload MTU file.
const mtuTimeout = 10 * time.Second

// openPieces opens the netlink-backed routes, interfaces and VXLAN pieces in cfg.NetNS for those
// o does not supply, registering what it opened for close. With its own interfaces piece the
// dataplane also enables IP forwarding and writes the workload MTU file.
func (d *Dataplane) openPieces(o *options) error {
	var hostMTU func(context.Context) (int, error) // nil: VXLAN falls back to 1460
	if o.wg == nil {
		o.wg = noWireGuard{} // replaced below when the dataplane owns the kernel's routes
	}
	if o.routes == nil {
		if err := d.openWireGuard(o); err != nil {
			return err
		}
		if err := d.openRoutes(o); err != nil {
			return err
		}
	}
	if o.ifaces == nil {
		i, mtu, err := d.openInterfaces()
		if err != nil {
			return err
		}
		o.ifaces, hostMTU = i, mtu
		d.hostMTU = d.readHostMTU(hostMTU)
		if err := d.writeWorkloadMTU(configEncaps(d.cfg)); err != nil && d.cfg.RequireMTUFile {
			return fmt.Errorf("RequireMTUFile: %w", err)
		}
	}
	if o.vxlan == nil {
		vh, err := vxlan.OpenNetlink(d.cfg.NetNS)
		if err != nil {
			return fmt.Errorf("vxlan: %w", err)
		}
		d.closers = append(d.closers, vh.Close)
		o.vxlan = vxlan.NewDevices(vh, d.log.With().Str("subcomponent", "dataplane/vxlan").Logger(), hostMTU, d.cfg.RouteRefreshInterval)
	}
	if o.ipip == nil {
		ih, err := ipip.OpenNetlink(d.cfg.NetNS)
		if err != nil {
			return fmt.Errorf("ipip: %w", err)
		}
		d.closers = append(d.closers, ih.Close)
		o.ipip = ipip.New(ih, d.log.With().Str("subcomponent", "dataplane/ipip").Logger(), nil) // the MTU comes with the Device
	}
	return nil
}

// openInterfaces opens the interface monitor and the sysctl writer of cfg.NetNS, and enables
// IP forwarding there (as Project Calico's felix does by default). It returns the host MTU
// lookup over the same namespace.
func (d *Dataplane) openInterfaces() (*ifaces.Interfaces, func(context.Context) (int, error), error) {
	ih, err := ifaces.OpenNetlink(d.cfg.NetNS)
	if err != nil {
		return nil, nil, fmt.Errorf("interfaces: %w", err)
	}
	d.closers = append(d.closers, ih.Close)
	sys, err := ifaces.NewProcSys(d.cfg.NetNS)
	if err != nil {
		return nil, nil, fmt.Errorf("sysctls: %w", err)
	}
	d.closers = append(d.closers, sys.Close)
	if d.cfg.IPForwardingDisabled {
		d.log.Info().Msg("IPForwarding is Disabled: the host's IP forwarding setting is left alone")
	} else if err := ifaces.EnableForwarding(sys, d.cfg.IPv6Support); err != nil {
		d.log.Warn().Err(err).Msg("Could not enable IP forwarding; workload traffic will not be routed")
	}
	if d.cfg.Wireguard.Enabled && d.cfg.Wireguard.HostEncryption {
		// As Calico does with host encryption (IPv4 only): reverse-path checks take the mark
		// that raw PREROUTING puts on packets from host interfaces into account.
		if err := sys.WriteSysctl("net/ipv4/conf/all/src_valid_mark", "1"); err != nil {
			d.log.Warn().Err(err).Msg("Could not set net.ipv4.conf.all.src_valid_mark for WireGuard")
		}
	}
	log := d.log.With().Str("subcomponent", "dataplane/interfaces").Logger()
	hostMTU := func(ctx context.Context) (int, error) { return ifaces.HostMTU(ctx, ih, d.cfg.MTUIfacePattern) }
	return ifaces.NewInterfaces(ih, sys, log, d.cfg.InterfaceRefreshInterval), hostMTU, nil
}

// openWireGuard opens the WireGuard manager in cfg.NetNS unless o supplies one.
func (d *Dataplane) openWireGuard(o *options) error {
	if _, fake := o.wg.(noWireGuard); !fake {
		return nil
	}
	m, err := wireguard.Open(d.cfg.NetNS, d.log)
	if err != nil {
		return fmt.Errorf("wireguard: %w", err)
	}
	d.closers = append(d.closers, m.Close)
	o.wg, d.wgManager = m, m
	return nil
}

// openRoutes opens the route reconciler, or none with RouteSyncDisabled.
func (d *Dataplane) openRoutes(o *options) error {
	if d.cfg.Routes.SyncDisabled {
		d.log.Info().Msg("RouteSyncDisabled: felix programs no route and no host-side workload address")
		o.routes = noRoutes{}
		return nil
	}
	rh, err := routes.OpenNetlink(d.cfg.NetNS)
	if err != nil {
		return fmt.Errorf("routes: %w", err)
	}
	d.closers = append(d.closers, rh.Close)
	o.routes = routes.New(rh, d.cfg.routeOwnership(), d.log.With().Str("subcomponent", "dataplane/routes").Logger())
	return nil
}
