package calc

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/calico-host/calico-host/pkg/syncer"
)

// metrics are the loop's Prometheus metrics: what it received from the syncer and what it sent
// to the dataplane. Besides calico-host's own names, it keeps Project Calico's felix metrics
// where the meaning is the same (felix_resync_state, felix_cluster_num_*, felix_active_local_*),
// so that dashboards and alerts written for Project Calico's felix work unchanged.
type metrics struct {
	watchEvents  prometheus.Counter
	resyncs      prometheus.Counter
	syncerStatus prometheus.Gauge
	batches      prometheus.Histogram
	endpoints    *prometheus.GaugeVec

	resyncState    prometheus.Gauge
	resyncsStarted prometheus.Counter
	updates        *prometheus.CounterVec
	outputEvents   prometheus.Counter
	cluster        map[string]prometheus.Gauge // by resource plural
	activeEPs      prometheus.Gauge
	activePols     prometheus.Gauge
}

// clusterGauges are Project Calico's felix_cluster_num_* gauges, by the resource plural each counts.
var clusterGauges = []struct{ plural, name, help string }{
	{"nodes", "felix_cluster_num_hosts", "Total number of calico hosts in the cluster."},
	{"workloadendpoints", "felix_cluster_num_workload_endpoints", "Total number of workload endpoints cluster-wide."},
	{"hostendpoints", "felix_cluster_num_host_endpoints", "Total number of host endpoints cluster-wide."},
	{"tiers", "felix_cluster_num_tiers", "Total number of tiers cluster-wide."},
	{"policies", "felix_cluster_num_policies", "Total number of policies cluster-wide."},
	{"profiles", "felix_cluster_num_profiles", "Total number of profiles cluster-wide."},
}

func newMetrics() *metrics {
	m := &metrics{
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
		resyncState: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "felix_resync_state", Help: "Current datastore state: 1 waiting for the datastore, 2 resyncing, 3 in sync (as Project Calico's felix).",
		}),
		resyncsStarted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "felix_resyncs_started", Help: "Resyncs with the datastore started (complete snapshots received).",
		}),
		updates: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "felix_calc_graph_updates_processed", Help: "Number of datastore updates processed by the calculation graph.",
		}, []string{"type"}),
		outputEvents: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "felix_calc_graph_output_events", Help: "Number of events emitted by the calculation graph.",
		}),
		activeEPs: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "felix_active_local_endpoints", Help: "Number of active endpoints on this host.",
		}),
		activePols: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "felix_active_local_policies", Help: "Number of active policies on this host.",
		}),
		cluster: map[string]prometheus.Gauge{},
	}
	for _, g := range clusterGauges {
		m.cluster[g.plural] = prometheus.NewGauge(prometheus.GaugeOpts{Name: g.name, Help: g.help})
	}
	return m
}

func (m *metrics) collectors() []prometheus.Collector {
	cs := []prometheus.Collector{m.watchEvents, m.resyncs, m.syncerStatus, m.batches, m.endpoints,
		m.resyncState, m.resyncsStarted, m.updates, m.outputEvents, m.activeEPs, m.activePols}
	for _, g := range clusterGauges {
		cs = append(cs, m.cluster[g.plural])
	}
	return cs
}

func (m *metrics) onMessage(msg syncer.Message) {
	m.syncerStatus.Set(float64(msg.Status))
	m.resyncState.Set(float64(msg.Status) + 1)
	if msg.Snapshot {
		m.resyncs.Inc()
		m.resyncsStarted.Inc()
		m.updates.WithLabelValues("snapshot").Add(float64(len(msg.Updates)))
		return
	}
	m.watchEvents.Add(float64(len(msg.Updates)))
	m.updates.WithLabelValues("event").Add(float64(len(msg.Updates)))
}

func (m *metrics) onFlush(updates int, g *Graph) {
	m.batches.Observe(float64(updates))
	m.outputEvents.Add(float64(updates))
	eps := g.endpoints
	m.endpoints.WithLabelValues("workload").Set(float64(eps.workloads))
	m.endpoints.WithLabelValues("host").Set(float64(eps.hosts))
	m.activeEPs.Set(float64(eps.workloads + eps.hosts))
	m.activePols.Set(float64(len(g.policies.rendered)))
	for plural, gauge := range m.cluster {
		gauge.Set(float64(g.kinds[plural]))
	}
}
