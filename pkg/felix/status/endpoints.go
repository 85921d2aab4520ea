package status

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/time/rate"

	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane"
)

// EndpointReport is the value of an endpoint status key.
type EndpointReport struct {
	Status string `json:"status"` // "up", "down" or "error"
}

// EndpointsConfig configures the endpoint status reporter.
type EndpointsConfig struct {
	Hostname string
	Region   string
	// Delay is the minimum time between two batches of writes (EndpointReportingDelaySecs).
	Delay time.Duration
	// ResyncInterval is how often the reporter re-lists its keys and repairs them once the
	// dataplane is in sync; default 180 x Delay (at least 10 s), like Project Calico.
	ResyncInterval time.Duration
	// WriteTimeout bounds each etcd request; default 5 s.
	WriteTimeout time.Duration
}

// Endpoints keeps the status keys of this host's workload and host endpoints in etcd.
//
// The dataplane says what each endpoint's status is (Report); the calculation graph says which
// endpoints exist (Known). A key is written when its status changes, deleted when the endpoint
// goes away, and a resync (after Synced, then periodically) deletes keys of endpoints that no
// longer exist and repairs wrong values. A key of an endpoint that exists but has no status yet is
// never deleted, so a restart does not turn live ports to ERROR in Neutron.
type Endpoints struct {
	ds      *datastore.Client
	log     zerolog.Logger
	cfg     EndpointsConfig
	metrics *Metrics
	wake    chan struct{}

	mu      sync.Mutex
	delay   time.Duration
	desired map[string]string // key -> status ("up", "down", "error")
	known   map[string]bool   // keys of endpoints calc says exist
	dirty   map[string]bool
	synced  bool
	resync  bool // a resync is due

	// Owned by Run.
	w       *writer
	written map[string]string // what etcd holds, as far as we know
}

// NewEndpoints returns a reporter; call Run.
func NewEndpoints(ds *datastore.Client, cfg EndpointsConfig, m *Metrics, log zerolog.Logger) *Endpoints {
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 5 * time.Second
	}
	if cfg.ResyncInterval <= 0 {
		cfg.ResyncInterval = max(180*cfg.Delay, 10*time.Second)
	}
	return &Endpoints{
		ds: ds, log: log, cfg: cfg, metrics: m, wake: make(chan struct{}, 1), delay: cfg.Delay,
		desired: map[string]string{}, known: map[string]bool{}, dirty: map[string]bool{},
		w: newWriter(ds), written: map[string]string{},
	}
}

// Key is the status key of an endpoint.
func (e *Endpoints) Key(st dataplane.EndpointStatus) string {
	if st.Workload != nil {
		return e.workloadKey(*st.Workload)
	}
	return datastore.HostEndpointStatusKey(e.cfg.Hostname, st.HostEndpoint)
}

func (e *Endpoints) workloadKey(id calc.WorkloadEndpointID) string {
	return datastore.WorkloadEndpointStatusKey(e.cfg.Region, e.cfg.Hostname, id.OrchestratorID, id.WorkloadID, id.EndpointID)
}

// Report records the dataplane's status of an endpoint ("" = gone: delete its key).
func (e *Endpoints) Report(st dataplane.EndpointStatus) {
	key := e.Key(st)
	e.mu.Lock()
	if st.Status == "" {
		delete(e.desired, key)
	} else {
		e.desired[key] = st.Status
	}
	e.dirty[key] = true
	e.mu.Unlock()
	e.poke()
}

// KnownWorkload records whether calc has a local workload endpoint.
func (e *Endpoints) KnownWorkload(id calc.WorkloadEndpointID, exists bool) {
	e.setKnown(e.workloadKey(id), exists)
}

// KnownHostEndpoint records whether calc has a local host endpoint (by object name).
func (e *Endpoints) KnownHostEndpoint(name string, exists bool) {
	e.setKnown(datastore.HostEndpointStatusKey(e.cfg.Hostname, name), exists)
}

func (e *Endpoints) setKnown(key string, exists bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if exists {
		e.known[key] = true
		return
	}
	delete(e.known, key)
	delete(e.desired, key)
	e.dirty[key] = true
	e.poke()
}

// Synced says the dataplane has completed its first full apply: every existing endpoint has been
// reported, so stale keys can be cleaned up.
func (e *Endpoints) Synced() {
	e.mu.Lock()
	e.synced, e.resync = true, true
	e.mu.Unlock()
	e.poke()
}

// SetDelay changes the minimum time between batches while running.
func (e *Endpoints) SetDelay(d time.Duration) {
	e.mu.Lock()
	e.delay = d
	e.mu.Unlock()
}

func (e *Endpoints) poke() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// Run writes batches of changes, at most one batch per delay, until ctx is done.
func (e *Endpoints) Run(ctx context.Context) {
	resync := time.NewTicker(e.cfg.ResyncInterval)
	defer resync.Stop()
	batches := rate.NewLimiter(rate.Every(e.currentDelay()), 1)
	for {
		select {
		case <-ctx.Done():
			return
		case <-e.wake:
		case <-resync.C:
			e.mu.Lock()
			e.resync = e.synced
			e.mu.Unlock()
		}
		batches.SetLimit(rate.Every(e.currentDelay())) // EndpointReportingDelay applies live
		if batches.Wait(ctx) != nil {
			return
		}
		if e.flush(ctx) {
			e.poke() // something failed or is left: try again after the delay
		}
	}
}

func (e *Endpoints) currentDelay() time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.delay
}

// flush runs a due resync and writes every dirty key. It reports whether work is left.
func (e *Endpoints) flush(ctx context.Context) (retry bool) {
	e.mu.Lock()
	doResync := e.resync
	e.resync = false
	e.mu.Unlock()
	if doResync {
		if err := e.resyncKeys(ctx); err != nil {
			e.metrics.errors.WithLabelValues("endpoint").Inc()
			e.log.Warn().Err(err).Msg("Failed to list endpoint status keys; will retry")
			e.mu.Lock()
			e.resync = true
			e.mu.Unlock()
			retry = true
		}
	}
	e.mu.Lock()
	batch := make(map[string]string, len(e.dirty))
	for key := range e.dirty {
		batch[key] = e.desired[key]
	}
	e.dirty = map[string]bool{}
	e.mu.Unlock()
	for _, key := range sortedKeys(batch) {
		if err := e.write(ctx, key, batch[key]); err != nil {
			if ctx.Err() != nil {
				return false
			}
			e.metrics.errors.WithLabelValues("endpoint").Inc()
			e.log.Warn().Err(err).Str("key", key).Msg("Failed to write endpoint status; will retry")
			e.markDirty(key)
			retry = true
		}
	}
	return retry
}

func (e *Endpoints) markDirty(key string) {
	e.mu.Lock()
	e.dirty[key] = true
	e.mu.Unlock()
}

// write makes etcd hold status at key ("" = no key).
func (e *Endpoints) write(ctx context.Context, key, status string) error {
	old, have := e.written[key]
	if have && old == status || !have && status == "" && !e.mayExist(key) {
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, e.cfg.WriteTimeout)
	defer cancel()
	if status == "" {
		if err := e.w.delete(rctx, key); err != nil && !errors.Is(err, errGone) {
			return err
		}
		delete(e.written, key)
		e.metrics.writes.WithLabelValues("endpoint").Inc()
		return nil
	}
	val, _ := json.Marshal(EndpointReport{Status: status})
	if err := e.w.put(rctx, key, val); err != nil {
		return err
	}
	e.written[key] = status
	e.metrics.writes.WithLabelValues("endpoint").Inc()
	return nil
}

// mayExist: without a listing yet, a key we never wrote may still be in etcd from before a restart.
func (e *Endpoints) mayExist(key string) bool {
	_, known := e.w.revs[key]
	return known || !e.isSynced()
}

func (e *Endpoints) isSynced() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.synced
}

// prefixes are the key prefixes this host's endpoint statuses live under.
func (e *Endpoints) prefixes() []string {
	wl := strings.TrimSuffix(datastore.AgentStatusKey(e.cfg.Region, e.cfg.Hostname), "status") + "workload/"
	hep := strings.TrimSuffix(datastore.HostEndpointStatusKey(e.cfg.Hostname, "x"), "x")
	return []string{wl, hep}
}

// resyncKeys lists this host's status keys, learns what etcd holds, and marks dirty every key
// whose value is wrong and every key of an endpoint that no longer exists.
func (e *Endpoints) resyncKeys(ctx context.Context) error {
	listed := map[string]string{}
	for _, prefix := range e.prefixes() {
		rctx, cancel := context.WithTimeout(ctx, e.cfg.WriteTimeout)
		kvs, _, err := e.ds.ListKV(rctx, prefix, 0)
		cancel()
		if err != nil {
			return err
		}
		for _, kv := range kvs {
			var r EndpointReport
			_ = json.Unmarshal(kv.Value, &r) // unreadable: "" never equals a wanted status
			listed[kv.Key] = r.Status
			e.w.learn(kv.Key, kv.ModRevision)
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	stale := 0
	for key := range e.written {
		if _, ok := listed[key]; !ok {
			delete(e.written, key)
			e.w.forget(key)
		}
	}
	for key, st := range listed {
		e.written[key] = st
		want, ok := e.desired[key]
		switch {
		case ok && want != st:
			e.dirty[key] = true
		case !ok && !e.known[key]:
			e.dirty[key] = true
			stale++
		}
	}
	for key := range e.desired {
		if _, ok := listed[key]; !ok {
			e.dirty[key] = true
		}
	}
	e.log.Debug().Int("keys", len(listed)).Int("stale", stale).Msg("Resynced endpoint status keys")
	return nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
