package felix

import (
	"context"
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

// fakeCalc ignores the syncer's messages and emits the batches the test gives it.
type fakeCalc struct {
	stallable
	batches chan []calc.Update
}

func (f *fakeCalc) Run(ctx context.Context, in <-chan syncer.Message, out chan<- []calc.Update, progress func()) {
	go f.beat(ctx, progress)
	for {
		select {
		case <-ctx.Done():
			return
		case <-in:
		case b := <-f.batches:
			select {
			case out <- b:
			case <-ctx.Done():
				return
			}
		}
	}
}

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

// harness runs a Daemon with fake loops against an embedded etcd.
type harness struct {
	t       *testing.T
	etcd    *etcdtest.Server
	syncer  *fakeSyncer
	calc    *fakeCalc
	dp      *fakeDataplane
	created chan *fakeDataplane
	daemon  *Daemon
	levels  chan zerolog.Level
	cancel  context.CancelFunc
	done    chan error

	statusPrefix string // EndpointStatusPathPrefix
}

// newHarness starts a daemon with fake loops; its endpoint status files go to h.statusPrefix
// (environ may override that, as any other parameter).
func newHarness(t *testing.T, environ ...string) *harness {
	t.Helper()
	h := &harness{
		t: t, etcd: etcdtest.Start(t),
		syncer: &fakeSyncer{msgs: make(chan syncer.Message, 8)},
		calc:   &fakeCalc{batches: make(chan []calc.Update, 8)},
	}
	return h.run(h.syncer, h.calc, environ)
}

// run starts the daemon with the given syncer and calculation graph (fakes or real ones). Its
// endpoint status files go to a temporary h.statusPrefix unless environ says otherwise.
func (h *harness) run(s Syncer, c CalcGraph, environ []string) *harness {
	t := h.t
	t.Helper()
	h.statusPrefix = t.TempDir()
	environ = append([]string{"FELIX_ENDPOINTSTATUSPATHPREFIX=" + h.statusPrefix}, environ...)
	h.created = make(chan *fakeDataplane, 1)
	h.levels = make(chan zerolog.Level, 16)
	h.done = make(chan error, 1)
	local, err := config.LoadLocal(config.LoadOptions{ConfigFile: "/nonexistent/felix.toml", DatastoreFile: "/nonexistent/ds.toml",
		Environ: environ, Hostname: func() (string, error) { return "Host-A", nil }})
	if err != nil {
		t.Fatal(err)
	}
	h.daemon, err = New(Options{
		Local: local, Datastore: datastore.NewFromEtcd(h.etcd.Client()), Syncer: s, Calc: c,
		NewDataplane: func(cfg dataplane.Config, _ zerolog.Logger) (Dataplane, error) {
			dp := &fakeDataplane{cfg: cfg, release: make(chan struct{}), firstDone: make(chan struct{}),
				statuses: make(chan dataplane.EndpointStatus, 16), stopped: make(chan struct{}),
				applies: prometheus.NewCounter(prometheus.CounterOpts{Name: "fake_dataplane_batches_total"})}
			h.created <- dp
			return dp, nil
		},
		Log:         zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel),
		SetLogLevel: func(l zerolog.Level) { h.levels <- l },
		IdleBeat:    20 * time.Millisecond,
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

func (h *harness) emit(updates ...calc.Update) { h.calc.batches <- updates }

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

// ready brings the daemon to READY with the given FelixConfiguration default (nil: none).
func (h *harness) ready(spec *api.FelixConfigurationSpec, more ...calc.Update) *fakeDataplane {
	h.t.Helper()
	h.emit(append([]calc.Update{calc.ConfigUpdate{Global: spec, DatastoreReady: true}, calc.InSync{}}, more...)...)
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

var wep1 = calc.WorkloadEndpointID{OrchestratorID: "openstack", WorkloadID: "openstack/instance-1", EndpointID: "port-1"}

func wepUpdate(id calc.WorkloadEndpointID) calc.WorkloadEndpointUpdate {
	return calc.WorkloadEndpointUpdate{ID: id, Endpoint: &calc.WorkloadEndpoint{Name: "tapport-1"}}
}
