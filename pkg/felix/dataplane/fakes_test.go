package dataplane

import (
	"context"
	"net"
	"net/netip"
	"slices"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/nft"
)

// fakeRoutes records the routes it is given.
type fakeRoutes struct {
	mu      sync.Mutex
	last    []Route
	applies int
	resyncs int
	fail    []error
}

func (f *fakeRoutes) Apply(_ context.Context, rs []Route) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.applies++
	if len(f.fail) > 0 {
		err := f.fail[0]
		f.fail = f.fail[1:]
		return err
	}
	f.last = slices.Clone(rs)
	return nil
}

func (f *fakeRoutes) RequestResync() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.resyncs++
}

func (f *fakeRoutes) routes() []Route {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.last)
}

// fakeIfaces reports the interfaces a test sets, and records configuration calls.
type fakeIfaces struct {
	mu         sync.Mutex
	initial    []InterfaceUpdate
	updates    chan InterfaceUpdate
	configured []string
	ipv6       map[string]bool // the ipv6 argument of the last ConfigureWorkload per interface
	neighbors  map[string][]netip.Addr
	failConfig map[string]error
}

func newFakeIfaces(initial ...InterfaceUpdate) *fakeIfaces {
	return &fakeIfaces{initial: initial, updates: make(chan InterfaceUpdate, 64), ipv6: map[string]bool{},
		neighbors: map[string][]netip.Addr{}, failConfig: map[string]error{}}
}

func (f *fakeIfaces) Run(ctx context.Context, out chan<- InterfaceUpdate) {
	for _, u := range append(slices.Clone(f.initial), InterfaceUpdate{InSync: true}) {
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

func (f *fakeIfaces) configuredList() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.configured)
}

// fakeVXLAN records the devices it is given.
type fakeVXLAN struct {
	mu   sync.Mutex
	last []VXLANDevice
}

func (f *fakeVXLAN) Apply(_ context.Context, devs []VXLANDevice) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.last = slices.Clone(devs)
	return nil
}

func (f *fakeVXLAN) devices() []VXLANDevice {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.last)
}

// harness is a Dataplane on the nft fake and fake kernel pieces, driven step by step (without
// its loop) by tests.
type harness struct {
	t      testing.TB
	fake   *nft.Fake
	routes *fakeRoutes
	ifaces *fakeIfaces
	vxlan  *fakeVXLAN
	dp     *Dataplane
}

func newHarness(t testing.TB, cfg Config) *harness {
	h := &harness{t: t, fake: nft.NewFake(), routes: &fakeRoutes{}, ifaces: newFakeIfaces(), vxlan: &fakeVXLAN{}}
	dp, err := New(cfg, testLogger(t), WithNFTKernel(h.fake), WithRoutes(h.routes), WithInterfaces(h.ifaces), WithVXLAN(h.vxlan))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h.dp = dp
	h.dp.model.inSync, h.dp.model.ifacesInSync = true, true
	return h
}

func testLogger(t testing.TB) zerolog.Logger {
	return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)
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
		h.dp.model.applyIface(InterfaceUpdate{Name: n, Up: true})
	}
}
