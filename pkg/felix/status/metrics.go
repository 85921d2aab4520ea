package status

import "github.com/prometheus/client_golang/prometheus"

// Metrics counts status writes and failures. A nil *Metrics is not allowed; use NewMetrics.
type Metrics struct {
	writes *prometheus.CounterVec
	errors *prometheus.CounterVec
	leases prometheus.Counter
}

// NewMetrics creates the reporters' metrics (register them with Collectors).
func NewMetrics() *Metrics {
	m := &Metrics{
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "felix_status_writes_total", Help: "Status keys written to etcd (agent, endpoint) and endpoint status files written or removed (file), by reporter.",
		}, []string{"reporter"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "felix_status_errors_total", Help: "Failed status writes, deletes and listings, by reporter.",
		}, []string{"reporter"}),
		leases: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "felix_status_leases_granted_total", Help: "Leases granted for the agent status key.",
		}),
	}
	for _, r := range []string{"agent", "endpoint", "file"} { // export zeros from the start
		m.writes.WithLabelValues(r)
		m.errors.WithLabelValues(r)
	}
	return m
}

// Collectors returns the metrics to register.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.writes, m.errors, m.leases}
}
