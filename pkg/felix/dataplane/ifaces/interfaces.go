package ifaces

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"time"

	"github.com/rs/zerolog"
)

// Interfaces is what the dataplane drives: the monitor, the workload sysctls and the static
// neighbours of one namespace.
type Interfaces struct {
	mon *Monitor
	h   Handle
	fs  SysctlWriter
}

// NewInterfaces combines a Handle and a SysctlWriter of the same namespace; resync is
// InterfaceRefreshInterval.
func NewInterfaces(h Handle, fs SysctlWriter, log zerolog.Logger, resync time.Duration) *Interfaces {
	return &Interfaces{mon: NewMonitor(h, log, resync), h: h, fs: fs}
}

// Run reports every interface, then InSync, then changes, until ctx is done (Monitor.Run).
func (i *Interfaces) Run(ctx context.Context, out chan<- Update) { i.mon.Run(ctx, out) }

// ConfigureWorkload applies the host-side sysctls of a workload interface (see the package
// function).
func (i *Interfaces) ConfigureWorkload(name string, v6 bool) error {
	return ConfigureWorkload(i.fs, name, v6)
}

// SetStaticNeighbors installs a permanent entry addr -> mac on the interface for each address
// (replacing any other entry for it): OpenStack VMs, whose MAC is known.
func (i *Interfaces) SetStaticNeighbors(name string, mac net.HardwareAddr, addrs []netip.Addr) error {
	var errs []error
	for _, a := range addrs {
		errs = append(errs, SetPermanentNeighbor(i.h, name, a, mac))
	}
	return errors.Join(errs...)
}
