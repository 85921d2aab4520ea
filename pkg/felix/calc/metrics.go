package calc

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/calico-host/calico-host/pkg/syncer"
)

// metrics are the loop's Prometheus metrics: what it received from the syncer and what it sent
// to the dataplane.
type metrics struct {
	watchEvents  prometheus.Counter
	resyncs      prometheus.Counter
	syncerStatus prometheus.Gauge
	batches      prometheus.Histogram
	endpoints    *prometheus.GaugeVec
}

func newMetrics() *metrics {
	return &metrics{
		watchEvents: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "felix_datastore_watch_events_total", Help: "Key changes received from the etcd watch.",
		}),
		resyncs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "felix_datastore_resyncs_total", Help: "Complete snapshots of the datastore received (initial list and re-lists).",
		}),
		syncerStatus: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "felix_datastore_syncer_status", Help: "0 waiting for the datastore, 1 resyncing, 2 in sync.",
		}),
		batches: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "felix_calc_batch_size", Help: "Updates per batch from the calculation graph to the dataplane.",
			Buckets: prometheus.ExponentialBuckets(1, 4, 9),
		}),
		endpoints: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "felix_local_endpoints", Help: "Local endpoints known to the calculation graph, by type.",
		}, []string{"type"}),
	}
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.watchEvents, m.resyncs, m.syncerStatus, m.batches, m.endpoints}
}

func (m *metrics) onMessage(msg syncer.Message) {
	m.syncerStatus.Set(float64(msg.Status))
	if msg.Snapshot {
		m.resyncs.Inc()
		return
	}
	m.watchEvents.Add(float64(len(msg.Updates)))
}

func (m *metrics) onFlush(updates int, eps *endpointCalc) {
	m.batches.Observe(float64(updates))
	m.endpoints.WithLabelValues("workload").Set(float64(eps.workloads))
	m.endpoints.WithLabelValues("host").Set(float64(eps.hosts))
}
