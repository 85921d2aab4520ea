package wireguard

import (
	"fmt"
	"net/netip"
	"slices"
	"time"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
)

// Encapsulation overheads and device kinds.
const (
	MTUOverhead          = 60 // host MTU minus this is the IPv4 device's default MTU
	MTUOverheadV6        = 80
	kindKernel, kindUser = "kernel", "userspace"
)

// Family is one IP version's WireGuard settings that stay the same whether it is on or off: what
// felix owns (device name, routing table and rule) so it can also remove them.
type Family struct {
	V6           bool
	Name         string // device name
	Table        int    // felix's WireGuard routing table
	RulePriority int
	Mark         uint32 // the firewall mark bit the device sets on its own UDP packets
}

// Device is the desired state of one IP version's device.
type Device struct {
	Family
	PrivateKey wgtypes.Key
	ListenPort int
	MTU        int
	Addr       netip.Addr // this host's WireGuard tunnel address (invalid: none)
	Keepalive  time.Duration
	Threaded   bool   // threaded NAPI (kernel devices only)
	Peers      []Peer // sorted by public key
	// Throw are the destinations felix's WireGuard table throws back to the next routing rule
	// (the main table): this host's workloads and the prefixes of remote hosts that are not
	// peers (no key, no address of the family, or a key another host publishes too). Sorted.
	Throw []netip.Prefix
}

// Peer is another host with a published public key.
type Peer struct {
	Node       string
	PublicKey  wgtypes.Key
	Endpoint   netip.AddrPort
	AllowedIPs []netip.Prefix // sorted, masked
}

// validTable: a routing table felix may own (1 to 2^32-1, never the kernel's 253-255).
func validTable(t int) bool { return t >= 1 && t <= 1<<32-1 && (t < 253 || t > 255) }

// validate checks what reaches the kernel.
func (d *Device) validate() error {
	switch {
	case d.Name == "" || len(d.Name) > 15:
		return fmt.Errorf("invalid WireGuard interface name %q", d.Name)
	case d.ListenPort < 1 || d.ListenPort > 65535:
		return fmt.Errorf("%s: invalid listening port %d", d.Name, d.ListenPort)
	case d.Mark == 0 || !validTable(d.Table) || d.RulePriority < 1 || d.RulePriority > 32765:
		return fmt.Errorf("%s: invalid mark %#x, table %d or rule priority %d", d.Name, d.Mark, d.Table, d.RulePriority)
	case d.MTU != 0 && (d.MTU < 576 || d.MTU > 65535) || d.MTU != 0 && d.V6 && d.MTU < 1280:
		return fmt.Errorf("%s: invalid MTU %d", d.Name, d.MTU)
	}
	for _, p := range d.Peers {
		if !p.Endpoint.IsValid() || p.Endpoint.Addr().Is6() != d.V6 {
			return fmt.Errorf("%s: peer %s has no endpoint of the device's family", d.Name, p.Node)
		}
		if slices.ContainsFunc(p.AllowedIPs, func(a netip.Prefix) bool { return a.Addr().Is6() != d.V6 }) {
			return fmt.Errorf("%s: peer %s has an allowed IP of the other family", d.Name, p.Node)
		}
	}
	return nil
}
