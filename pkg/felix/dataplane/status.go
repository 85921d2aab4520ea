package dataplane

import (
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/ifaces"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/rules"
)

// Endpoint status values.
const (
	statusUp    = "up"
	statusDown  = "down"
	statusError = "error"
)

// statusKey identifies an endpoint for status reporting.
type statusKey struct {
	wep calc.WorkloadEndpointID
	hep string
}

// statusTracker remembers the status last reported per endpoint and reports changes.
type statusTracker struct {
	reported map[statusKey]reportedStatus
}

// reportedStatus is what was last reported for an endpoint: its status and, for a workload,
// the endpoint value (a change of its addressing is reported again).
type reportedStatus struct {
	status string
	ep     *calc.WorkloadEndpoint
}

func newStatusTracker() *statusTracker {
	return &statusTracker{reported: map[statusKey]reportedStatus{}}
}

// update computes every endpoint's status after a successful apply and returns those that
// changed. A workload is up when its interface is oper-up and was configured; a host endpoint
// when one of its interfaces is up ("*" always), in error when it resolved to no interface.
func (t *statusTracker) update(m *model, configured map[string]*calc.WorkloadEndpoint, hepIfaces map[string][]string) []EndpointStatus {
	now := map[statusKey]reportedStatus{}
	for id, ep := range m.weps {
		st := statusDown
		if m.ifaceUp(ep.Name) && configured[ep.Name] != nil {
			st = statusUp
		}
		now[statusKey{wep: id}] = reportedStatus{st, ep}
	}
	for name := range m.heps {
		now[statusKey{hep: name}] = reportedStatus{status: hostEndpointStatus(m, hepIfaces[name])}
	}
	var out []EndpointStatus
	for k, st := range now {
		if old, ok := t.reported[k]; !ok || old.status != st.status || !sameAddressing(old.ep, st.ep) {
			out = append(out, k.status(st))
		}
	}
	for k := range t.reported {
		if _, ok := now[k]; !ok {
			out = append(out, k.status(reportedStatus{}))
		}
	}
	t.reported = now
	slices.SortFunc(out, compareStatus)
	return out
}

// sameAddressing reports whether two values of a workload endpoint have the same interface,
// MAC and addresses (what the endpoint status file holds).
func sameAddressing(a, b *calc.WorkloadEndpoint) bool {
	if a == b {
		return true
	}
	return a != nil && b != nil && a.Name == b.Name && a.MAC == b.MAC &&
		slices.Equal(a.IPv4Nets, b.IPv4Nets) && slices.Equal(a.IPv6Nets, b.IPv6Nets)
}

func hostEndpointStatus(m *model, ifaces []string) string {
	switch {
	case len(ifaces) == 0:
		return statusError
	case slices.Contains(ifaces, rules.AllInterfaces) || slices.ContainsFunc(ifaces, m.ifaceUp):
		return statusUp
	}
	return statusDown
}

func (k statusKey) status(st reportedStatus) EndpointStatus {
	if k.hep != "" {
		return EndpointStatus{HostEndpoint: k.hep, Status: st.status}
	}
	id := k.wep
	return EndpointStatus{Workload: &id, Status: st.status, Endpoint: st.ep}
}

func compareStatus(a, b EndpointStatus) int {
	ka, kb := "h"+a.HostEndpoint, "h"+b.HostEndpoint
	if a.Workload != nil {
		ka = "w" + a.Workload.WorkloadID + "/" + a.Workload.EndpointID
	}
	if b.Workload != nil {
		kb = "w" + b.Workload.WorkloadID + "/" + b.Workload.EndpointID
	}
	switch {
	case ka < kb:
		return -1
	case ka > kb:
		return 1
	}
	return 0
}

// workloadConfigurer applies host-side interface settings to workload interfaces once per
// appearance of the interface (and again when the endpoint changes), remembering which
// endpoint value each interface was configured for.
type workloadConfigurer struct {
	ifaces      Interfaces
	ipv6        bool
	openStack   bool
	noHostAddrs bool // RouteSyncDisabled: the host-side addresses of workload interfaces are left alone
	configured  map[string]*calc.WorkloadEndpoint
}

// configure configures the interfaces of endpoints that exist and are not configured yet; it
// returns the errors of those that failed (they are retried on the next apply).
func (w *workloadConfigurer) configure(m *model) []error {
	errs := w.forget(m)
	for _, ep := range sortedEndpoints(m) {
		if _, exists := m.ifaces[ep.Name]; !exists || w.configured[ep.Name] == ep {
			continue
		}
		if err := w.configureOne(ep, w.skipHostAddrs(ep, m.ifaces[ep.Name])); err != nil {
			errs = append(errs, err)
			delete(w.configured, ep.Name)
			continue
		}
		w.configured[ep.Name] = ep
	}
	return errs
}

// forget drops the interfaces that are gone. An interface that stays after its endpoint went
// loses the BGP peering addresses it was given.
func (w *workloadConfigurer) forget(m *model) []error {
	var errs []error
	var inUse map[string]bool
	for name, ep := range w.configured {
		if _, ok := m.ifaces[name]; !ok {
			delete(w.configured, name)
			continue
		}
		if len(ep.LocalBGPPeerAddrs) == 0 || w.noHostAddrs {
			continue
		}
		if inUse == nil {
			inUse = map[string]bool{}
			for _, e := range m.weps {
				inUse[e.Name] = true
			}
		}
		if inUse[name] {
			continue
		}
		if err := w.ifaces.SetHostAddrs(name, nil, w.ipv6); err != nil {
			errs = append(errs, fmt.Errorf("removing the BGP peering addresses of %s: %w", name, err))
			continue
		}
		delete(w.configured, name)
	}
	return errs
}

// configureOne configures the interface of ep (its host addresses unless skipHostAddrs).
func (w *workloadConfigurer) configureOne(ep *calc.WorkloadEndpoint, skipHostAddrs bool) error {
	if err := w.ifaces.ConfigureWorkload(ep.Name, w.ipv6 && len(ep.IPv6Nets) > 0); err != nil {
		return err
	}
	if err := w.setHostAddrs(ep, skipHostAddrs); err != nil {
		return err
	}
	mac, err := net.ParseMAC(ep.MAC)
	if !w.openStack || err != nil {
		return nil
	}
	var addrs []netip.Addr
	for _, n := range slices.Concat(ep.IPv4Nets, ep.IPv6Nets) {
		if n.IsSingleIP() && (w.ipv6 || n.Addr().Is4()) {
			addrs = append(addrs, n.Addr())
		}
	}
	return w.ifaces.SetStaticNeighbors(ep.Name, mac, addrs)
}

// sortedEndpoints lists the workload endpoints in a stable order.
func sortedEndpoints(m *model) []*calc.WorkloadEndpoint {
	ids := slices.SortedFunc(maps.Keys(m.weps), calc.WorkloadEndpointID.Compare)
	out := make([]*calc.WorkloadEndpoint, len(ids))
	for i, id := range ids {
		out[i] = m.weps[id]
	}
	return out
}

// skipHostAddrs reports whether the host addresses of ep's interface are as wanted already,
// as far as the kernel needs not be asked: the monitor's view of the interface (st) shows them,
// and felix gave the interface no address itself (which the monitor may not have reported
// yet). Most endpoints are no BGP peer and their interfaces have no address to remove; reading
// the addresses of each of 1,000 interfaces was a dump of every address of the host each time
// (2.3 s of CPU and 1 GB of garbage at the start of a loaded host).
func (w *workloadConfigurer) skipHostAddrs(ep *calc.WorkloadEndpoint, st *ifaces.State) bool {
	prev := w.configured[ep.Name]
	return st != nil && (prev == nil || len(prev.LocalBGPPeerAddrs) == 0) &&
		ifaces.HostAddrsMatch(st.Addrs, ep.LocalBGPPeerAddrs, w.ipv6)
}

// setHostAddrs gives a workload interface's host side the BGP peering addresses of its endpoint,
// and no other address (unless skip: they are so); nothing with RouteSyncDisabled (Project
// Calico's DummyLinkAddrsManager).
func (w *workloadConfigurer) setHostAddrs(ep *calc.WorkloadEndpoint, skip bool) error {
	if w.noHostAddrs || skip {
		return nil
	}
	if err := w.ifaces.SetHostAddrs(ep.Name, ep.LocalBGPPeerAddrs, w.ipv6); err != nil {
		return fmt.Errorf("BGP peering addresses of %s (BGPPeer %q): %w", ep.Name, ep.LocalBGPPeer, err)
	}
	return nil
}
