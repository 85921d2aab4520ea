package confd

import (
	"context"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/calico-host/calico-host/pkg/birdctl"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// metrics are calico-confd's Prometheus metrics (Project Calico's confd has none): the datastore
// connection, syncs and reloads, the configured BGP peers, and (asked of BIRD at each scrape)
// the BGP sessions by state.
type metrics struct {
	datastore *prometheus.GaugeVec // no label values: one series
	syncs     *prometheus.CounterVec
	seconds   prometheus.Histogram
	reloads   prometheus.Counter
	peers     *prometheus.GaugeVec
	sessions  *sessionCollector
}

func newMetrics(birdSocket string) *metrics {
	return &metrics{
		datastore: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "calico_confd_datastore_state", Help: "Datastore (etcd) state: 1 waiting for the datastore, 2 resyncing, 3 in sync (as felix_resync_state).",
		}, nil),
		syncs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "calico_confd_syncs_total", Help: "Renders of BIRD's configuration with their checks and reload, by result (ok, error).",
		}, []string{"result"}),
		seconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "calico_confd_sync_seconds", Help: "Time to render, check and apply BIRD's configuration.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}),
		reloads: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "calico_confd_bird_reloads_total", Help: "Successful reloads of BIRD after its configuration changed.",
		}),
		peers: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "calico_confd_bgp_peers_configured", Help: "BGP peers in the configuration last applied, by IP version (4, 6).",
		}, []string{"ip_version"}),
		sessions: &sessionCollector{socket: birdSocket, desc: prometheus.NewDesc("calico_confd_bgp_sessions",
			"BGP sessions in BIRD by state (Established, Active, Connect, ...), asked of BIRD at each scrape.", []string{"state"}, nil),
			up: prometheus.NewDesc("calico_confd_bird_up", "1 when BIRD answered on its control socket at this scrape.", nil, nil)},
	}
}

// MetricCollectors returns fresh, unused copies of the metrics calico-confd registers besides
// the Go and process collectors (to list them, e.g. for the Grafana dashboard's test).
func MetricCollectors() []prometheus.Collector { return newMetrics(DefaultBIRDSocket).Collectors() }

// Collectors are the metrics to register.
func (m *metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.datastore, m.syncs, m.seconds, m.reloads, m.peers, m.sessions}
}

func (m *metrics) onStatus(st syncer.Status) { m.datastore.WithLabelValues().Set(float64(st) + 1) }

func (m *metrics) onSync(res Result, err error, took time.Duration) {
	m.seconds.Observe(took.Seconds())
	if err != nil {
		m.syncs.WithLabelValues("error").Inc()
		return
	}
	m.syncs.WithLabelValues("ok").Inc()
	if res.Reloaded {
		m.reloads.Inc()
	}
	m.peers.WithLabelValues("4").Set(float64(res.Sessions[0]))
	m.peers.WithLabelValues("6").Set(float64(res.Sessions[1]))
}

// sessionCollector asks BIRD for its protocols when scraped.
type sessionCollector struct {
	socket   string
	desc, up *prometheus.Desc
}

func (c *sessionCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc; ch <- c.up }

func (c *sessionCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	counts, err := bgpSessionStates(ctx, c.socket)
	up := 1.0
	if err != nil {
		up = 0
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, up)
	for state, n := range counts {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), state)
	}
}

// bgpSessionStates counts BIRD's BGP protocols by BGP state.
func bgpSessionStates(ctx context.Context, socket string) (map[string]int, error) {
	cl, err := birdctl.Dial(ctx, socket)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	protos, err := cl.Protocols(ctx)
	if err != nil {
		return nil, err
	}
	counts := map[string]int{}
	for _, p := range protos {
		if p.Proto != "BGP" {
			continue
		}
		state := p.BGPState
		if state == "" {
			state, _, _ = strings.Cut(strings.TrimSpace(p.Info), " ")
		}
		if state == "" {
			state = p.State
		}
		counts[state]++
	}
	return counts, nil
}
