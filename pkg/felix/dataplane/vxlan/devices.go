package vxlan

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// fallbackHostMTU is used when the host MTU cannot be found (felix's fallback).
const fallbackHostMTU = 1460

// Peer is another host's VTEP.
type Peer struct {
	Node       string // its host, for logs
	MAC        net.HardwareAddr
	TunnelAddr netip.Addr // its tunnel device address: the ARP/neighbour entry
	HostAddr   netip.Addr // its underlay address: the FDB entry's destination
}

// Device is the desired state of one VXLAN tunnel device and its peers.
type Device struct {
	Name       string // DeviceV4 or DeviceV6
	VNI        int
	Port       int
	MTU        int // 0: the host's MTU minus the encapsulation overhead
	MAC        net.HardwareAddr
	LocalAddr  netip.Addr // this host's underlay address (the VXLAN source)
	TunnelAddr netip.Addr // the device's own address (/32 or /128)
	Peers      []Peer     // exactly these ARP and FDB entries
}

// Devices is what the dataplane drives: one Manager per device name, with vxlan.calico and
// vxlan-v6.calico removed when not listed.
type Devices struct {
	h       Handle
	log     zerolog.Logger
	hostMTU func(context.Context) (int, error)
	refresh time.Duration
	due     time.Time // next periodic resync
	mtu     int       // cached host MTU; 0 = find it again

	mu       sync.Mutex // guards managers (InterfaceChanged may run on another goroutine)
	managers map[string]*Manager
}

// NewDevices returns Devices over h. hostMTU finds the host MTU for devices with MTU 0 (for
// example ifaces.HostMTU over the same namespace; nil means 1460); it is called again at each
// resync. Every refresh (0 = never) the devices are checked and their neighbours re-read.
func NewDevices(h Handle, log zerolog.Logger, hostMTU func(context.Context) (int, error), refresh time.Duration) *Devices {
	return &Devices{h: h, log: log, hostMTU: hostMTU, refresh: refresh, managers: map[string]*Manager{}}
}

// RequestResync makes the next Apply check every device and re-read the host MTU.
// Like Apply, it must not run concurrently with Apply.
func (d *Devices) RequestResync() {
	d.mtu = 0
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, m := range d.managers {
		m.RequestResync()
	}
}

// InterfaceChanged makes the next Apply check the named device if it is one of ours (for example
// after it was set down, which flushes its ARP entries). Cheap for other names; safe to call from
// any goroutine.
func (d *Devices) InterfaceChanged(name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if m, ok := d.managers[name]; ok {
		m.RequestResync()
	}
}

func (d *Devices) manager(name string) *Manager {
	d.mu.Lock()
	defer d.mu.Unlock()
	m, ok := d.managers[name]
	if !ok {
		m = NewManager(d.h, d.log.With().Str("device", name).Logger())
		m.device = name // so that an unlisted device is removed, even if this run never made it
		d.managers[name] = m
	}
	return m
}

// Apply makes the devices match: it creates or updates each listed device, its address and its
// ARP/FDB entries (and nothing else on it), and deletes vxlan.calico or vxlan-v6.calico when not
// listed.
func (d *Devices) Apply(ctx context.Context, devices []Device) error {
	if now := time.Now(); d.refresh > 0 && !now.Before(d.due) {
		d.RequestResync()
		d.due = now.Add(d.refresh)
	}
	var errs []error
	listed := map[string]bool{}
	for _, dev := range devices {
		listed[dev.Name] = true
		cfg, err := d.config(ctx, dev)
		if err == nil {
			err = d.manager(dev.Name).Apply(ctx, cfg, peers(dev.Peers))
		}
		errs = append(errs, err)
	}
	for _, name := range d.names() {
		if !listed[name] {
			errs = append(errs, d.manager(name).Apply(ctx, nil, nil))
		}
	}
	return errors.Join(errs...)
}

// names lists the known devices, the two standard ones always included.
func (d *Devices) names() []string {
	d.manager(DeviceV4)
	d.manager(DeviceV6)
	d.mu.Lock()
	defer d.mu.Unlock()
	names := make([]string, 0, len(d.managers))
	for name := range d.managers {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

func (d *Devices) config(ctx context.Context, dev Device) (*Config, error) {
	ipv6 := dev.TunnelAddr.Is6()
	cfg := &Config{Device: dev.Name, VNI: dev.VNI, Port: dev.Port, MTU: dev.MTU, MAC: dev.MAC,
		TunnelAddr: dev.TunnelAddr, ParentAddr: dev.LocalAddr, IPv6: ipv6}
	if cfg.MTU == 0 {
		host, err := d.hostMTUCached(ctx)
		if err != nil {
			return nil, fmt.Errorf("VXLAN device %s: %w", dev.Name, err)
		}
		cfg.MTU = DeviceMTU(host, 0, ipv6)
	}
	return cfg, nil
}

func (d *Devices) hostMTUCached(ctx context.Context) (int, error) {
	if d.mtu > 0 {
		return d.mtu, nil
	}
	if d.hostMTU == nil {
		return fallbackHostMTU, nil
	}
	mtu, err := d.hostMTU(ctx)
	if err != nil {
		return 0, fmt.Errorf("finding the host MTU: %w", err)
	}
	d.mtu = mtu
	return mtu, nil
}

func peers(ps []Peer) []VTEP {
	out := make([]VTEP, len(ps))
	for i, p := range ps {
		out[i] = VTEP{Node: p.Node, MAC: p.MAC, TunnelAddr: p.TunnelAddr, ParentAddr: p.HostAddr}
	}
	return out
}
