package dataplane

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/calico-host/calico-host/pkg/felix/dataplane/ipip"

	"github.com/calico-host/calico-host/pkg/nft/apply"
)

// metrics are the dataplane's Prometheus collectors.
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
}

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
			Help: "Policies, profiles, endpoints and IP sets the kernel refused, failing closed, by kind.",
		}, []string{"kind"}),
		ipipState: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "felix_ipip_device_state",
			Help: "1 for the state of the IPIP tunnel device tunl0 after the last apply (off, ready, no ipip driver, failed), 0 for the others.",
		}, []string{"state"}),
	}
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.applySeconds, m.batchSize, m.applyErrors, m.elements, m.chains, m.sets, m.endpoints, m.quarantined, m.ipipState}
}

// observeApply records a successful apply.
func (m *metrics) observeApply(st apply.Stats, seconds float64, chains, sets, weps, heps int) {
	kind := "partial"
	if st.FullSync {
		kind = "full"
	}
	m.applySeconds.WithLabelValues(kind).Observe(seconds)
	m.elements.WithLabelValues("add").Add(float64(st.ElementsAdded))
	m.elements.WithLabelValues("remove").Add(float64(st.ElementsRemoved))
	m.chains.Set(float64(chains))
	m.sets.Set(float64(sets))
	m.endpoints.WithLabelValues("workload").Set(float64(weps))
	m.endpoints.WithLabelValues("host").Set(float64(heps))
}

// observeQuarantine sets the quarantined objects gauge (every kind, zero included).
func (m *metrics) observeQuarantine(byKind map[string]int) {
	for _, k := range []string{"policy", "profile", "endpoint", "set"} {
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
