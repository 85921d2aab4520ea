package vxlan

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"

	"github.com/calico-host/calico-host/internal/atomicfile"
)

// Project Calico's device names (felix dataplanedefs) and encapsulation overheads.
const (
	DeviceV4 = "vxlan.calico"
	DeviceV6 = "vxlan-v6.calico"
	// OverheadV4 and OverheadV6 are the encapsulation overheads subtracted from the host MTU.
	OverheadV4 = 50
	OverheadV6 = 70
)

// Config is the desired tunnel device.
type Config struct {
	Device     string // DeviceV4 or DeviceV6
	VNI, Port  int
	MTU        int
	MAC        net.HardwareAddr
	TunnelAddr netip.Addr // this host's tunnel address, /32 or /128 on the device
	// ParentAddr is this host's underlay address (its Node address): the interface holding it is
	// the device's parent and the address its VXLAN source. Invalid: let the kernel choose.
	ParentAddr netip.Addr
	IPv6       bool
}

func (c *Config) validate() error {
	switch {
	case c.Device == "":
		return fmt.Errorf("no device name")
	case c.VNI <= 0 || c.VNI >= 1<<24:
		return fmt.Errorf("VNI %d out of range", c.VNI)
	case c.Port <= 0 || c.Port > 65535:
		return fmt.Errorf("port %d out of range", c.Port)
	case c.MTU < 68:
		return fmt.Errorf("MTU %d too small", c.MTU)
	case len(c.MAC) != 6:
		return fmt.Errorf("MAC %q is not a 6-byte MAC", c.MAC)
	case !c.TunnelAddr.IsValid() || c.TunnelAddr.Is6() != c.IPv6:
		return fmt.Errorf("tunnel address %s does not match the device's family", c.TunnelAddr)
	case c.ParentAddr.IsValid() && c.ParentAddr.Is6() != c.IPv6:
		return fmt.Errorf("parent address %s does not match the device's family", c.ParentAddr)
	}
	return nil
}

func (c *Config) equal(o *Config) bool {
	return c.Device == o.Device && c.VNI == o.VNI && c.Port == o.Port && c.MTU == o.MTU &&
		bytes.Equal(c.MAC, o.MAC) && c.TunnelAddr == o.TunnelAddr && c.ParentAddr == o.ParentAddr &&
		c.IPv6 == o.IPv6
}

func (c *Config) clone() *Config {
	n := *c
	n.MAC = bytes.Clone(c.MAC)
	return &n
}

// tunnelPrefix is the tunnel address as a host prefix (/32 or /128).
func (c *Config) tunnelPrefix() netip.Prefix {
	return netip.PrefixFrom(c.TunnelAddr, c.TunnelAddr.BitLen())
}

// VTEP is another host's tunnel endpoint.
type VTEP struct {
	Node       string // for logs
	MAC        net.HardwareAddr
	TunnelAddr netip.Addr // its device's address: the ARP/NDP entry
	ParentAddr netip.Addr // its underlay address: the FDB entry's destination
}

// DeviceMTU is the tunnel device's MTU: the configured one, or the host MTU minus the
// encapsulation overhead (50 bytes, 70 for IPv6).
func DeviceMTU(hostMTU int, configured int, ipv6 bool) int {
	if configured > 0 {
		return configured
	}
	if ipv6 {
		return hostMTU - OverheadV6
	}
	return hostMTU - OverheadV4
}

// WriteMTUFile atomically and durably writes the workload MTU (decimal, no newline, as felix
// writes it) for the CNI plugin, creating the directory; an identical file is left alone.
func WriteMTUFile(path string, mtu int) error {
	content := []byte(strconv.Itoa(mtu))
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, content) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("writing MTU file: %w", err)
	}
	if err := atomicfile.Write(path, content, 0o644); err != nil {
		return fmt.Errorf("writing MTU file: %w", err)
	}
	return nil
}
