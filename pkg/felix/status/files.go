package status

import (
	"context"
	"encoding/json"
	"net/url"
	"path/filepath"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/internal/backoff"
	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane"
)

// StatusDirName is the directory under EndpointStatusPathPrefix that holds one file per local
// workload endpoint whose policy is programmed (Project Calico's libcalico-go/lib/epstatusfile).
const StatusDirName = "endpoint-status"

// EndpointStatusFile is the JSON content of an endpoint status file, as Project Calico's felix
// writes it (epstatusfile.WorkloadEndpointStatus) and its CNI plugin reads it.
type EndpointStatusFile struct {
	IfaceName   string   `json:"ifaceName,omitempty"`
	Mac         string   `json:"mac,omitempty"`
	Ipv4Nets    []string `json:"ipv4Nets,omitempty"`
	Ipv6Nets    []string `json:"ipv6Nets,omitempty"`
	BGPPeerName string   `json:"bgpPeerName,omitempty"` // local BGP peering: not supported, always empty
}

// StatusFileName is the name of a workload endpoint's status file: its orchestrator, workload
// and endpoint IDs, each path-escaped (so "/" becomes %2F and a space %20), joined by spaces
// (libcalico-go/lib/names WorkloadEndpointKeyToStatusFilename).
func StatusFileName(id calc.WorkloadEndpointID) string {
	return url.PathEscape(id.OrchestratorID) + " " + url.PathEscape(id.WorkloadID) + " " + url.PathEscape(id.EndpointID)
}

// statusFileContent renders a programmed endpoint's status file.
func statusFileContent(ep *calc.WorkloadEndpoint) []byte {
	f := EndpointStatusFile{IfaceName: ep.Name, Mac: ep.MAC}
	for _, n := range ep.IPv4Nets {
		f.Ipv4Nets = append(f.Ipv4Nets, n.String())
	}
	for _, n := range ep.IPv6Nets {
		f.Ipv6Nets = append(f.Ipv6Nets, n.String())
	}
	b, _ := json.Marshal(f)
	return b
}

// FilesConfig configures the endpoint status file writer.
type FilesConfig struct {
	// PathPrefix is EndpointStatusPathPrefix; the files go to PathPrefix/endpoint-status.
	PathPrefix string
	// ResyncInterval is how often the directory is re-read and repaired once the dataplane is
	// in sync; default 10 s, like Project Calico's felix.
	ResyncInterval time.Duration
}

// Files keeps PathPrefix/endpoint-status in step with the dataplane: a workload endpoint's file
// exists exactly while the dataplane reports it "up" (its policy is programmed and its interface
// configured), written atomically (a temporary file renamed into place), so a reader never sees
// a partial file. Nothing is written before the dataplane's first apply (Synced); then stale
// files (of endpoints that no longer exist, or are down) are removed. A file of an endpoint
// that exists but whose status has not been reported yet since the start is kept, so that a
// restart does not make a waiting CNI plugin see its file come and go.
type Files struct {
	cfg     FilesConfig
	dir     string
	log     zerolog.Logger
	metrics *Metrics
	wake    chan struct{}

	mu       sync.Mutex
	desired  map[string][]byte // file name -> content, for endpoints reported up
	reported map[string]bool   // file names with a status reported since the start
	known    map[string]bool   // file names of endpoints calc says exist
	dirty    map[string]bool
	synced   bool
	resync   bool

	// Owned by Run.
	written map[string][]byte // what the directory holds, as far as we know
}

// NewFiles returns an endpoint status file writer; call Run.
func NewFiles(cfg FilesConfig, m *Metrics, log zerolog.Logger) *Files {
	if cfg.ResyncInterval <= 0 {
		cfg.ResyncInterval = 10 * time.Second
	}
	return &Files{
		cfg: cfg, dir: statusDir(cfg.PathPrefix), log: log, metrics: m, wake: make(chan struct{}, 1),
		desired: map[string][]byte{}, reported: map[string]bool{}, known: map[string]bool{}, dirty: map[string]bool{},
		written: map[string][]byte{},
	}
}

// Report records the dataplane's status of an endpoint; host endpoints have no file.
func (f *Files) Report(st dataplane.EndpointStatus) {
	if st.Workload == nil {
		return
	}
	name := StatusFileName(*st.Workload)
	f.mu.Lock()
	if st.Status == "up" && st.Endpoint != nil {
		f.desired[name] = statusFileContent(st.Endpoint)
	} else {
		delete(f.desired, name)
	}
	f.reported[name] = st.Status != ""
	f.dirty[name] = true
	f.mu.Unlock()
	f.poke()
}

// KnownWorkload records whether calc has a local workload endpoint.
func (f *Files) KnownWorkload(id calc.WorkloadEndpointID, exists bool) {
	name := StatusFileName(id)
	f.mu.Lock()
	defer f.mu.Unlock()
	if exists {
		f.known[name] = true
		return
	}
	delete(f.known, name)
	delete(f.desired, name)
	f.dirty[name] = true
	f.poke()
}

// KnownHostEndpoint is part of the endpoint observer interface; host endpoints have no file.
func (f *Files) KnownHostEndpoint(string, bool) {}

// Synced says the dataplane has completed its first apply: files may be written, and stale ones
// removed.
func (f *Files) Synced() {
	f.mu.Lock()
	f.synced, f.resync = true, true
	f.mu.Unlock()
	f.poke()
}

func (f *Files) poke() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// Run keeps the directory in step until ctx is done, retrying failures with a backoff from
// 50 ms to 5 s and re-reading the directory every ResyncInterval.
func (f *Files) Run(ctx context.Context) {
	tick := time.NewTicker(f.cfg.ResyncInterval)
	defer tick.Stop()
	var retry <-chan time.Time
	delays := backoff.Backoff{Min: 50 * time.Millisecond, Max: 5 * time.Second}
	for {
		select {
		case <-ctx.Done():
			return
		case <-f.wake:
		case <-retry:
		case <-tick.C:
			f.mu.Lock()
			f.resync = f.synced
			f.mu.Unlock()
		}
		if err := f.flush(); err != nil {
			delay := delays.Next()
			retry = time.After(delay)
			f.metrics.errors.WithLabelValues("file").Inc()
			f.log.Warn().Err(err).Dur("retryIn", delay).Msg("Failed to update endpoint status files; will retry")
			continue
		}
		delays.Reset()
		retry = nil
	}
}

// flush runs a due resync and brings every dirty file up to date. Work that failed stays due.
func (f *Files) flush() error {
	f.mu.Lock()
	if !f.synced {
		f.mu.Unlock()
		return nil
	}
	doResync := f.resync
	f.resync = false
	f.mu.Unlock()
	if doResync {
		if err := f.resyncDir(); err != nil {
			f.mu.Lock()
			f.resync = true
			f.mu.Unlock()
			return err
		}
	}
	return f.writeDirty()
}

// writeDirty writes or removes every dirty file.
func (f *Files) writeDirty() error {
	f.mu.Lock()
	batch := make(map[string][]byte, len(f.dirty))
	for name := range f.dirty {
		batch[name] = f.desired[name]
	}
	f.dirty = map[string]bool{}
	f.mu.Unlock()
	var firstErr error
	for name, content := range batch {
		if err := f.sync(name, content); err != nil {
			f.mu.Lock()
			f.dirty[name] = true
			f.mu.Unlock()
			if firstErr == nil {
				firstErr = err
			}
		}
	}
	return firstErr
}

// sync makes the directory hold content under name (nil: no file).
func (f *Files) sync(name string, content []byte) error {
	old, have := f.written[name]
	switch {
	case content == nil && !have, content != nil && have && string(old) == string(content):
		return nil
	case content == nil:
		if err := removeFile(f.dir, name); err != nil {
			return err
		}
		delete(f.written, name)
	default:
		if err := writeAtomically(f.cfg.PathPrefix, f.dir, name, content); err != nil {
			return err
		}
		f.written[name] = content
	}
	f.metrics.writes.WithLabelValues("file").Inc()
	return nil
}

// resyncDir reads the directory (creating it if needed), learns what it holds, and marks dirty
// every file that is wrong, missing or stale.
func (f *Files) resyncDir() error {
	listed, err := readStatusDir(f.cfg.PathPrefix, f.dir)
	if err != nil {
		return err
	}
	f.written = listed
	f.mu.Lock()
	defer f.mu.Unlock()
	stale := 0
	for name, content := range listed {
		want, ok := f.desired[name]
		switch {
		case ok && string(want) != string(content):
			f.dirty[name] = true
		case !ok && (f.reported[name] || !f.known[name]):
			f.dirty[name] = true
			stale++
		}
	}
	for name := range f.desired {
		if _, ok := listed[name]; !ok {
			f.dirty[name] = true
		}
	}
	f.log.Debug().Int("files", len(listed)).Int("stale", stale).Msg("Resynced endpoint status files")
	return nil
}

// statusDir is the directory of the status files under prefix.
func statusDir(prefix string) string { return filepath.Join(prefix, StatusDirName) }
