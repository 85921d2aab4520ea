package felix

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/calico-host/calico-host/pkg/felix/config"
	"github.com/calico-host/calico-host/pkg/flowlog"
	"github.com/calico-host/calico-host/pkg/flowlog/collector"
	"github.com/calico-host/calico-host/pkg/flowlog/conntrack"
	"github.com/calico-host/calico-host/pkg/flowlog/filesink"
	"github.com/calico-host/calico-host/pkg/flowlog/goldmane"
	"github.com/calico-host/calico-host/pkg/flowlog/ruleid"
	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/kernel"
)

// Flow logs (docs/flowlogs.md): with config.Config.FlowLogsOn, the dataplane renders NFLOG
// statements into its verdict rules and hands each applied ruleset's prefix table to the
// collector, which reads NFLOG groups 1 and 2 and conntrack in the dataplane's namespace, names
// the ends from calc's model (addressBook) and writes the flows of each FlowLogsFlushInterval to
// the file and the Goldmane clients. With FlowLogsPolicyEvaluationMode Continuous, the
// collector asks the pending feed (pendingFeed) what the staged policies would decide.

// localReporterPoll is how often felix looks for the local reporter's socket (felix's 10 s).
const localReporterPoll = 10 * time.Second

// flowLogs is the running flow log pipeline.
type flowLogs struct {
	cfg     *config.Config
	log     zerolog.Logger
	book    *addressBook
	tables  chan *ruleid.Table // the latest table, one pending at most
	sink    *filesink.Sink     // nil: no file
	mu      sync.Mutex         // guards clients (the local reporter's joins from its goroutine)
	clients []*goldmane.Client // the Goldmane server's, then the local reporter's once its socket exists
	metrics *flowMetrics
	netns   int             // descriptor of the dataplane's namespace (0: felix's own)
	kernel  *kernel.Backend // reads the rules' counters (policyCounters)
	rules   *policyCounters
	pending collector.Pending // nil: no pending verdicts
}

// newFlowLogs opens what flow logs write to; it fails when a configured output cannot be used
// (a file that cannot be created, certificates that do not load).
func newFlowLogs(cfg *config.Config, tables []nft.TableID, log zerolog.Logger) (*flowLogs, error) {
	f := &flowLogs{cfg: cfg, log: log, book: newAddressBook(), tables: make(chan *ruleid.Table, 1), metrics: newFlowMetrics()}
	if err := f.open(); err != nil {
		f.close()
		return nil, err
	}
	k, err := kernel.New(kernel.Config{NetNS: f.netns})
	if err != nil {
		f.close()
		return nil, fmt.Errorf("flow logs: %w", err)
	}
	f.kernel, f.rules = k, newPolicyCounters(k, tables, log)
	return f, nil
}

// collectors are the pipeline's metrics.
func (f *flowLogs) collectors() []prometheus.Collector {
	return append(f.metrics.collectors(), f.rules)
}

func (f *flowLogs) open() error {
	if err := f.openNetNS(); err != nil {
		return err
	}
	if f.cfg.FlowLogsFileEnabled {
		s, err := filesink.Open(filesink.Options{Dir: f.cfg.FlowLogsFileDirectory,
			MaxFileSize: int64(f.cfg.FlowLogsFileMaxFileSizeMB) << 20, MaxFiles: f.cfg.FlowLogsFileMaxFiles})
		if err != nil {
			return err
		}
		f.sink = s
	}
	if f.cfg.FlowLogsGoldmaneServer != "" {
		c, err := goldmane.New(goldmane.Config{Server: f.cfg.FlowLogsGoldmaneServer, CertFile: f.cfg.TyphaCertFile,
			KeyFile: f.cfg.TyphaKeyFile, CAFile: f.cfg.TyphaCAFile, Log: f.log})
		if err != nil {
			return err
		}
		f.clients = append(f.clients, c)
	}
	return nil
}

// openNetNS opens DataplaneNetNS (when set) for the collector's sockets and turns conntrack
// accounting on (in felix's own namespace only: a namespace given by path must have it on).
func (f *flowLogs) openNetNS() error {
	if f.cfg.DataplaneNetNS == "" {
		return conntrack.EnableAccounting()
	}
	fd, err := unix.Open(f.cfg.DataplaneNetNS, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("flow logs: opening %s: %w", f.cfg.DataplaneNetNS, err)
	}
	f.netns = fd
	f.log.Warn().Str("netns", f.cfg.DataplaneNetNS).
		Msg("Flow logs in DataplaneNetNS: conntrack accounting (net.netfilter.nf_conntrack_acct) must be on there for allowed flows to count")
	return nil
}

func (f *flowLogs) close() {
	if f.sink != nil {
		if err := f.sink.Close(); err != nil {
			f.log.Warn().Err(err).Msg("Closing the flow log file")
		}
	}
	if f.netns > 0 {
		unix.Close(f.netns)
	}
	if f.kernel != nil {
		f.kernel.Close()
	}
}

// publish hands the collector the prefix table of a ruleset just applied (the dataplane's
// goroutine; never blocks: a table not yet taken is replaced).
func (f *flowLogs) publish(t *ruleid.Table, unattributed int) {
	f.metrics.unattributedRules.Set(float64(unattributed))
	f.rules.table.Store(t)
	for {
		select {
		case f.tables <- t:
			return
		default:
		}
		select {
		case <-f.tables:
		default:
		}
	}
}

// run runs the collector and the Goldmane clients until ctx ends. ready is called once the
// NFLOG groups are bound.
func (f *flowLogs) run(ctx context.Context, ready func()) error {
	defer f.close()
	for _, c := range f.clients {
		go c.Run(ctx)
	}
	if f.cfg.FlowLogsLocalReporter {
		go f.runLocalReporter(ctx)
	}
	if f.pending == nil {
		f.log.Info().Msg("FlowLogsPolicyEvaluationMode None: no pending verdicts")
	}
	col := collector.New(collector.Config{Endpoints: f.book, Pending: f.pending, Log: f.collectorLog()}, time.Now())
	return col.Run(ctx, collector.Loop{NetNS: f.netns, Flush: f.cfg.FlowLogsFlushInterval, Tables: f.tables,
		Out: func(flows []flowlog.Flow) { f.out(col, flows) }, Ready: ready, Dumped: f.metrics.observeDump})
}

// collectorLog logs the collector's trace lines only with FlowLogsCollectorDebugTrace.
func (f *flowLogs) collectorLog() zerolog.Logger {
	l := f.log
	if !f.cfg.FlowLogsCollectorDebugTrace {
		l = l.Level(max(zerolog.DebugLevel, l.GetLevel()))
	}
	return l
}

// out writes the flows of an interval (on the collector's goroutine).
func (f *flowLogs) out(col *collector.Collector, flows []flowlog.Flow) {
	f.metrics.observeCollector(col, len(flows))
	if len(flows) == 0 {
		return
	}
	if f.sink != nil {
		if err := f.sink.Write(flows); err != nil {
			f.metrics.fileErrors.Inc()
			f.log.Warn().Err(err).Int("flows", len(flows)).Msg("Writing flow logs failed; these flows are lost to the file")
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.clients {
		c.Push(flows...)
	}
	f.metrics.observeClients(f.clients)
}

// runLocalReporter starts the local reporter's client once its socket exists (felix looks
// every 10 s); the client reconnects by itself afterwards.
func (f *flowLogs) runLocalReporter(ctx context.Context) {
	path := strings.TrimPrefix(goldmane.LocalSocket, "unix://")
	tick := time.NewTicker(localReporterPoll)
	defer tick.Stop()
	for {
		if _, err := os.Stat(path); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
	c, err := goldmane.New(goldmane.Config{Server: goldmane.LocalSocket, Log: f.log})
	if err != nil {
		f.log.Error().Err(err).Msg("Local flow reporter")
		return
	}
	f.mu.Lock()
	f.clients = append(f.clients, c)
	f.mu.Unlock()
	c.Run(ctx)
}

// startFlowLogs starts the flow log pipeline when flow logs are on: calc tells its address
// book every endpoint and network set, and the collector runs until ctx ends. When an output
// cannot be opened, felix runs without flow logs (and renders no NFLOG statement), logged as
// an error: flow logs observe, they never decide.
func (d *Daemon) startFlowLogs(ctx context.Context) {
	if !d.cfg.FlowLogsOn() || !d.cfg.FlowLogsEvaluateStaged {
		d.pending.drop()
	}
	if !d.cfg.FlowLogsOn() {
		return
	}
	tables := []nft.TableID{{Family: nft.FamilyIP, Name: d.dpCfg.TableName}}
	if d.dpCfg.IPv6Support {
		tables = append(tables, nft.TableID{Family: nft.FamilyIP6, Name: d.dpCfg.TableName})
	}
	log := d.log.With().Str("subcomponent", "flowlogs").Logger()
	fl, err := newFlowLogs(d.cfg, tables, log)
	if err != nil {
		log.Error().Err(err).Msg("Flow logs cannot start; felix runs without them")
		d.dpCfg.FlowLogs = false
		d.pending.drop()
		return
	}
	if d.cfg.FlowLogsEvaluateStaged {
		fl.pending = d.pending.evaluate
		period := max(d.cfg.FlowLogsFlushInterval*4/5, time.Second)
		d.wg.Go(func() { d.pending.run(ctx, d.cfg.FelixHostname, period, log) })
	}
	if !d.calc.ObserveItems(ctx, fl.book) {
		fl.close()
		return
	}
	d.flowLogs = fl
	bound := make(chan struct{})
	d.wg.Go(func() {
		if err := fl.run(ctx, func() { close(bound) }); err != nil {
			log.Error().Err(err).Msg("Flow collector stopped; felix runs on without flow logs")
		}
	})
	select { // the groups are bound before the first ruleset logs to them
	case <-bound:
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		log.Warn().Msg("Flow collector not bound after 5 s; starting the dataplane anyway")
	}
}
