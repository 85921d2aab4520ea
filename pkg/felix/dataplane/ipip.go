package dataplane

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"sync/atomic"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/routes"
	"github.com/calico-host/calico-host/pkg/ipip"
)

// ipipDevice is the desired tunl0: wanted when IpInIpEnabled says so, or (unset) when an IPv4
// pool has ipipMode Always or CrossSubnet, and this host has an IPIP tunnel address
// (IpInIpTunnelAddr, else the Node's). nil: IPIP off. Its MTU is the one of the routes through
// it (ipipRouteMTU, from the host MTU read at start), so device and routes never disagree.
func ipipDevice(cfg Config, m *model, hostMTU int) *ipip.Device {
	if !ipipWanted(cfg, m) {
		return nil
	}
	addr := cfg.IPIPTunnelAddr
	if !addr.IsValid() {
		addr = m.host.IPIPTunnelAddr
	}
	if !addr.Is4() {
		return nil
	}
	return &ipip.Device{MTU: ipipRouteMTU(cfg, hostMTU), Addr: addr} // the MTU of the routes through it too
}

func ipipWanted(cfg Config, m *model) bool {
	if cfg.IPIPEnabled != nil {
		return *cfg.IPIPEnabled
	}
	for _, p := range m.pools {
		if p.CIDR.Addr().Is4() && isEncap(p.IPIPMode) {
			return true
		}
	}
	return false
}

func isEncap(mode string) bool { return mode == "Always" || mode == "CrossSubnet" }

// ipipRoutes routes remote blocks (and tunnel addresses) of IPIP pools as Project Calico's
// felix does when ProgramClusterRoutes gives them to it (Enabled, EnabledIPIPOnly; otherwise BIRD
// programs them): through tunl0 onlink via the owning host's address for ipipMode Always, and for
// CrossSubnet when the host is in another subnet; for CrossSubnet within this host's subnet,
// directly via the host's address on the interface holding this host's address. Tunnel routes
// are left out while tunl0 is not ready; skipped counts them.
func ipipRoutes(cfg Config, m *model, ready bool) (out []routes.Route, skipped int) {
	if !cfg.Routes.ClusterRoutes.Programs(calc.PoolIPIP) {
		return nil, 0
	}
	parent := parentDevice(m, m.host.HostIPv4.Addr())
	for _, r := range m.routes {
		if r.Type == calc.RouteLocalWorkload || r.PoolType != calc.PoolIPIP || !r.DstNodeIP.Is4() || !r.Dst.Addr().Is4() {
			continue
		}
		switch {
		case r.IPIPMode == "CrossSubnet" && r.SameSubnet:
			if rt, ok := sameSubnetRoute(r, parent); ok {
				out = append(out, rt)
			}
		case ready:
			out = append(out, routes.Route{Dst: r.Dst, Dev: ipip.DeviceName, Gateway: r.DstNodeIP, Onlink: true})
		default:
			skipped++
		}
	}
	return out, skipped
}

// ipipRouteMTU is the MTU Project Calico's felix gives its routes through tunl0, tunl0's own:
// IpInIpMtu, else the host MTU less the IPIP overhead (1500 when the dataplane does not know
// the host MTU, as the tunnel piece assumes then).
func ipipRouteMTU(cfg Config, hostMTU int) int {
	if cfg.IPIPMTU > 0 {
		return cfg.IPIPMTU
	}
	return cmp.Or(hostMTU, 1500) - ipip.Overhead
}

// setIPIPRouteMTU sets the MTU of the routes through tunl0 (the onlink tunnel routes; the
// unencapsulated CrossSubnet routes have none, as in Project Calico).
func setIPIPRouteMTU(rs []routes.Route, mtu int) {
	for i := range rs {
		if rs[i].Dev == ipip.DeviceName {
			rs[i].MTU = mtu
		}
	}
}

// sameSubnetRoute routes r (a CrossSubnet destination whose host is in this host's subnet, or
// one of an unencapsulated pool) unencapsulated via that host, onlink, on parent (parentDevice
// of r's family), as Project Calico's no-encap route target; false when there is no parent or no
// host address of r's family.
func sameSubnetRoute(r *calc.Route, parent string) (routes.Route, bool) {
	if parent == "" || !r.DstNodeIP.IsValid() || r.DstNodeIP.Is4() != r.Dst.Addr().Is4() {
		return routes.Route{}, false
	}
	return routes.Route{Dst: r.Dst, Dev: parent, Gateway: r.DstNodeIP, Onlink: true}, true
}

func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}

// parentDevice is the interface holding host, this host's address of one family ("" when
// none does): where routes to hosts of the same subnet leave without encapsulation.
func parentDevice(m *model, host netip.Addr) string {
	if !host.IsValid() {
		return ""
	}
	names := make([]string, 0, len(m.ifaces))
	for name, st := range m.ifaces {
		if st != nil && slices.ContainsFunc(st.Addrs, func(p netip.Prefix) bool { return p.Addr() == host }) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	if len(names) == 0 {
		return ""
	}
	return names[0]
}

// ipipReport remembers what was last reported about IPIP, so that a change is logged once, and
// publishes the current problem for Problems (read from other goroutines).
type ipipReport struct {
	state   ipip.State
	skipped int
	problem atomic.Pointer[string]
}

// reportIPIP records tunl0's state after an apply: the metric, and when the state or the number
// of IPIP routes left unprogrammed changes, a log line and the problem text.
func (d *Dataplane) reportIPIP(st ipip.State, skipped int) {
	r := &d.ipipReport
	d.metrics.setIPIPState(st)
	if st == r.state && skipped == r.skipped {
		return
	}
	r.state, r.skipped = st, skipped
	if skipped == 0 && st != ipip.StateNoDriver {
		r.problem.Store(nil)
		return
	}
	msg := fmt.Sprintf("IPIP: %s is not available (%s): routes of IPIP pools cannot be programmed", ipip.DeviceName, st)
	if skipped > 0 {
		msg = fmt.Sprintf("IPIP: %d routes of IPIP pools not programmed: %s is not available (%s)", skipped, ipip.DeviceName, st)
	}
	r.problem.Store(&msg)
	d.log.Error().Int("routes", skipped).Stringer("state", st).Str("device", ipip.DeviceName).
		Str("param", "ProgramClusterRoutes").Stringer("value", d.cfg.Routes.ClusterRoutes).
		Msg("Routes of IPIP pools are not programmed, by felix (ProgramClusterRoutes) or BIRD: the IPIP tunnel device is not available")
}

// Problems describes what the dataplane cannot program although the datastore asks for it
// ("" when nothing); safe to call while Run runs (felix puts it in its status line).
func (d *Dataplane) Problems() string {
	if p := d.ipipReport.problem.Load(); p != nil {
		return *p
	}
	return ""
}
