package felix

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/compat/report"
	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/config"
	"github.com/calico-host/calico-host/pkg/felix/dataplane"
	"github.com/calico-host/calico-host/pkg/felix/status"
)

// metrics are the daemon's own Prometheus metrics (the calculation graph, the dataplane and the
// status reporters add theirs).
type metrics struct {
	configErrors  prometheus.Counter
	ready         prometheus.Gauge
	restartNeeded prometheus.Gauge
}

func newMetrics() *metrics {
	return &metrics{
		configErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "felix_config_errors_total", Help: "Configuration values ignored because they were invalid or misplaced.",
		}),
		ready: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "felix_ready", Help: "1 once the first full dataplane apply after the datastore sync succeeded.",
		}),
		restartNeeded: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "felix_restart_needed", Help: "1 when a configuration change needs a restart (felix is exiting).",
		}),
	}
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.configErrors, m.ready, m.restartNeeded}
}

// register adds the daemon's metrics and, as configured, the Go and process collectors.
func (m *metrics) register(reg *prometheus.Registry, cfg *config.Config) {
	for _, c := range m.collectors() {
		reg.MustRegister(c)
	}
	reg.MustRegister(hostGauge(cfg.FelixHostname))
	if cfg.PrometheusGoMetricsEnabled {
		reg.MustRegister(collectors.NewGoCollector())
	}
	if cfg.PrometheusProcessMetricsEnabled {
		reg.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
}

// hostGauge is Project Calico's felix_host: 1, with the configured hostname as its label.
func hostGauge(hostname string) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "felix_host", Help: "Configured Felix hostname (as a label); the value is always 1.",
		ConstLabels: prometheus.Labels{"host": hostname},
	})
	g.Set(1)
	return g
}

// MetricCollectors returns fresh, unused copies of the metrics calico-felix registers besides
// the Go and process collectors: its own, the calculation graph's, the dataplane's, the status
// reporters' and the unimplemented-settings gauge (to list them, e.g. for the Grafana
// dashboard's test).
func MetricCollectors() []prometheus.Collector {
	cs := append(newMetrics().collectors(), hostGauge("host"), report.New("felix", zerolog.Nop()).Collector())
	cs = append(cs, calc.NewLoop(calc.New("host", zerolog.Nop()), calc.RunConfig{}).Collectors()...)
	cs = append(cs, dataplane.MetricCollectors()...)
	return append(cs, status.NewMetrics().Collectors()...)
}
