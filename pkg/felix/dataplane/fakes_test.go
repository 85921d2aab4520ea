package dataplane

import (
	"context"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/internal/logtest"
	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/ifaces"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/routes"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/rules"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/vxlan"
	"github.com/calico-host/calico-host/pkg/ipip"
	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/fake"
)

// fakeRoutes records the routes it is given.
type fakeRoutes struct {
	mu      sync.Mutex
	last    []routes.Route
	applies int
	resyncs int
	fail    []error
}

func (f *fakeRoutes) Apply(_ context.Context, rs []routes.Route) (routes.Stats, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.applies++
	if len(f.fail) > 0 {
		err := f.fail[0]
		f.fail = f.fail[1:]
		return routes.Stats{}, err
	}
	f.last = slices.Clone(rs)
	return routes.Stats{}, nil
}

func (f *fakeRoutes) RequestResync() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.resyncs++
}

func (f *fakeRoutes) InterfaceChanged(string) {}

// routes are the last desired routes, without their Owner (only for logs).
func (f *fakeRoutes) routes() []routes.Route {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := slices.Clone(f.last)
	for i := range out {
		out[i].Owner = ""
	}
	return out
}

// fakeIfaces reports the interfaces a test sets, and records configuration calls.
type fakeIfaces struct {
	mu         sync.Mutex
	initial    []ifaces.Update
	updates    chan ifaces.Update
	configured []string
	ipv6       map[string]bool // the ipv6 argument of the last ConfigureWorkload per interface
	neighbors  map[string][]netip.Addr
	hostAddrs  map[string][]netip.Addr // the last SetHostAddrs per interface
	failConfig map[string]error
}

func newFakeIfaces(initial ...ifaces.Update) *fakeIfaces {
	return &fakeIfaces{initial: initial, updates: make(chan ifaces.Update, 64), ipv6: map[string]bool{},
		neighbors: map[string][]netip.Addr{}, hostAddrs: map[string][]netip.Addr{}, failConfig: map[string]error{}}
}

func (f *fakeIfaces) Run(ctx context.Context, out chan<- ifaces.Update) {
	for _, u := range append(slices.Clone(f.initial), ifaces.Update{InSync: true}) {
		select {
		case out <- u:
		case <-ctx.Done():
			return
		}
	}
	for {
		select {
		case u := <-f.updates:
			select {
			case out <- u:
			case <-ctx.Done():
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

func (f *fakeIfaces) ConfigureWorkload(name string, ipv6 bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.failConfig[name]; err != nil {
		return err
	}
	f.configured = append(f.configured, name)
	f.ipv6[name] = ipv6
	return nil
}

func (f *fakeIfaces) SetStaticNeighbors(name string, _ net.HardwareAddr, addrs []netip.Addr) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.neighbors[name] = addrs
	return nil
}

func (f *fakeIfaces) SetHostAddrs(name string, addrs []netip.Addr, _ bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hostAddrs[name] = slices.Clone(addrs)
	return nil
}

func (f *fakeIfaces) hostAddrsOf(name string) ([]netip.Addr, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a, ok := f.hostAddrs[name]
	return a, ok
}

func (f *fakeIfaces) configuredList() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.configured)
}

// fakeVXLAN records the devices it is given.
type fakeVXLAN struct {
	mu   sync.Mutex
	last []vxlan.Device
}

func (f *fakeVXLAN) Apply(_ context.Context, devs []vxlan.Device) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.last = slices.Clone(devs)
	return nil
}

func (f *fakeVXLAN) InterfaceChanged(string) {}

func (f *fakeVXLAN) devices() []vxlan.Device {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.last)
}

// harness is a Dataplane on the nft fake and fake kernel pieces, driven step by step (without
// its loop) by tests.
type harness struct {
	t      testing.TB
	fake   *fake.Backend
	routes *fakeRoutes
	ifaces *fakeIfaces
	vxlan  *fakeVXLAN
	ipip   *ipip.Fake
	dp     *Dataplane
}

// ipipOption is tunl0 over h's recording fake (created on first use).
func (h *harness) ipipOption() Option {
	h.ipip = ipip.NewFake()
	mtu := func(context.Context) (int, error) { return 1500, nil }
	return WithIPIP(ipip.New(h.ipip, testLogger(h.t), mtu))
}

// newHarness runs a Dataplane on fakes, with felix's defaults where cfg leaves a field zero
// (FelixDefaults).
func newHarness(t testing.TB, cfg Config) *harness {
	h := &harness{t: t, fake: fake.New(), routes: &fakeRoutes{}, ifaces: newFakeIfaces(), vxlan: &fakeVXLAN{}}
	dp, err := New(FelixDefaults(cfg), testLogger(t), WithNFTBackend(h.fake), WithRoutes(h.routes), WithInterfaces(h.ifaces), WithVXLAN(h.vxlan), h.ipipOption())
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h.dp = dp
	h.dp.model.inSync, h.dp.model.ifacesInSync = true, true
	return h
}

// testLogger is the kit's test logger raised to errors, the level these tests always had: many
// feed objects the dataplane refuses, each with a warning.
func testLogger(t testing.TB) zerolog.Logger {
	return logtest.Logger(t).Level(zerolog.ErrorLevel)
}

// send records updates and applies; it fails the test on error.
func (h *harness) send(ups ...calc.Update) []EndpointStatus {
	h.t.Helper()
	for _, u := range ups {
		h.dp.model.apply(u)
	}
	st, err := h.dp.apply(context.Background())
	if err != nil {
		h.t.Fatalf("apply: %v", err)
	}
	return st
}

// up reports interfaces as existing and up.
func (h *harness) up(names ...string) {
	for _, n := range names {
		h.dp.model.applyIface(iface(n, true))
	}
}

// iface is the monitor's update for an interface with the given state and addresses.
func iface(name string, up bool, addrs ...netip.Prefix) ifaces.Update {
	return ifaces.Update{Name: name, State: &ifaces.State{Name: name, Up: up, Addrs: addrs}}
}

// nullRoutes, nullInterfaces and nullVXLAN stand in for kernel pieces a test does not use: no
// routes, no interfaces (the monitor is in sync at once), no devices.
type nullRoutes struct{}

func (nullRoutes) Apply(context.Context, []routes.Route) (routes.Stats, error) {
	return routes.Stats{}, nil
}
func (nullRoutes) RequestResync()          {}
func (nullRoutes) InterfaceChanged(string) {}

type nullInterfaces struct{}

func (nullInterfaces) Run(ctx context.Context, out chan<- ifaces.Update) {
	select {
	case out <- ifaces.Update{InSync: true}:
	case <-ctx.Done():
	}
}
func (nullInterfaces) ConfigureWorkload(string, bool) error { return nil }
func (nullInterfaces) SetStaticNeighbors(string, net.HardwareAddr, []netip.Addr) error {
	return nil
}
func (nullInterfaces) SetHostAddrs(string, []netip.Addr, bool) error { return nil }

type nullVXLAN struct{}

func (nullVXLAN) Apply(context.Context, []vxlan.Device) error { return nil }
func (nullVXLAN) InterfaceChanged(string)                     {}

// nullIPIP stands in for tunl0 where a test does not use it: IPIP is always off.
type nullIPIP struct{}

func (nullIPIP) Apply(context.Context, *ipip.Device) (ipip.State, error) { return ipip.StateOff, nil }
func (nullIPIP) RequestResync()                                          {}
func (nullIPIP) InterfaceChanged(string)                                 {}

// buildRuleset builds the desired tables from the model, without host endpoints, VXLAN or IPIP.
func (d *Dataplane) buildRuleset() []*nft.Table {
	in := d.model.rulesetInput(nil, nil, false)
	tables := d.ruleset.Build(in)
	d.model.rulesetBuilt(in)
	return tables
}

// chainRules is a chain of the ip table as nft lists it, one rule a line ("" when absent).
func (h *harness) chainRules(name string) string { return h.chainRulesIn(0, name) }

// chainRulesIn is chainRules for the table of index i (0 ip, 1 ip6 when both are on).
func (h *harness) chainRulesIn(i int, name string) string {
	t := h.dp.ruleset.Tables()[i]
	c := t.Chain(name)
	if c == nil {
		return ""
	}
	var lines []string
	for _, r := range c.Rules {
		lines = append(lines, r.Text(t.Family))
	}
	return strings.Join(lines, "\n")
}

// workloadChain is the chain the ip table's dispatch map sends traffic to (egress false) or
// from (egress true) a workload interface to.
func (h *harness) workloadChain(iface string, egress bool) string {
	from, to := rules.DispatchMaps()
	m := h.dp.ruleset.Tables()[0].Map(to)
	if egress {
		m = h.dp.ruleset.Tables()[0].Map(from)
	}
	return m.Elements[nft.IfnameKey(iface)].Chain
}
