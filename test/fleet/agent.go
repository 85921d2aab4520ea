package fleet

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/calico-host/calico-host/pkg/confd"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// FelixSyncerConfig is felix's syncer configuration (as pkg/felix builds it).
func FelixSyncerConfig() syncer.Config {
	return syncer.Config{Prefixes: []string{datastore.ResourcePrefix, datastore.BlockPrefix}}
}

// AgentMode says how much of a host an agent runs.
type AgentMode int

// Agent modes.
const (
	// Full: felix's syncer (real decoder) into felix's calc graph, whose output is kept in a
	// Model; confd's syncer into confd's Store.
	Full AgentMode = iota
	// Light: felix's and confd's syncers with a decoder that does not decode (every key is
	// delivered as a placeholder), for fleets too large for one machine's CPU and memory: the
	// etcd traffic is the same, the per-host work is left out.
	Light
)

// placeholder is what a Light agent's decoder delivers for every key.
type placeholder struct{}

func lightDecoder(datastore.ID, []byte, int64) (any, error) { return placeholder{}, nil }

// Agent is one host's felix (syncer + calc graph, no dataplane) and confd syncer, each on its own
// etcd connection as on a real host.
type Agent struct {
	Host string
	Mode AgentMode

	clients  []*clientv3.Client
	liveness time.Duration // the syncers' LivenessTimeout (0: their default)
	started  time.Time
	log      zerolog.Logger

	// Felix side (the calc side only in Full mode).
	felixSync  time.Duration // until felix's syncer was first InSync after a snapshot (0: not yet)
	status     atomic.Int32
	rev        atomic.Int64
	snapshots  atomic.Int64
	graph      *calc.Graph
	model      *Model
	modelErr   error
	confdSync  time.Duration
	confdStore *confd.Store
	confdSnaps atomic.Int64

	// calcMu guards graph, model, modelErr and confdStore; mu the rest (never held for long).
	calcMu sync.Mutex
	mu     sync.Mutex
	obs    []observation // revisions delivered while recording (see Record)
	rec    bool
}

// observation is when an agent's felix consumer got a message at a revision.
type observation struct {
	rev int64
	at  time.Time
}

// NewAgent returns an agent for host on its own clients (felix, confd).
func NewAgent(host string, mode AgentMode, felixCli, confdCli *clientv3.Client, log zerolog.Logger) *Agent {
	a := &Agent{Host: host, Mode: mode, clients: []*clientv3.Client{felixCli, confdCli}, log: log}
	if mode == Full {
		a.graph, a.model, a.confdStore = calc.New(host, log), NewModel(), confd.NewStore(host)
	}
	return a
}

// Run runs the agent's syncers until ctx ends.
func (a *Agent) Run(ctx context.Context) {
	a.mu.Lock()
	a.started = time.Now()
	a.mu.Unlock()
	fcfg, ccfg := FelixSyncerConfig(), confd.SyncerConfig(a.Host)
	if a.Mode == Light {
		fcfg.Decoder, ccfg.Decoder = lightDecoder, lightDecoder
	}
	fcfg.LivenessTimeout, ccfg.LivenessTimeout = a.liveness, a.liveness
	var wg sync.WaitGroup
	defer wg.Wait()
	fout, cout := make(chan syncer.Message, 4), make(chan syncer.Message, 4)
	wg.Go(func() { syncer.New(datastore.NewFromEtcd(a.clients[0]), fcfg, a.log).Run(ctx, fout) })
	wg.Go(func() { syncer.New(datastore.NewFromEtcd(a.clients[1]), ccfg, a.log).Run(ctx, cout) })
	wg.Go(func() { a.consume(ctx, cout, a.onConfd) })
	a.consume(ctx, fout, a.onFelix)
}

func (a *Agent) consume(ctx context.Context, in <-chan syncer.Message, fn func(syncer.Message)) {
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-in:
			fn(m)
		}
	}
}

func (a *Agent) onFelix(m syncer.Message) {
	if m.Snapshot {
		a.snapshots.Add(1)
	}
	if a.graph != nil {
		a.calcMu.Lock()
		a.graph.OnMessage(m)
		if err := a.model.Apply(a.graph.Flush()); err != nil && a.modelErr == nil {
			a.modelErr = err
		}
		a.calcMu.Unlock()
	}
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	// The first InSync after a snapshot (a snapshot listed at a rounded revision is followed by
	// the changes since, then InSync).
	if a.felixSync == 0 && a.snapshots.Load() > 0 && m.Status == syncer.InSync {
		a.felixSync = now.Sub(a.started)
	}
	if a.rec && m.Revision > a.rev.Load() {
		a.obs = append(a.obs, observation{rev: m.Revision, at: now})
	}
	a.status.Store(int32(m.Status))
	if m.Revision > a.rev.Load() || m.Snapshot {
		a.rev.Store(m.Revision)
	}
}

func (a *Agent) onConfd(m syncer.Message) {
	if m.Snapshot {
		a.confdSnaps.Add(1)
	}
	if a.confdStore != nil {
		a.calcMu.Lock()
		a.confdStore.Apply(m)
		a.calcMu.Unlock()
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.confdSync == 0 && a.confdSnaps.Load() > 0 && m.Status == syncer.InSync {
		a.confdSync = time.Since(a.started)
	}
}

// InSync reports whether felix's syncer is in sync and both sides had their first snapshot.
func (a *Agent) InSync() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.felixSync > 0 && a.confdSync > 0 && syncer.Status(a.status.Load()) == syncer.InSync
}

// SyncTimes are the times from start to felix's and confd's first snapshot.
func (a *Agent) SyncTimes() (felix, confd time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.felixSync, a.confdSync
}

// Revision is the highest revision felix's consumer has.
func (a *Agent) Revision() int64 { return a.rev.Load() }

// Snapshots is the number of snapshots (lists) felix's and confd's syncers delivered.
func (a *Agent) Snapshots() int64 { return a.snapshots.Load() + a.confdSnaps.Load() }

// Record starts (true) or stops recording when revisions arrive; starting clears the record.
func (a *Agent) Record(on bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.rec = on
	if on {
		a.obs = nil
	}
}

// deliveredAt is when the agent first had revision rev or a later one (ok false: never).
func (a *Agent) deliveredAt(rev int64) (time.Time, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, o := range a.obs {
		if o.rev >= rev {
			return o.at, true
		}
	}
	return time.Time{}, false
}

// State is a Full agent's canonical output: felix calc's dataplane model and confd's inputs,
// one line per item, sorted; and the first model inconsistency (an update that removes what the
// model does not have), if any.
func (a *Agent) State() ([]string, error) {
	a.calcMu.Lock()
	defer a.calcMu.Unlock()
	lines := a.model.Dump()
	return append(lines, dumpConfd(a.confdStore.Inputs())...), a.modelErr
}
