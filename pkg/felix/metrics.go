package felix

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/calico-host/calico-host/pkg/felix/config"
)

// metrics are the daemon's own Prometheus metrics (the dataplane and the status reporters add
// theirs).
type metrics struct {
	watchEvents   prometheus.Counter
	resyncs       prometheus.Counter
	syncerStatus  prometheus.Gauge
	batches       prometheus.Histogram
	configErrors  prometheus.Counter
	endpoints     *prometheus.GaugeVec
	ready         prometheus.Gauge
	restartNeeded prometheus.Gauge
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
		configErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "felix_config_errors_total", Help: "Configuration values ignored because they were invalid or misplaced.",
		}),
		endpoints: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "felix_local_endpoints", Help: "Local endpoints known to the calculation graph, by type.",
		}, []string{"type"}),
		ready: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "felix_ready", Help: "1 once the first full dataplane apply after the datastore sync succeeded.",
		}),
		restartNeeded: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "felix_restart_needed", Help: "1 when a configuration change needs a restart (felix is exiting).",
		}),
	}
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.watchEvents, m.resyncs, m.syncerStatus, m.batches, m.configErrors, m.endpoints,
		m.ready, m.restartNeeded}
}

// register adds the daemon's metrics and, as configured, the Go and process collectors.
func (m *metrics) register(reg *prometheus.Registry, cfg *config.Config) {
	for _, c := range m.collectors() {
		reg.MustRegister(c)
	}
	if cfg.PrometheusGoMetricsEnabled {
		reg.MustRegister(collectors.NewGoCollector())
	}
	if cfg.PrometheusProcessMetricsEnabled {
		reg.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
}
