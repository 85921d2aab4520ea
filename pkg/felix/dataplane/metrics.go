package dataplane

import (
	"reflect"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/calico-host/calico-host/pkg/ipip"

	"github.com/calico-host/calico-host/pkg/nft/apply"
)

// metrics are the dataplane's Prometheus collectors: calico-host's own, and Project Calico's
// felix_int_dataplane_* with the same types, labels and meaning.
type metrics struct {
	applySeconds *prometheus.HistogramVec
	batchSize    prometheus.Histogram
	applyErrors  prometheus.Counter
	elements     *prometheus.CounterVec
	chains       prometheus.Gauge
	sets         prometheus.Gauge
	endpoints    *prometheus.GaugeVec
	quarantined  *prometheus.GaugeVec
	ipipState    *prometheus.GaugeVec

	calicoApply     prometheus.Summary // after the first apply
	calicoFirst     prometheus.Gauge   // the first apply
	calicoFailures  prometheus.Counter
	calicoMessages  *prometheus.CounterVec
	calicoBatchSize prometheus.Summary
	firstDone       bool
}

// calicoObjectives are Project Calico's default summary quantiles.
var calicoObjectives = map[float64]float64{0.5: 0.05, 0.9: 0.01, 0.99: 0.001}

func newMetrics() *metrics {
	return &metrics{
		applySeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "felix_dataplane_apply_seconds", Help: "Time to apply the dataplane, by nftables sync kind.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"sync"}),
		batchSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "felix_dataplane_batch_updates", Help: "Calc updates received per dataplane loop iteration.",
			Buckets: prometheus.ExponentialBuckets(1, 4, 10),
		}),
		applyErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "felix_dataplane_apply_errors_total", Help: "Dataplane applies that failed.",
		}),
		elements: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "felix_dataplane_nft_elements_total", Help: "nftables set and map elements written, by operation.",
		}, []string{"op"}),
		chains: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "felix_dataplane_nft_chains", Help: "Chains in the nftables tables.",
		}),
		sets: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "felix_dataplane_nft_sets", Help: "Sets and maps in the nftables tables.",
		}),
		endpoints: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "felix_dataplane_endpoints", Help: "Local endpoints programmed, by kind.",
		}, []string{"kind"}),
		quarantined: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "calico_host_felix_quarantined_objects",
			Help: "Policies, profiles, endpoints, IP sets and failsafe entries the kernel refused, failing closed, by kind.",
		}, []string{"kind"}),
		ipipState: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "felix_ipip_device_state",
			Help: "1 for the state of the IPIP tunnel device tunl0 after the last apply (off, ready, no ipip driver, failed), 0 for the others.",
		}, []string{"state"}),
		calicoApply: prometheus.NewSummary(prometheus.SummaryOpts{
			Name: "felix_int_dataplane_apply_time_seconds", Objectives: calicoObjectives,
			Help: "Time in seconds for each incremental update to the dataplane (after the initial resync).",
		}),
		calicoFirst: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "felix_int_dataplane_initial_resync_time_seconds",
			Help: "Time in seconds that it took to bring the dataplane into sync for the first time.",
		}),
		calicoFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "felix_int_dataplane_failures", Help: "Number of times dataplane updates failed and will be retried.",
		}),
		calicoMessages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "felix_int_dataplane_messages", Help: "Number dataplane messages by type.",
		}, []string{"type"}),
		calicoBatchSize: prometheus.NewSummary(prometheus.SummaryOpts{
			Name: "felix_int_dataplane_msg_batch_size", Objectives: calicoObjectives,
			Help: "Number of messages processed in each batch. Higher values indicate we're doing more batching to try to keep up.",
		}),
	}
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.applySeconds, m.batchSize, m.applyErrors, m.elements, m.chains, m.sets, m.endpoints,
		m.quarantined, m.ipipState, m.calicoApply, m.calicoFirst, m.calicoFailures, m.calicoMessages, m.calicoBatchSize}
}

// failed records a failed apply (it will be retried).
func (m *metrics) failed() {
	m.applyErrors.Inc()
	m.calicoFailures.Inc()
}

// batch records the number of calc updates taken in one loop iteration.
func (m *metrics) batch(n int) {
	m.batchSize.Observe(float64(n))
	m.calicoBatchSize.Observe(float64(n))
}

// message counts one calc update by its type name (ActivePolicyUpdate, ...), as Project Calico
// counts its dataplane messages.
func (m *metrics) message(u any) {
	t := reflect.TypeOf(u)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return
	}
	m.calicoMessages.WithLabelValues(t.Name()).Inc()
}

// observeApply records a successful apply.
func (m *metrics) observeApply(st apply.Stats, seconds float64, chains, sets, weps, heps int) {
	kind := "partial"
	if st.FullSync {
		kind = "full"
	}
	m.applySeconds.WithLabelValues(kind).Observe(seconds)
	if m.firstDone {
		m.calicoApply.Observe(seconds)
	} else {
		m.calicoFirst.Set(seconds)
		m.firstDone = true
	}
	m.elements.WithLabelValues("add").Add(float64(st.ElementsAdded))
	m.elements.WithLabelValues("remove").Add(float64(st.ElementsRemoved))
	m.chains.Set(float64(chains))
	m.sets.Set(float64(sets))
	m.endpoints.WithLabelValues("workload").Set(float64(weps))
	m.endpoints.WithLabelValues("host").Set(float64(heps))
}

// observeQuarantine sets the quarantined objects gauge (every kind, zero included).
func (m *metrics) observeQuarantine(byKind map[string]int) {
	for _, k := range []string{"policy", "profile", "endpoint", "set", "failsafe"} {
		m.quarantined.WithLabelValues(k).Set(float64(byKind[k]))
	}
}

// setIPIPState sets the IPIP device state gauge.
func (m *metrics) setIPIPState(st ipip.State) {
	for _, s := range []ipip.State{ipip.StateOff, ipip.StateReady, ipip.StateNoDriver, ipip.StateFailed} {
		v := 0.0
		if s == st {
			v = 1
		}
		m.ipipState.WithLabelValues(s.String()).Set(v)
	}
}

// MetricCollectors returns a fresh, unused set of the dataplane's collectors, to list the
// metrics it registers (the Grafana dashboard's test) without building a dataplane.
func MetricCollectors() []prometheus.Collector { return newMetrics().collectors() }
