package routes

import (
	"fmt"
	"net/netip"
	"strings"

	"golang.org/x/sys/unix"
)

// Scope is a route's scope.
type Scope uint8

// Scopes. ScopeAuto means link for a device route without a gateway, global otherwise.
// The kernel reports every IPv6 route with global scope, so IPv6 routes are always ScopeGlobal.
const (
	ScopeAuto Scope = iota
	ScopeGlobal
	ScopeLink
	ScopeHost
)

func (s Scope) String() string {
	switch s {
	case ScopeAuto:
		return "auto"
	case ScopeGlobal:
		return "global"
	case ScopeLink:
		return "link"
	case ScopeHost:
		return "host"
	}
	return fmt.Sprintf("scope(%d)", uint8(s))
}

// Route is one desired route. A route has a device (Dev), or is a blackhole; a route with a
// gateway and no device is not supported (the kernel would pick the device, and drift checks
// could not tell whether it changed).
type Route struct {
	Dst       netip.Prefix
	Dev       string     // outgoing interface; empty only for blackholes
	Gateway   netip.Addr // next hop; invalid = directly connected
	Onlink    bool       // the gateway is on the device's link even if no address says so
	Blackhole bool
	Throw     bool // a throw route: the lookup goes on with the next routing rule (no device)
	Scope     Scope
	Table     int        // 0 = main
	Src       netip.Addr // preferred source address; invalid = none
	// Metric is the route's priority; 0 = the kernel's default (IPv4 0, IPv6 1024).
	Metric int
	// Protocol is the route protocol written; 0 = the Reconciler's (Ownership.Protocol).
	Protocol int
	MTU      int // the route's MTU metric; 0 = none (the device's)
	// Owner names what the route is for in logs (e.g. a workload endpoint); never written.
	Owner string
}

// String renders the route roughly as `ip route` does.
func (r Route) String() string {
	var b strings.Builder
	if r.Blackhole {
		b.WriteString("blackhole ")
	}
	if r.Throw {
		b.WriteString("throw ")
	}
	b.WriteString(r.Dst.String())
	if r.Gateway.IsValid() {
		b.WriteString(" via " + r.Gateway.String())
	}
	if r.Dev != "" {
		b.WriteString(" dev " + r.Dev)
	}
	if r.Table != 0 && r.Table != unix.RT_TABLE_MAIN {
		fmt.Fprintf(&b, " table %d", r.Table)
	}
	if r.Scope != ScopeAuto && r.Scope != ScopeGlobal {
		b.WriteString(" scope " + r.Scope.String())
	}
	if r.Src.IsValid() {
		b.WriteString(" src " + r.Src.String())
	}
	if r.Onlink {
		b.WriteString(" onlink")
	}
	if r.MTU != 0 {
		fmt.Fprintf(&b, " mtu %d", r.MTU)
	}
	return b.String()
}

// canonical returns the route as the kernel will report it back: masked destination, explicit
// main table, concrete scope and metric (the protocol is left to the Reconciler). It fails for routes the kernel cannot hold.
func canonical(r Route) (Route, error) {
	r.Owner = ""
	if !r.Dst.IsValid() {
		return r, fmt.Errorf("route %s: invalid destination", r)
	}
	r.Dst = r.Dst.Masked()
	v6 := r.Dst.Addr().Is6()
	if r.Gateway.IsValid() && r.Gateway.Is6() != v6 {
		return r, fmt.Errorf("route %s: gateway family differs from destination", r)
	}
	if r.Src.IsValid() && r.Src.Is6() != v6 {
		return r, fmt.Errorf("route %s: source family differs from destination", r)
	}
	if (r.Blackhole || r.Throw) && (r.Dev != "" || r.Gateway.IsValid() || r.Blackhole == r.Throw) {
		return r, fmt.Errorf("route %s: a blackhole or throw route has no device or gateway", r)
	}
	if !r.Blackhole && !r.Throw && r.Dev == "" {
		return r, fmt.Errorf("route %s: no device", r)
	}
	if r.Table == 0 {
		r.Table = unix.RT_TABLE_MAIN
	}
	if !r.Gateway.IsValid() {
		r.Onlink = false
	}
	if r.Metric < 0 {
		return r, fmt.Errorf("route %s: negative metric %d", r, r.Metric)
	}
	if r.Metric == 0 {
		r.Metric = defaultMetric(r.Dst)
	}
	if r.Protocol < 0 || r.Protocol > 255 {
		return r, fmt.Errorf("route %s: protocol %d is outside 0..255", r, r.Protocol)
	}
	switch {
	case v6:
		r.Scope = ScopeGlobal
	case r.Scope == ScopeAuto && r.Dev != "" && !r.Gateway.IsValid():
		r.Scope = ScopeLink
	case r.Scope == ScopeAuto:
		r.Scope = ScopeGlobal
	}
	return r, nil
}

// key identifies a route in the kernel: the kernel keeps one route per destination, table and
// metric (we never use TOS).
type key struct {
	table  int
	dst    netip.Prefix
	metric int
}

// defaultMetric is the metric the kernel gives a route added with metric 0.
func defaultMetric(dst netip.Prefix) int {
	if dst.Addr().Is6() {
		return 1024 // IP6_RT_PRIO_USER
	}
	return 0
}

// KernelRoute is a route as the kernel holds it (Metric and Protocol concrete).
type KernelRoute struct {
	Route         // canonical; Dev is filled by the Reconciler from LinkIndex
	LinkIndex int // outgoing interface index (0 for blackholes)
	// Multipath are the gateways of a multipath route's next hops (read, never written).
	Multipath []netip.Addr
}

// gateways are the route's next-hop addresses.
func (k KernelRoute) gateways() []netip.Addr {
	if k.Gateway.IsValid() {
		return append([]netip.Addr{k.Gateway}, k.Multipath...)
	}
	return k.Multipath
}

func (k KernelRoute) key() key { return key{table: k.Table, dst: k.Dst, metric: k.Metric} }
