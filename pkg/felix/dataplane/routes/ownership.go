package routes

import (
	"net/netip"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// Route protocols of Project Calico's felix.
const (
	// DefaultProtocol is the protocol of felix's own routes that are not device routes
	// (dataplanedefs.DefaultRouteProto): same-subnet, IPIP, blackhole and WireGuard-table routes
	// while DeviceRouteProtocol is RTPROT_BOOT. Earlier versions of calico-host wrote every route
	// with it, so it is always ours.
	DefaultProtocol = 80
)

// Ownership decides which kernel routes are the Reconciler's: it reads only those, deletes only
// those, and writes desired routes with Protocol (unless a route names its own). It mirrors Project
// Calico's main-table ownership policy (routetable/ownershippol):
//   - a route carrying one of Exclusive is ours in the main table and in Tables (felix's own
//     routing tables: WireGuard's); elsewhere only DefaultProtocol is (felix wrote it; calico-host
//     wrote every route with it before DeviceRouteProtocol): a DeviceRouteProtocol that other
//     software uses (static, kernel) never reaches their tables or the local table;
//   - in the main table, a route through a workload interface (a WorkloadPrefixes prefix) is ours
//     when RemoveExternal is set, else when it carries one of DeviceProtocols; never a BIRD route
//     (BIRD installs the routes it learns from a workload peering with the host there: Project
//     Calico leaves them alone on the interfaces of such workloads, we on every workload interface);
//   - in the main table, every route through one of Devices (the VXLAN devices) is ours, and
//     BIRD's routes through one of BIRDDevices (tunl0 while felix programs the IPIP pools'
//     routes: Project Calico's OwnBIRDIPIPRoutes, so that the routes a BIRD that no longer
//     programs them left behind are removed);
//   - nothing else is: not IPv6 fe80::/64 routes (the kernel's), not other devices' or no-device
//     routes of other protocols, not routes through interfaces unknown when the kernel was read.
type Ownership struct {
	Protocol         int   // written on desired routes whose Protocol is 0
	Exclusive        []int // protocols that only we use
	DeviceProtocols  []int // protocols that make a route through a workload interface ours
	WorkloadPrefixes []string
	RemoveExternal   bool     // every route through a workload interface is ours
	Devices          []string // interfaces all of whose main-table routes are ours
	BIRDDevices      []string // interfaces whose main-table BIRD routes are ours
	Tables           []int    // felix's own routing tables besides main (Exclusive protocols are ours there)
}

// NewOwnership returns Project Calico's policy for deviceProtocol (DeviceRouteProtocol): with
// RTPROT_BOOT (its default), which other software uses too, our other routes carry
// DefaultProtocol and a boot route is ours only through a workload interface; with any other
// value every route carries it. DefaultProtocol stays exclusive in both cases, so that routes
// written before a change of DeviceRouteProtocol are still recognised and removed.
func NewOwnership(deviceProtocol int, workloadPrefixes []string, removeExternal bool, devices []string, tables ...int) Ownership {
	o := Ownership{Protocol: deviceProtocol, WorkloadPrefixes: slices.Clone(workloadPrefixes),
		RemoveExternal: removeExternal, Devices: slices.Clone(devices), Tables: slices.Clone(tables)}
	if deviceProtocol == unix.RTPROT_BOOT {
		o.Protocol = DefaultProtocol
	}
	o.Exclusive = uniq(o.Protocol, DefaultProtocol)
	o.DeviceProtocols = uniq(deviceProtocol, o.Protocol, DefaultProtocol)
	return o
}

func uniq(ps ...int) []int { slices.Sort(ps); return slices.Compact(ps) }

// IsWorkload reports whether dev is a workload interface.
func (o *Ownership) IsWorkload(dev string) bool {
	for _, p := range o.WorkloadPrefixes {
		if p != "" && strings.HasPrefix(dev, p) {
			return true
		}
	}
	return false
}

var v6Bootstrap = netip.MustParsePrefix("fe80::/64")

// owns reports whether a kernel route (Dev resolved from LinkIndex, "" if unknown) is ours.
func (o *Ownership) owns(kr KernelRoute) bool {
	if kr.Protocol == DefaultProtocol {
		return true
	}
	if slices.Contains(o.Exclusive, kr.Protocol) && (kr.Table == unix.RT_TABLE_MAIN || slices.Contains(o.Tables, kr.Table)) {
		return true
	}
	if kr.Table != unix.RT_TABLE_MAIN || kr.Dev == "" || kr.Blackhole || kr.Dst == v6Bootstrap {
		return false
	}
	if kr.Protocol == unix.RTPROT_BIRD && slices.Contains(o.BIRDDevices, kr.Dev) {
		return true
	}
	if o.IsWorkload(kr.Dev) {
		if kr.Protocol == unix.RTPROT_BIRD {
			return false
		}
		return o.RemoveExternal || slices.Contains(o.DeviceProtocols, kr.Protocol)
	}
	return slices.Contains(o.Devices, kr.Dev)
}
