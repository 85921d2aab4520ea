package felix

import (
	"context"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/datastore/etcdtest"
	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/config"
	"github.com/calico-host/calico-host/pkg/felix/dataplane"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// stallable calls progress on a timer unless stalled.
type stallable struct{ stalled atomic.Bool }

func (s *stallable) beat(ctx context.Context, progress func()) {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if !s.stalled.Load() {
				progress()
			}
		}
	}
}

// stallClock is the calculation graph's clock: time.After, except that while stalled its timers
// fire only once released, so that an idle graph stops reporting progress.
type stallClock struct {
	mu      sync.Mutex
	stalled bool
	release chan struct{}
}

func (c *stallClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.stalled {
		return time.After(d)
	}
	ch, release := make(chan time.Time, 1), c.release
	go func() { <-release; ch <- time.Now() }()
	return ch
}

func (c *stallClock) stall(on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case on && !c.stalled:
		c.release = make(chan struct{})
	case !on && c.stalled:
		close(c.release)
	}
	c.stalled = on
}

type fakeSyncer struct {
	status atomic.Int32
	msgs   chan syncer.Message
}

func (f *fakeSyncer) Run(ctx context.Context, out chan<- syncer.Message) {
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-f.msgs:
			f.status.Store(int32(m.Status))
			select {
			case out <- m:
			case <-ctx.Done():
				return
			}
		}
	}
}

func (f *fakeSyncer) Status() syncer.Status { return syncer.Status(f.status.Load()) }

// fakeDataplane records what it gets; its first apply completes when the test releases it
// after InSync, and it forwards the statuses the test gives it.
type fakeDataplane struct {
	stallable
	cfg       dataplane.Config
	release   chan struct{}
	firstDone chan struct{}
	statuses  chan dataplane.EndpointStatus
	applies   prometheus.Counter
	stopped   chan struct{}

	mu      sync.Mutex
	batches [][]calc.Update
	problem string // what Problems reports
}

func (f *fakeDataplane) Problems() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.problem
}

func (f *fakeDataplane) setProblem(p string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.problem = p
}

func (f *fakeDataplane) Run(ctx context.Context, in <-chan []calc.Update, status chan<- dataplane.EndpointStatus, progress func()) {
	defer close(f.stopped)
	go f.beat(ctx, progress)
	var release chan struct{} // armed once InSync arrived
	released := false
	for {
		select {
		case <-ctx.Done():
			return
		case b := <-in:
			f.mu.Lock()
			f.batches = append(f.batches, b)
			f.mu.Unlock()
			f.applies.Inc()
			for _, u := range b {
				if _, ok := u.(calc.InSync); ok && !released {
					release = f.release
				}
			}
		case <-release:
			close(f.firstDone)
			release, released = nil, true
		case st := <-f.statuses:
			status <- st
		}
	}
}

func (f *fakeDataplane) FirstApplyDone() <-chan struct{}    { return f.firstDone }
func (f *fakeDataplane) Collectors() []prometheus.Collector { return []prometheus.Collector{f.applies} }
func (f *fakeDataplane) received() (out [][]calc.Update) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append(out, f.batches...)
}

// has reports whether the dataplane received an update satisfying ok.
func (f *fakeDataplane) has(ok func(calc.Update) bool) bool {
	for _, b := range f.received() {
		for _, u := range b {
			if ok(u) {
				return true
			}
		}
	}
	return false
}

// harness runs a Daemon with the real calculation graph between a fake syncer and a fake
// dataplane, against an embedded etcd.
type harness struct {
	t       *testing.T
	etcd    *etcdtest.Server
	syncer  *fakeSyncer
	clock   *stallClock // the calculation graph's
	dp      *fakeDataplane
	created chan *fakeDataplane
	daemon  *Daemon
	levels  chan zerolog.Level
	poked   chan struct{} // afterFirstApply calls
	cancel  context.CancelFunc
	done    chan error

	statusPrefix string // EndpointStatusPathPrefix
}

// newHarness starts a daemon on a fake syncer; its endpoint status files go to h.statusPrefix
// (environ may override that, as any other parameter).
func newHarness(t *testing.T, environ ...string) *harness {
	t.Helper()
	h := &harness{t: t, etcd: etcdtest.Start(t), syncer: &fakeSyncer{msgs: make(chan syncer.Message, 8)}}
	return h.run(h.syncer, environ)
}

// run starts the daemon with the given syncer (a fake or the real one). Its endpoint status files
// go to a temporary h.statusPrefix unless environ says otherwise.
func (h *harness) run(s Syncer, environ []string) *harness {
	t := h.t
	t.Helper()
	h.statusPrefix = t.TempDir()
	environ = append([]string{"FELIX_ENDPOINTSTATUSPATHPREFIX=" + h.statusPrefix}, environ...)
	h.created = make(chan *fakeDataplane, 1)
	h.levels = make(chan zerolog.Level, 16)
	h.poked = make(chan struct{}, 4)
	h.done = make(chan error, 1)
	h.clock = &stallClock{}
	local, err := config.LoadLocal(config.LoadOptions{ConfigFile: "/nonexistent/felix.toml", DatastoreFile: "/nonexistent/ds.toml",
		Environ: environ, Hostname: func() (string, error) { return "Host-A", nil }})
	if err != nil {
		t.Fatal(err)
	}
	h.daemon, err = New(Options{
		Local: local, Datastore: datastore.NewFromEtcd(h.etcd.Client()), Syncer: s,
		NewDataplane: func(cfg dataplane.Config, _ zerolog.Logger) (Dataplane, error) {
			dp := &fakeDataplane{cfg: cfg, release: make(chan struct{}), firstDone: make(chan struct{}),
				statuses: make(chan dataplane.EndpointStatus, 16), stopped: make(chan struct{}),
				applies: prometheus.NewCounter(prometheus.CounterOpts{Name: "fake_dataplane_batches_total"})}
			h.created <- dp
			return dp, nil
		},
		Log:             zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel),
		SetLogLevel:     func(l zerolog.Level) { h.levels <- l },
		IdleBeat:        20 * time.Millisecond,
		Calc:            calc.RunConfig{After: h.clock.After},
		afterFirstApply: func(context.Context) { h.poked <- struct{}{} },
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() { h.done <- h.daemon.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-h.done:
		case <-time.After(15 * time.Second):
			t.Error("daemon did not stop")
		}
	})
	return h
}

// snapshot sends a snapshot of the datastore (in sync) through the fake syncer.
func (h *harness) snapshot(ups ...syncer.Update) {
	h.syncer.msgs <- syncer.Message{Status: syncer.InSync, Snapshot: true, Updates: ups}
}

// event sends changes through the fake syncer.
func (h *harness) event(ups ...syncer.Update) {
	h.syncer.msgs <- syncer.Message{Status: syncer.InSync, Updates: ups}
}

// dataplane waits for the daemon to build its dataplane.
func (h *harness) dataplane() *fakeDataplane {
	h.t.Helper()
	select {
	case dp := <-h.created:
		h.dp = dp
		return dp
	case <-time.After(5 * time.Second):
		h.t.Fatal("the dataplane was not created")
	}
	return nil
}

// exit waits for Run to return.
func (h *harness) exit() error {
	h.t.Helper()
	select {
	case err := <-h.done:
		h.done <- err // for the cleanup
		return err
	case <-time.After(5 * time.Second):
		h.t.Fatal("Run did not return")
	}
	return nil
}

// ready brings the daemon to READY: a snapshot with a ready ClusterInformation, the given
// FelixConfiguration default (nil: none) and more.
func (h *harness) ready(spec *api.FelixConfigurationSpec, more ...syncer.Update) *fakeDataplane {
	h.t.Helper()
	ups := []syncer.Update{clusterInfo(true, "")}
	if spec != nil {
		ups = append(ups, felixConfig("default", *spec))
	}
	h.snapshot(append(ups, more...)...)
	dp := h.dataplane()
	close(dp.release)
	deadline := time.Now().Add(5 * time.Second)
	for !h.daemon.ready.Load() {
		if time.Now().After(deadline) {
			h.t.Fatal("not ready")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return dp
}

// ---- datastore objects, as the syncer delivers them ----

func resource(plural, name string, v any) syncer.Update {
	return syncer.Update{ID: datastore.IDOf(datastore.ResourcePrefix + plural + "/" + name), Value: v}
}

func clusterInfo(ready bool, clusterType string) syncer.Update {
	return resource("clusterinformations", "default", &api.ClusterInformation{ObjectMeta: api.ObjectMeta{Name: "default"},
		Spec: api.ClusterInformationSpec{ClusterGUID: "abc", ClusterType: clusterType, DatastoreReady: &ready}})
}

func felixConfig(name string, spec api.FelixConfigurationSpec) syncer.Update {
	return resource("felixconfigurations", name, &api.FelixConfiguration{ObjectMeta: api.ObjectMeta{Name: name}, Spec: spec})
}

func ipPool(name, vxlanMode string, disabled bool) syncer.Update {
	return resource("ippools", name, &api.IPPool{ObjectMeta: api.ObjectMeta{Name: name},
		Spec: api.IPPoolSpec{CIDR: "10.65.0.0/16", VXLANMode: vxlanMode, IPIPMode: api.EncapNever, Disabled: disabled, BlockSize: 26}})
}

// wep1 is a networking-calico port on host-a.
var wep1 = calc.WorkloadEndpointID{OrchestratorID: "openstack", WorkloadID: "openstack/instance-1", EndpointID: "port-1"}

func wep1Update() syncer.Update {
	name := api.WorkloadEndpointName("host-a", "openstack", "instance-1", "port-1")
	return resource("workloadendpoints", "openstack/"+name, &api.WorkloadEndpoint{
		ObjectMeta: api.ObjectMeta{Name: name, Namespace: "openstack"},
		Spec: api.WorkloadEndpointSpec{Orchestrator: "openstack", Node: "host-a", Workload: "instance-1", Endpoint: "port-1",
			InterfaceName: "tapport-1", MAC: "00:11:22:33:44:55", IPNetworks: []string{"10.65.0.2/32"}}})
}

func wep1Delete() syncer.Update {
	u := wep1Update()
	u.Value = nil
	return u
}

// wep1Endpoint is wep1 as the dataplane would report it.
var wep1Endpoint = &calc.WorkloadEndpoint{Name: "tapport-1", MAC: "00:11:22:33:44:55",
	IPv4Nets: []netip.Prefix{netip.MustParsePrefix("10.65.0.2/32")}}
