package topo

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/netip"
	"strings"
	"sync/atomic"

	"github.com/google/uuid"
)

// OpenStack: what networking-calico (the Neutron driver) and Nova do, reproduced from
// reference/openstack-contract.md. Nova creates a tap interface per VM port; the driver writes
// WorkloadEndpoints and "ossg." NetworkPolicies into etcd as raw JSON with compare-and-swap
// transactions; felix enforces them and reports agent and port status under /calico/felix/v2/.
// Nothing here goes through calico-host's own code: keys and JSON are built by hand.

// OpenStackNamespace is the WorkloadEndpoint and policy namespace without a region.
const OpenStackNamespace = "openstack"

// OpenStackNamespaceFor is the namespace networking-calico uses for a region ("" = none).
func OpenStackNamespaceFor(region string) string {
	if region == "" {
		return OpenStackNamespace
	}
	return "openstack-region-" + region
}

// RegionString is the region segment of /calico/felix/v2/<rs>/... ("no-region" or
// "region-<name>").
func RegionString(region string) string {
	if region == "" {
		return "no-region"
	}
	return "region-" + region
}

// The Neutron subnets the VMs are on. Their gateways are answered by the host (proxy ARP for
// IPv4, the tap's link-local address for IPv6), as with networking-calico's DHCP agent.
var (
	VMSubnet   = netip.MustParsePrefix("10.65.250.0/24")
	VMGateway  = netip.MustParseAddr("10.65.250.1")
	VMSubnet6  = netip.MustParsePrefix("fd5c:1:0:fa::/64")
	VMGateway6 = netip.MustParseAddr("fd5c:1:0:fa::1")
	// VMNetworkID is the Neutron network of every VM (annotation openstack.projectcalico.org/network-id).
	VMNetworkID = "7a1e6f5c-0000-4000-8000-00000000beef"
)

// FloatingIP is a Neutron floating IP associated with one of the port's fixed IPs.
type FloatingIP struct {
	Internal, External netip.Addr
}

// Port is the Neutron port of a VM as the driver sees it; VM.WriteEndpoint turns it into the
// WorkloadEndpoint. Change it and call WriteEndpoint again to model a port update.
type Port struct {
	FixedIPs            []netip.Addr      // /32 or /128 in ipNetworks
	AllowedAddressPairs []netip.Addr      // in ipNetworks and allowedIps
	SecurityGroups      map[string]string // id -> name
	FloatingIPs         []FloatingIP
	FQDN                string           // dns_assignment: annotation openstack.projectcalico.org/fqdn
	QoS                 map[string]int64 // qosControls, omitted when empty
}

// VMOptions describe a VM and its port.
type VMOptions struct {
	Port
	// Namespace of the WorkloadEndpoint; default: the host's region namespace.
	Namespace string
	// Unconfigured leaves the VM's eth0 up without any address (a VM still asking DHCP).
	Unconfigured bool
	// ExtraAddrs are configured in the VM but not known to Neutron (spoofing tests).
	ExtraAddrs []netip.Addr
}

// VM is an instance's port on a host: a namespace behind a tap interface.
type VM struct {
	NS        *Netns
	Host      *Host
	Name      string // instance name
	DeviceID  string // Nova instance UUID
	PortID    string // Neutron port UUID
	Tap       string // "tap" + PortID[:11]
	MAC       string // the VM's MAC (Neutron port mac_address)
	IP        netip.Addr
	IP6       netip.Addr // first IPv6 fixed IP, if any
	Namespace string
	WEPName   string
	Port      Port

	opts VMOptions
}

var vmSeq atomic.Int64

// AddVM plugs a VM with one IPv4 address in and writes its WorkloadEndpoint, with the given
// security groups (id -> name).
func (h *Host) AddVM(ctx context.Context, name string, ip netip.Addr, sgs map[string]string) (*VM, error) {
	return h.AddVMWith(ctx, name, VMOptions{Port: Port{FixedIPs: []netip.Addr{ip}, SecurityGroups: sgs}})
}

// AddVMWith plugs a VM in as Nova does (tap interface; the VM's addresses configured statically
// here, by DHCP in real life) and then writes its WorkloadEndpoint as networking-calico does.
func (h *Host) AddVMWith(ctx context.Context, name string, o VMOptions) (*VM, error) {
	vm, err := h.NewVM(ctx, name, o)
	if err != nil {
		return nil, err
	}
	if err := vm.Plug(ctx); err != nil {
		return nil, err
	}
	return vm, vm.WriteEndpoint(ctx)
}

// NewVM creates the VM's namespace and identity without plugging it in or writing anything.
func (h *Host) NewVM(ctx context.Context, name string, o VMOptions) (*VM, error) {
	vm := &VM{Host: h, Name: name, DeviceID: uuid.NewString(), PortID: uuid.NewString(), Port: o.Port, opts: o}
	vm.Tap = "tap" + vm.PortID[:11]
	mac := make([]byte, 3)
	rand.Read(mac)
	vm.MAC = fmt.Sprintf("fa:16:3e:%02x:%02x:%02x", mac[0], mac[1], mac[2])
	vm.Namespace = o.Namespace
	if vm.Namespace == "" {
		vm.Namespace = OpenStackNamespaceFor(h.Region)
	}
	vm.setName()
	for _, a := range o.FixedIPs {
		if a.Is4() && !vm.IP.IsValid() {
			vm.IP = a
		}
		if a.Is6() && !vm.IP6.IsValid() {
			vm.IP6 = a
		}
	}
	var err error
	vm.NS, err = h.f.newNetns(ctx, fmt.Sprintf("h%dvm%d", h.Index, vmSeq.Add(1)))
	return vm, err
}

// setName derives the WorkloadEndpoint name: <host>-openstack-<device_id>-<port_id>, with every
// "-" inside a part doubled (endpoints.py).
func (vm *VM) setName() {
	parts := []string{vm.Host.Name, "openstack", vm.DeviceID, vm.PortID}
	for i, p := range parts {
		parts[i] = strings.ReplaceAll(p, "-", "--")
	}
	vm.WEPName = strings.Join(parts, "-")
}

// HostMAC is the MAC of the host side of the tap: the port MAC with "fe" as first byte
// (vif_details mac_address).
func (vm *VM) HostMAC() string { return "fe" + vm.MAC[2:] }

// TapLinkLocal is the tap's IPv6 link-local address (EUI-64 of HostMAC), the VM's IPv6 router.
func (vm *VM) TapLinkLocal() netip.Addr {
	var m [6]byte
	fmt.Sscanf(vm.HostMAC(), "%02x:%02x:%02x:%02x:%02x:%02x", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5])
	return netip.AddrFrom16([16]byte{0: 0xfe, 1: 0x80, 8: m[0] ^ 2, 9: m[1], 10: m[2], 11: 0xff, 12: 0xfe, 13: m[3], 14: m[4], 15: m[5]})
}

// Plug creates the tap (a veth whose far end is the VM's eth0) and configures the VM.
func (vm *VM) Plug(ctx context.Context) error {
	if _, err := run(ctx, nil, "ip", "-n", vm.Host.NS.Name, "link", "add", vm.Tap, "type", "veth", "peer", "name", "eth0", "netns", vm.NS.Name); err != nil {
		return err
	}
	if err := vm.Host.NS.script(ctx, "link set "+vm.Tap+" address "+vm.HostMAC(), "link set "+vm.Tap+" up"); err != nil {
		return err
	}
	lines := []string{"link set eth0 address " + vm.MAC, "link set eth0 up"}
	if !vm.opts.Unconfigured {
		lines = append(lines, vm.addrLines()...)
	}
	return vm.NS.script(ctx, lines...)
}

// addrLines configure the fixed IPs, allowed address pairs and extra addresses, and the default
// routes: via the subnet gateway (proxy ARP) and via the tap's link-local address.
func (vm *VM) addrLines() []string {
	var lines []string
	var has4, has6 bool
	for _, a := range vm.vmAddrs() {
		if a.Is4() {
			has4 = true
			lines = append(lines, fmt.Sprintf("addr add %s/%d dev eth0", a, VMSubnet.Bits()))
		} else {
			has6 = true
			// networking-calico's dnsmasq advertises IPv6 subnets off-link (static,off-link):
			// everything goes to the router.
			lines = append(lines, fmt.Sprintf("-6 addr add %s/%d dev eth0 nodad noprefixroute", a, VMSubnet6.Bits()))
		}
	}
	if has4 {
		lines = append(lines, "route add default via "+VMGateway.String())
	}
	if has6 {
		lines = append(lines, "-6 route add default via "+vm.TapLinkLocal().String()+" dev eth0")
	}
	return lines
}

func (vm *VM) vmAddrs() []netip.Addr {
	var out []netip.Addr
	out = append(out, vm.Port.FixedIPs...)
	out = append(out, vm.Port.AllowedAddressPairs...)
	return append(out, vm.opts.ExtraAddrs...)
}

// Unplug deletes the tap (Nova on VM deletion or migration away); the VM's namespace stays.
func (vm *VM) Unplug(ctx context.Context) error {
	_, err := vm.Host.Exec(ctx, "ip", "link", "del", vm.Tap)
	return err
}

// Exec runs a command in the VM.
func (vm *VM) Exec(ctx context.Context, args ...string) (string, error) {
	return vm.NS.Exec(ctx, args...)
}
