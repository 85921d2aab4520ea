package main

import (
	"context"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/felix"
	"github.com/calico-host/calico-host/pkg/felix/dataplane"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/ifaces"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/routes"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/vxlan"
)

// newDataplane returns the builder of the kernel dataplane: nftables, routes, interfaces
// (monitor, sysctls, neighbours) and the VXLAN devices, all in cfg.NetNS ("" = felix's own
// namespace). The dataplane loop reports progress at least every idleBeat.
func newDataplane(idleBeat time.Duration) felix.NewDataplane {
	return func(cfg dataplane.Config, log zerolog.Logger) (felix.Dataplane, error) {
		k, err := openKernel(cfg, log)
		if err != nil {
			return nil, err
		}
		dp, err := dataplane.New(cfg, log, dataplane.WithRoutes(k.routes), dataplane.WithInterfaces(k),
			dataplane.WithVXLAN(k.vxlan), dataplane.WithTiming(dataplane.Timing{IdleBeat: idleBeat}))
		if err != nil {
			k.close()
			return nil, err
		}
		return dp, nil
	}
}

// kernel holds the netlink-backed pieces. It is the dataplane's Interfaces, passing every
// interface event on to the route and VXLAN pieces too, so that a re-created device gets its
// routes and neighbours back before the next periodic resync.
type kernel struct {
	*ifaces.Interfaces
	routes  *routes.Syncer
	vxlan   *vxlan.Devices
	closers []func()
}

func openKernel(cfg dataplane.Config, log zerolog.Logger) (*kernel, error) {
	k := &kernel{}
	rh, err := routes.OpenNetlink(cfg.NetNS)
	if err != nil {
		return nil, fmt.Errorf("routes: %w", err)
	}
	k.closers = append(k.closers, rh.Close)
	ih, err := ifaces.OpenNetlink(cfg.NetNS)
	if err != nil {
		k.close()
		return nil, fmt.Errorf("interfaces: %w", err)
	}
	k.closers = append(k.closers, ih.Close)
	sys, err := ifaces.NewProcSys(cfg.NetNS)
	if err != nil {
		k.close()
		return nil, fmt.Errorf("sysctls: %w", err)
	}
	k.closers = append(k.closers, sys.Close)
	if err := ifaces.EnableForwarding(sys, cfg.IPv6Support); err != nil {
		log.Warn().Err(err).Msg("Could not enable IP forwarding; workload traffic will not be routed")
	}
	vh, err := vxlan.OpenNetlink(cfg.NetNS)
	if err != nil {
		k.close()
		return nil, fmt.Errorf("vxlan: %w", err)
	}
	k.closers = append(k.closers, vh.Close)
	k.Interfaces = ifaces.NewInterfaces(ih, sys, log.With().Str("piece", "interfaces").Logger(), cfg.InterfaceRefreshInterval)
	k.routes = routes.NewSyncer(rh, cfg.RouteProtocol, log.With().Str("piece", "routes").Logger())
	hostMTU := func(ctx context.Context) (int, error) { return ifaces.HostMTU(ctx, ih, nil) }
	k.vxlan = vxlan.NewDevices(vh, log.With().Str("piece", "vxlan").Logger(), hostMTU, cfg.RouteRefreshInterval)
	writeWorkloadMTU(cfg, hostMTU, log)
	return k, nil
}

// writeWorkloadMTU records the MTU workloads should use (the host's, less the VXLAN overhead when
// VXLAN is on) in cfg.MTUFile, where the CNI plugin reads it when its network config sets no mtu.
func writeWorkloadMTU(cfg dataplane.Config, hostMTU func(context.Context) (int, error), log zerolog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	mtu, err := hostMTU(ctx)
	if err != nil {
		log.Warn().Err(err).Int("mtu", mtu).Msg("Could not read the host MTU; using the fallback")
	}
	if cfg.VXLANEnabled {
		mtu = vxlan.DeviceMTU(mtu, cfg.VXLANMTU, false)
	}
	path := cfg.WithDefaults().MTUFile
	if err := vxlan.WriteMTUFile(path, mtu); err != nil {
		log.Warn().Err(err).Str("file", path).Msg("Could not write the workload MTU file")
		return
	}
	log.Info().Int("mtu", mtu).Str("file", path).Msg("Wrote the workload MTU")
}

// Run implements dataplane.Interfaces, telling the route and VXLAN pieces about each change.
func (k *kernel) Run(ctx context.Context, out chan<- dataplane.InterfaceUpdate) {
	tee := make(chan dataplane.InterfaceUpdate, cap(out))
	go k.Interfaces.Run(ctx, tee)
	for {
		select {
		case <-ctx.Done():
			return
		case u := <-tee:
			if !u.InSync {
				k.routes.InterfaceChanged(u.Name)
				k.vxlan.InterfaceChanged(u.Name)
			}
			select {
			case out <- u:
			case <-ctx.Done():
				return
			}
		}
	}
}

func (k *kernel) close() {
	for _, c := range k.closers {
		c()
	}
}
