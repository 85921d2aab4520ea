package vxlan

import (
	"bytes"
	"context"
	"fmt"
	"slices"
)

// ensureDevice creates the device, or fixes it in place (MTU, MAC, address, up), or re-creates it
// when what cannot change in place (type, VNI, port, learning, parent, source) differs. It returns
// the device's index.
func (m *Manager) ensureDevice(ctx context.Context, cfg *Config) (int, error) {
	want, err := m.wantLink(ctx, cfg)
	if err != nil {
		return 0, err
	}
	l, err := m.h.Link(cfg.Device)
	if err != nil {
		return 0, fmt.Errorf("looking up the device: %w", err)
	}
	if l != nil {
		if reason := incompatible(l, want); reason != "" {
			m.log.Info().Str("device", cfg.Device).Str("reason", reason).Msg("Re-creating VXLAN device")
			if err := m.h.DeleteLink(l.Index); err != nil {
				return 0, fmt.Errorf("deleting the device (%s): %w", reason, err)
			}
			l = nil
		}
	}
	if l == nil {
		if l, err = m.create(want); err != nil {
			return 0, err
		}
	}
	if err := m.fixLink(ctx, l, cfg); err != nil {
		return 0, err
	}
	return l.Index, nil
}

// wantLink is the device cfg describes, with its parent interface found by address.
func (m *Manager) wantLink(ctx context.Context, cfg *Config) (Link, error) {
	want := Link{Name: cfg.Device, Kind: "vxlan", VNI: cfg.VNI, Port: cfg.Port, MTU: cfg.MTU, MAC: cfg.MAC,
		SrcAddr: cfg.ParentAddr}
	if !cfg.ParentAddr.IsValid() {
		return want, nil
	}
	idx, err := m.h.LinkWithAddr(ctx, cfg.ParentAddr)
	if err != nil {
		return want, fmt.Errorf("finding the interface with %s: %w", cfg.ParentAddr, err)
	}
	if idx == 0 {
		return want, fmt.Errorf("no interface has the parent address %s", cfg.ParentAddr)
	}
	want.ParentIndex = idx
	return want, nil
}

// incompatible says why an existing link cannot be fixed in place into want ("" if it can).
func incompatible(l *Link, want Link) string {
	switch {
	case l.Kind != "vxlan":
		return fmt.Sprintf("type %q", l.Kind)
	case l.VNI != want.VNI:
		return fmt.Sprintf("VNI %d", l.VNI)
	case l.Port != want.Port:
		return fmt.Sprintf("port %d", l.Port)
	case l.Learning:
		return "learning on"
	case want.ParentIndex != 0 && l.ParentIndex != want.ParentIndex:
		return fmt.Sprintf("parent interface %d", l.ParentIndex)
	case want.SrcAddr.IsValid() && l.SrcAddr != want.SrcAddr:
		return fmt.Sprintf("source address %s", l.SrcAddr)
	}
	return ""
}

func (m *Manager) create(want Link) (*Link, error) {
	if err := m.h.AddVXLAN(want); err != nil {
		return nil, fmt.Errorf("creating the device: %w", err)
	}
	l, err := m.h.Link(want.Name)
	if err == nil && l == nil {
		err = fmt.Errorf("not found after creation")
	}
	if err != nil {
		return nil, fmt.Errorf("looking up the new device: %w", err)
	}
	m.log.Info().Str("device", want.Name).Int("vni", want.VNI).Int("port", want.Port).
		Int("parent", want.ParentIndex).Msg("Created VXLAN device")
	return l, nil
}

// fixLink sets what may differ in place: MTU, MAC, the tunnel address (and only it), up.
func (m *Manager) fixLink(ctx context.Context, l *Link, cfg *Config) error {
	if l.MTU != cfg.MTU {
		if err := m.h.SetMTU(l.Index, cfg.MTU); err != nil {
			return fmt.Errorf("setting MTU %d: %w", cfg.MTU, err)
		}
	}
	if !bytes.Equal(l.MAC, cfg.MAC) {
		if err := m.h.SetMAC(l.Index, cfg.MAC); err != nil {
			return fmt.Errorf("setting MAC %s: %w", cfg.MAC, err)
		}
	}
	if err := m.ensureAddr(ctx, l.Index, cfg); err != nil {
		return err
	}
	if !l.Up {
		if err := m.h.SetUp(l.Index); err != nil {
			return fmt.Errorf("setting up: %w", err)
		}
	}
	return nil
}

// ensureAddr leaves the tunnel address as the device's only address of its family (IPv6
// link-local addresses aside), adding it before removing others.
func (m *Manager) ensureAddr(ctx context.Context, index int, cfg *Config) error {
	have, err := m.h.Addrs(ctx, index, cfg.IPv6)
	if err != nil {
		return fmt.Errorf("listing addresses: %w", err)
	}
	want := cfg.tunnelPrefix()
	if !slices.Contains(have, want) {
		if err := m.h.AddAddr(index, want); err != nil {
			return fmt.Errorf("adding address %s: %w", want, err)
		}
	}
	for _, p := range have {
		if p != want {
			if err := m.h.DelAddr(index, p); err != nil {
				return fmt.Errorf("removing address %s: %w", p, err)
			}
		}
	}
	return nil
}
