package startup

import (
	"context"
	"net"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/config"
	"github.com/calico-host/calico-host/pkg/daemon"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// Node update operations (the op label of calico_startup_node_updates_total).
const (
	opRegister  = "register"
	opAddresses = "addresses"
)

// Results (the result label).
const (
	resultUpdated   = "updated"   // the Node was written
	resultUnchanged = "unchanged" // the Node was already right
	resultOK        = "ok"
	resultError     = "error"
)

// metrics are calico-startup's Prometheus metrics (Project Calico's startup has none).
type metrics struct {
	datastore  *prometheus.GaugeVec // no label values: one series
	updates    *prometheus.CounterVec
	reconciles *prometheus.CounterVec
	addresses  *prometheus.GaugeVec
	lastUpdate prometheus.Gauge
	ipipDevice *prometheus.GaugeVec
}

func newMetrics() *metrics {
	return &metrics{
		datastore: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "calico_startup_datastore_state", Help: "Datastore (etcd) state: 1 waiting for the datastore, 2 resyncing, 3 in sync (as felix_resync_state).",
		}, nil),
		updates: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "calico_startup_node_updates_total", Help: "Node registrations (op=register) and address checks (op=addresses), by result (updated, unchanged, error).",
		}, []string{"op", "result"}),
		reconciles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "calico_startup_tunnel_reconciles_total", Help: "Reconciles of the Node's IPIP, VXLAN and WireGuard tunnel addresses, by result (ok, error).",
		}, []string{"result"}),
		addresses: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "calico_startup_node_address", Help: "1 when the Node has a BGP address of the IP version (4, 6) after the last successful update, else 0.",
		}, []string{"ip_version"}),
		lastUpdate: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "calico_startup_last_update_timestamp_seconds", Help: "Unix time of the last successful registration, address check or tunnel reconcile.",
		}),
		ipipDevice: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "calico_startup_ipip_device_state",
			Help: "1 for what the last tunnel reconcile found about the IPIP tunnel device tunl0 (off: no IPv4 IPIP pool, available, no ipip driver, failed), 0 for the others.",
		}, []string{"state"}),
	}
}

// MetricCollectors returns fresh, unused copies of the metrics calico-startup registers besides
// the Go and process collectors (to list them, e.g. for the Grafana dashboard's test).
func MetricCollectors() []prometheus.Collector { return newMetrics().Collectors() }

// Collectors are the metrics to register.
func (m *metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.datastore, m.updates, m.reconciles, m.addresses, m.lastUpdate, m.ipipDevice}
}

// setIPIPState sets the IPIP device gauge: 1 for st, 0 for the other states.
func (m *metrics) setIPIPState(st ipipDeviceState) {
	for _, s := range ipipDeviceStates {
		v := 0.0
		if s == st {
			v = 1
		}
		m.ipipDevice.WithLabelValues(string(s)).Set(v)
	}
}

func (m *metrics) onStatus(st syncer.Status) { m.datastore.WithLabelValues().Set(float64(st) + 1) }

// onNodeUpdate records a registration or an address check; node is the Node as written or
// found (nil after an error).
func (m *metrics) onNodeUpdate(op string, changed bool, node *api.Node, err error) {
	switch {
	case err != nil:
		m.updates.WithLabelValues(op, resultError).Inc()
		return
	case changed:
		m.updates.WithLabelValues(op, resultUpdated).Inc()
	default:
		m.updates.WithLabelValues(op, resultUnchanged).Inc()
	}
	if node != nil {
		for _, f := range Families {
			has := 0.0
			if b := node.Spec.BGP; b != nil && *bgpAddress(b, f) != "" {
				has = 1
			}
			m.addresses.WithLabelValues(strconv.Itoa(int(f))).Set(has)
		}
	}
	m.lastUpdate.SetToCurrentTime()
}

func (m *metrics) onReconcile(err error) {
	if err != nil {
		m.reconciles.WithLabelValues(resultError).Inc()
		return
	}
	m.reconciles.WithLabelValues(resultOK).Inc()
	m.lastUpdate.SetToCurrentTime()
}

// Collectors are the component's Prometheus metrics.
func (s *Startup) Collectors() []prometheus.Collector { return s.metrics.Collectors() }

// ServeMetrics serves the component's metrics, with the Go and process collectors, on addr
// (/metrics) until ctx is done, and returns the address it listens on.
func ServeMetrics(ctx context.Context, addr config.ListenAddress, s *Startup, log zerolog.Logger) (net.Addr, error) {
	reg := prometheus.NewRegistry()
	if err := registerAll(reg, append(s.Collectors(), collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))); err != nil {
		return nil, err
	}
	return daemon.Serve(ctx, string(addr), daemon.MetricsHandler(reg), log)
}

func registerAll(reg *prometheus.Registry, cs []prometheus.Collector) error {
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
