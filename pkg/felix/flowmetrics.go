package felix

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/flowlog/collector"
	"github.com/calico-host/calico-host/pkg/flowlog/goldmane"
	"github.com/calico-host/calico-host/pkg/flowlog/ruleid"
	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/kernel"
)

// flowMetrics are the flow log pipeline's metrics (docs/flowlogs.md, "Metrics"). The
// collector's counts are copied at each flush, on its goroutine.
type flowMetrics struct {
	flows                                  prometheus.Counter
	fileErrors                             prometheus.Counter
	connections                            prometheus.Gauge
	unknown, dropped, unattributed, refuse atomic.Uint64
	nflogPackets, parseErrors, overruns    atomic.Uint64
	aggregatorDrops                        atomic.Int64
	sent, lost                             atomic.Int64
	// unattributedRules are the verdict rules rendered without their log statement.
	unattributedRules prometheus.Gauge
	// dumpRead and dumpProcess time each conntrack dump: reading it from the kernel, and
	// applying it to the collector's connections (Project Calico's name and meaning).
	dumpRead, dumpProcess prometheus.Histogram
}

func newFlowMetrics() *flowMetrics {
	return &flowMetrics{
		flows: prometheus.NewCounter(prometheus.CounterOpts{Name: "calico_host_felix_flowlog_flows_total",
			Help: "Flow records written and sent (one per flow and flush interval)."}),
		fileErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "calico_host_felix_flowlog_file_errors_total",
			Help: "Flushes whose flows could not be written to the flow log file."}),
		connections: prometheus.NewGauge(prometheus.GaugeOpts{Name: "calico_host_felix_flowlog_connections",
			Help: "Connections the flow collector follows, at the last flush."}),
		unattributedRules: prometheus.NewGauge(prometheus.GaugeOpts{Name: "calico_host_felix_flowlog_unattributed_rules",
			Help: "Verdict rules rendered without their NFLOG statement since felix started (a name that cannot be a prefix, or a prefix clash): enforced, not attributed."}),
		dumpRead: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "calico_host_felix_flowlog_conntrack_dump_seconds",
			Help: "Time to read one conntrack dump from the kernel (the flow collector's, every 5 s and at each flush).", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}),
		dumpProcess: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "felix_collector_conntrack_processing_latency_seconds",
			Help: "Time to apply one conntrack dump to the flow collector's connections (Project Calico's metric)."}),
	}
}

// observeDump records a conntrack dump's times (the collector's goroutine).
func (m *flowMetrics) observeDump(read, process time.Duration) {
	m.dumpRead.Observe(read.Seconds())
	m.dumpProcess.Observe(process.Seconds())
}

// observeCollector copies the collector's counts (its goroutine).
func (m *flowMetrics) observeCollector(c *collector.Collector, flows int) {
	st, n := c.Stats(), c.Counts()
	m.flows.Add(float64(flows))
	m.connections.Set(float64(n.Connections))
	m.nflogPackets.Store(n.NFLOG.Packets)
	m.parseErrors.Store(n.NFLOG.ParseErrors)
	m.overruns.Store(n.NFLOG.Overruns)
	m.aggregatorDrops.Store(int64(n.FlowsLost))
	m.unknown.Store(st.UnknownPrefixes)
	m.dropped.Store(st.DroppedPackets)
	m.unattributed.Store(st.UnattributedPaths)
	m.refuse.Store(st.RejectedUpdates)
}

// observeClients sums the Goldmane clients' counts.
func (m *flowMetrics) observeClients(cs []*goldmane.Client) {
	var sent, lost int64
	for _, c := range cs {
		s, d := c.Stats()
		sent, lost = sent+s, lost+d
	}
	m.sent.Store(sent)
	m.lost.Store(lost)
}

func (m *flowMetrics) collectors() []prometheus.Collector {
	counter := func(name, help string, v func() float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, v)
	}
	u := func(a *atomic.Uint64) func() float64 { return func() float64 { return float64(a.Load()) } }
	i := func(a *atomic.Int64) func() float64 { return func() float64 { return float64(a.Load()) } }
	return []prometheus.Collector{m.flows, m.fileErrors, m.connections, m.unattributedRules, m.dumpRead, m.dumpProcess,
		counter("calico_host_felix_flowlog_nflog_packets_total", "NFLOG messages read from groups 1 and 2.", u(&m.nflogPackets)),
		counter("calico_host_felix_flowlog_nflog_parse_errors_total", "NFLOG messages without a prefix or a parseable packet.", u(&m.parseErrors)),
		counter("calico_host_felix_flowlog_nflog_overruns_total", "Times the kernel dropped NFLOG messages (the socket buffer was full).", u(&m.overruns)),
		counter("calico_host_felix_flowlog_aggregator_dropped_total", "Flow updates dropped at the aggregator's limit.", i(&m.aggregatorDrops)),
		counter("calico_host_felix_flowlog_unknown_prefixes_total", "NFLOG packets whose prefix no applied ruleset has.", u(&m.unknown)),
		counter("calico_host_felix_flowlog_dropped_packets_total", "NFLOG packets of connections beyond the collector's limit.", u(&m.dropped)),
		counter("calico_host_felix_flowlog_unattributed_paths_total", "Packet paths the collector could not attribute to a policy.", u(&m.unattributed)),
		counter("calico_host_felix_flowlog_rejected_updates_total", "Flow updates the aggregator refused (a bug: logged).", u(&m.refuse)),
		counter("calico_host_felix_flowlog_goldmane_sent_total", "Flows Goldmane servers acknowledged.", i(&m.sent)),
		counter("calico_host_felix_flowlog_goldmane_dropped_total", "Flows dropped because a Goldmane client's queue was full.", i(&m.lost)),
	}
}

// MaxPolicyCounterSeries caps the series of calico_host_felix_policy_packets_total and
// calico_host_felix_policy_bytes_total: the rules beyond it (in prefix order) are summed into
// one series whose policy label is "__other__".
const MaxPolicyCounterSeries = 5000

// policyCounters exports the counters of the attributed verdict rules (the rules that log to
// an NFLOG group), read from the kernel at each scrape, labelled by the rule the prefix table
// names: per-policy allowed and denied packets and bytes.
type policyCounters struct {
	k       *kernel.Backend
	tables  []nft.TableID
	table   atomic.Pointer[ruleid.Table]
	log     zerolog.Logger
	mu      sync.Mutex // one kernel read at a time
	packets *prometheus.Desc
	bytes   *prometheus.Desc
}

var policyLabels = []string{"tier", "kind", "namespace", "policy", "rule", "action", "direction"}

func newPolicyCounters(k *kernel.Backend, tables []nft.TableID, log zerolog.Logger) *policyCounters {
	return &policyCounters{k: k, tables: tables, log: log,
		packets: prometheus.NewDesc("calico_host_felix_policy_packets_total",
			"Packets that policy and profile rules (and end-of-tier and no-profile drops) decided, by rule; capped series (MaxPolicyCounterSeries).", policyLabels, nil),
		bytes: prometheus.NewDesc("calico_host_felix_policy_bytes_total",
			"Bytes that policy and profile rules decided, by rule; capped as the packets.", policyLabels, nil),
	}
}

// Describe implements prometheus.Collector.
func (p *policyCounters) Describe(ch chan<- *prometheus.Desc) { ch <- p.packets; ch <- p.bytes }

// Collect implements prometheus.Collector.
func (p *policyCounters) Collect(ch chan<- prometheus.Metric) {
	t := p.table.Load()
	if t == nil {
		return
	}
	sums := p.read()
	other := kernel.Counts{}
	n := 0
	for _, prefix := range sortedPrefixes(sums) {
		c := sums[prefix]
		r, ok := t.Lookup(prefix)
		if !ok || n >= MaxPolicyCounterSeries {
			other = kernel.Counts{Packets: other.Packets + c.Packets, Bytes: other.Bytes + c.Bytes}
			continue
		}
		n++
		p.emit(ch, c, ruleLabels(r)...)
	}
	if other != (kernel.Counts{}) {
		p.emit(ch, other, "", "", "", "__other__", "", "", "")
	}
}

func (p *policyCounters) emit(ch chan<- prometheus.Metric, c kernel.Counts, labels ...string) {
	ch <- prometheus.MustNewConstMetric(p.packets, prometheus.CounterValue, float64(c.Packets), labels...)
	ch <- prometheus.MustNewConstMetric(p.bytes, prometheus.CounterValue, float64(c.Bytes), labels...)
}

// read sums the counters of both tables by prefix.
func (p *policyCounters) read() map[string]kernel.Counts {
	p.mu.Lock()
	defer p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out := map[string]kernel.Counts{}
	for _, id := range p.tables {
		got, err := p.k.LogGroupCounters(ctx, id)
		if err != nil {
			p.log.Warn().Err(err).Msg("Reading the policy rules' counters")
			continue
		}
		for prefix, c := range got {
			s := out[prefix]
			out[prefix] = kernel.Counts{Packets: s.Packets + c.Packets, Bytes: s.Bytes + c.Bytes}
		}
	}
	return out
}

func ruleLabels(r ruleid.RuleID) []string {
	return []string{r.Tier, r.Kind.String(), r.Namespace, r.Name, strconv.Itoa(r.Index), r.Action.String(), r.Direction.String()}
}

func sortedPrefixes(m map[string]kernel.Counts) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
