package vxlan

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// Manager keeps one tunnel device and its neighbours. Apply must not be called concurrently;
// RequestResync may be called from any goroutine.
type Manager struct {
	h      Handle
	log    zerolog.Logger
	resync atomic.Bool

	device  string  // the device's name, from the last Config
	applied *Config // the device as last ensured; nil: to be checked
	absent  bool    // the device was removed and nothing was requested since
	index   int
	// arp (tunnel address -> MAC) and fdb (MAC -> underlay address) mirror the device's
	// permanent entries: read at a resync, then what we achieved since.
	arp map[netip.Addr]hwAddr
	fdb map[hwAddr]netip.Addr
	// refused are the VTEPs left out by the last Apply (node -> why), logged when they change.
	refused map[string]string
}

// hwAddr is a MAC usable as a map key.
type hwAddr [6]byte

func toHW(mac net.HardwareAddr) (hwAddr, bool) {
	var h hwAddr
	if len(mac) != len(h) {
		return h, false
	}
	copy(h[:], mac)
	return h, true
}

// unicast reports whether h is a unicast MAC other than all zeros (which, as an FDB entry,
// would be the device's default destination).
func (h hwAddr) unicast() bool { return h[0]&1 == 0 && h != hwAddr{} }

func (h hwAddr) mac() net.HardwareAddr { return bytes.Clone(h[:]) }

func (h hwAddr) String() string { return net.HardwareAddr(h[:]).String() }

// NewManager returns a Manager; its first Apply reads the kernel.
func NewManager(h Handle, log zerolog.Logger) *Manager {
	m := &Manager{h: h, log: log}
	m.resync.Store(true)
	return m
}

// RequestResync makes the next Apply check the device and re-read its neighbours.
func (m *Manager) RequestResync() { m.resync.Store(true) }

// Apply converges the device on cfg and its neighbour entries on vteps (those of cfg's family;
// others are ignored). A nil cfg removes the device. The device is checked against cfg when cfg
// changed, after a failure and at a resync; otherwise only neighbour changes are written, adds
// and replacements before deletions.
func (m *Manager) Apply(ctx context.Context, cfg *Config, vteps []VTEP) error {
	start := time.Now()
	resync := m.resync.Swap(false)
	var err error
	if cfg == nil {
		err = m.remove(resync)
	} else {
		err = m.apply(ctx, cfg, vteps, resync)
	}
	if err != nil {
		m.resync.Store(true)
	}
	m.log.Debug().Bool("resync", resync).Dur("duration", time.Since(start)).Err(err).Msg("VXLAN applied")
	return err
}

func (m *Manager) apply(ctx context.Context, cfg *Config, vteps []VTEP, resync bool) error {
	if err := cfg.validate(); err != nil {
		return fmt.Errorf("VXLAN device %s: %w", cfg.Device, err)
	}
	if cfg.Device != m.device && m.device != "" {
		// Renamed: the old device is no longer wanted.
		if err := m.removeNamed(m.device); err != nil {
			return err
		}
		m.applied, m.arp, m.fdb, m.index = nil, nil, nil, 0
	}
	m.device, m.absent = cfg.Device, false
	if resync || m.applied == nil || !m.applied.equal(cfg) {
		m.applied = nil
		idx, err := m.ensureDevice(ctx, cfg)
		if err != nil {
			return fmt.Errorf("ensuring VXLAN device %s: %w", cfg.Device, err)
		}
		if idx != m.index || resync || m.arp == nil {
			m.index = idx
			if err := m.readNeighbors(ctx, cfg.IPv6); err != nil {
				return fmt.Errorf("reading neighbours of %s: %w", cfg.Device, err)
			}
		}
		m.applied = cfg.clone()
	}
	arp, fdb := m.desiredNeighbors(cfg, vteps)
	errs := m.writeNeighbors(arp, fdb)
	errs = append(errs, m.deleteNeighbors(arp, fdb)...)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("VXLAN neighbours of %s: %w", cfg.Device, err)
	}
	return nil
}

// remove deletes the device if it is a VXLAN device. Once removed, it is checked again only at a
// resync.
func (m *Manager) remove(resync bool) error {
	m.applied, m.arp, m.fdb, m.index = nil, nil, nil, 0
	if m.device == "" || (m.absent && !resync) {
		return nil // never configured, or already removed
	}
	return m.removeNamed(m.device)
}

func (m *Manager) removeNamed(name string) error {
	l, err := m.h.Link(name)
	if err != nil {
		return fmt.Errorf("looking up %s: %w", name, err)
	}
	if l != nil && l.Kind == "vxlan" {
		if err := m.h.DeleteLink(l.Index); err != nil && !errors.Is(err, unix.ENODEV) {
			return fmt.Errorf("deleting %s: %w", name, err)
		}
		m.log.Info().Str("device", name).Msg("Deleted VXLAN device")
	}
	m.absent = true
	return nil
}

// desiredNeighbors builds the ARP/NDP and FDB entries for vteps of cfg's family. A VTEP that
// cannot have its entries (a MAC that is not a unicast one, or is another VTEP's at another
// address; a tunnel address another VTEP has) is left out and logged with its node: only that
// host is unreachable through the tunnel, every other entry and the rest of the dataplane are
// programmed. Of two VTEPs that conflict, the first (in the order given) keeps its entries.
func (m *Manager) desiredNeighbors(cfg *Config, vteps []VTEP) (map[netip.Addr]hwAddr, map[hwAddr]netip.Addr) {
	arp := make(map[netip.Addr]hwAddr, len(vteps))
	fdb := make(map[hwAddr]netip.Addr, len(vteps))
	owner := make(map[hwAddr]string, len(vteps))
	refused := map[string]string{}
	for _, v := range vteps {
		if !v.TunnelAddr.IsValid() || v.TunnelAddr.Is6() != cfg.IPv6 {
			continue
		}
		mac, ok := toHW(v.MAC)
		have, used := arp[v.TunnelAddr]
		switch {
		case !ok || !mac.unicast():
			refused[v.Node] = fmt.Sprintf("MAC %q is not a unicast MAC", v.MAC)
		case !v.ParentAddr.IsValid() || v.ParentAddr.Is6() != cfg.IPv6:
			refused[v.Node] = fmt.Sprintf("parent address %s is not of the device's family", v.ParentAddr)
		case fdb[mac].IsValid() && fdb[mac] != v.ParentAddr:
			refused[v.Node] = fmt.Sprintf("MAC %s is already the VTEP of %s (at %s)", mac, owner[mac], fdb[mac])
		case used && have != mac:
			refused[v.Node] = fmt.Sprintf("tunnel address %s is already used", v.TunnelAddr)
		default:
			arp[v.TunnelAddr] = mac
			fdb[mac] = v.ParentAddr
			owner[mac] = v.Node
		}
	}
	m.logRefused(refused)
	return arp, fdb
}

// logRefused logs the VTEPs left out, each when it is first left out or for another reason.
func (m *Manager) logRefused(refused map[string]string) {
	for node, why := range refused {
		if m.refused[node] != why {
			m.log.Error().Str("node", node).Str("reason", why).
				Msg("Leaving out a remote VTEP: its host is not reachable through the tunnel until it is fixed")
		}
	}
	m.refused = refused
}

// readNeighbors replaces the mirrors with the device's permanent entries.
func (m *Manager) readNeighbors(ctx context.Context, ipv6 bool) error {
	arp, err := m.h.Neighbors(ctx, m.index, false, ipv6)
	if err != nil {
		return err
	}
	fdb, err := m.h.Neighbors(ctx, m.index, true, ipv6)
	if err != nil {
		return err
	}
	m.arp = make(map[netip.Addr]hwAddr, len(arp))
	for _, n := range arp {
		if mac, ok := toHW(n.MAC); ok {
			m.arp[n.IP] = mac
		}
	}
	m.fdb = make(map[hwAddr]netip.Addr, len(fdb))
	for _, n := range fdb {
		if mac, ok := toHW(n.MAC); ok {
			m.fdb[mac] = n.IP
		}
	}
	return nil
}

// writeNeighbors adds or replaces the entries that differ from the mirrors.
func (m *Manager) writeNeighbors(arp map[netip.Addr]hwAddr, fdb map[hwAddr]netip.Addr) []error {
	var errs []error
	for mac, ip := range fdb {
		if have, ok := m.fdb[mac]; ok && have == ip {
			continue
		}
		if err := m.h.SetNeighbor(m.index, Neigh{FDB: true, IP: ip, MAC: mac.mac()}); err != nil {
			errs = append(errs, fmt.Errorf("setting fdb %s dst %s: %w", mac, ip, err))
			continue
		}
		m.fdb[mac] = ip
	}
	for ip, mac := range arp {
		if have, ok := m.arp[ip]; ok && have == mac {
			continue
		}
		if err := m.h.SetNeighbor(m.index, Neigh{IP: ip, MAC: mac.mac()}); err != nil {
			errs = append(errs, fmt.Errorf("setting neighbour %s lladdr %s: %w", ip, mac, err))
			continue
		}
		m.arp[ip] = mac
	}
	return errs
}

// deleteNeighbors removes the entries no VTEP wants.
func (m *Manager) deleteNeighbors(arp map[netip.Addr]hwAddr, fdb map[hwAddr]netip.Addr) []error {
	var errs []error
	for ip, mac := range m.arp {
		if _, ok := arp[ip]; ok {
			continue
		}
		if err := m.h.DelNeighbor(m.index, Neigh{IP: ip, MAC: mac.mac()}); err != nil && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("deleting neighbour %s: %w", ip, err))
			continue
		}
		delete(m.arp, ip)
	}
	for mac, ip := range m.fdb {
		if _, ok := fdb[mac]; ok {
			continue
		}
		if err := m.h.DelNeighbor(m.index, Neigh{FDB: true, IP: ip, MAC: mac.mac()}); err != nil && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("deleting fdb %s: %w", mac, err))
			continue
		}
		delete(m.fdb, mac)
	}
	return errs
}
