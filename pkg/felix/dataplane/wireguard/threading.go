package wireguard

import (
	"fmt"
	"os"
	"path/filepath"
)

// sysClassNet is where the kernel shows felix's own namespace's devices (a variable for tests).
var sysClassNet = "/sys/class/net"

// ensureThreading sets threaded NAPI on a kernel device as Project Calico does (WireguardThreadingEnabled:
// "1" or "0" in /sys/class/net/<device>/threaded, once the device is up and has a peer, which the
// kernel requires). A userspace device has no NAPI: that is logged once. Sysfs shows felix's own
// namespace only, so a device in another namespace (tests) is left alone, also with a log line.
func (m *Manager) ensureThreading(d *Device) error {
	kind := m.kinds[d.Name]
	note := ""
	switch {
	case !d.Threaded && m.threaded[d.Name] == "":
		return nil // never enabled: nothing to set back
	case kind == kindUser:
		note = "WireguardThreadingEnabled does not apply to a userspace WireGuard device (no NAPI)"
	case m.nsPath != "":
		note = "WireguardThreadingEnabled is not set on a device outside felix's own network namespace (sysfs shows only that one)"
	case len(d.Peers) == 0:
		return nil // the kernel refuses the setting until the device has a peer
	}
	want := "0"
	if d.Threaded {
		want = "1"
	}
	if note != "" {
		if m.threaded[d.Name] != "n/a" {
			m.log.Warn().Str("device", d.Name).Str("kind", kind).Msg(note)
			m.threaded[d.Name] = "n/a"
		}
		return nil
	}
	if m.threaded[d.Name] == want {
		return nil
	}
	if err := writeSysfs(filepath.Join(sysClassNet, d.Name, "threaded"), want); err != nil {
		return fmt.Errorf("setting threaded NAPI to %s on %s: %w", want, d.Name, err)
	}
	m.log.Info().Str("device", d.Name).Str("threaded", want).Msg("Set NAPI threading on the WireGuard device")
	m.threaded[d.Name] = want
	return nil
}

// writeSysfs writes an existing sysfs attribute (never creating a file).
func writeSysfs(path, value string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(value); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
