package ifaces

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"time"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/felix/dataplane"
)

// Interfaces is the dataplane's view of this package (dataplane.Interfaces): the monitor, the
// workload sysctls and the static neighbours of one namespace.
type Interfaces struct {
	mon *Monitor
	h   Handle
	fs  SysctlWriter
}

var _ dataplane.Interfaces = (*Interfaces)(nil)

// NewInterfaces combines a Handle and a SysctlWriter of the same namespace; resync is
// InterfaceRefreshInterval.
func NewInterfaces(h Handle, fs SysctlWriter, log zerolog.Logger, resync time.Duration) *Interfaces {
	return &Interfaces{mon: NewMonitor(h, log, resync), h: h, fs: fs}
}

// Run implements dataplane.Interfaces: Monitor.Run with the dataplane's update type.
func (i *Interfaces) Run(ctx context.Context, out chan<- dataplane.InterfaceUpdate) {
	i.mon.run(ctx, func(u Update) bool {
		du := dataplane.InterfaceUpdate{Name: u.Name, InSync: u.InSync, Gone: !u.InSync && u.State == nil}
		if u.State != nil {
			du.Up, du.Addrs = u.State.Up, u.State.Addrs
		}
		select {
		case out <- du:
			return true
		case <-ctx.Done():
			return false
		}
	})
}

// ConfigureWorkload implements dataplane.Interfaces (see the package function).
func (i *Interfaces) ConfigureWorkload(name string, v6 bool) error {
	return ConfigureWorkload(i.fs, name, v6)
}

// SetStaticNeighbors implements dataplane.Interfaces: a permanent entry addr -> mac on the
// interface for each address (replacing any other entry for it).
func (i *Interfaces) SetStaticNeighbors(name string, mac net.HardwareAddr, addrs []netip.Addr) error {
	var errs []error
	for _, a := range addrs {
		errs = append(errs, SetPermanentNeighbor(i.h, name, a, mac))
	}
	return errors.Join(errs...)
}
