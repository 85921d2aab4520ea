package report

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/compat"
)

// MetricName is the gauge of the settings a daemon found set but not implemented: 1 per
// component, object and field while the setting stays.
const MetricName = "calico_host_unimplemented_settings"

// Reporter logs each finding once (again only when its value changes, or after it went away and
// came back) and keeps a gauge of the current findings. It is safe for concurrent use.
type Reporter struct {
	component string
	log       zerolog.Logger
	gauge     *prometheus.GaugeVec

	mu      sync.Mutex
	current map[findingKey]string // value
}

type findingKey struct{ object, field string }

// New returns a reporter for a component ("felix", "confd", "startup").
func New(component string, log zerolog.Logger) *Reporter {
	return &Reporter{
		component: component,
		log:       log,
		gauge: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: MetricName,
			Help: "Project Calico settings that are set but not implemented by calico-host (1 per object and field); see docs/compatibility.md.",
		}, []string{"component", "object", "field"}),
		current: map[findingKey]string{},
	}
}

// Collector is the gauge, for the daemon's metrics registry.
func (r *Reporter) Collector() prometheus.Collector { return r.gauge }

// Replace makes findings the current set: new ones (or new values) are logged, and the gauge
// follows. It returns the findings it logged.
func (r *Reporter) Replace(findings []compat.Finding) []compat.Finding {
	r.mu.Lock()
	defer r.mu.Unlock()
	next := make(map[findingKey]string, len(findings))
	var logged []compat.Finding
	for _, f := range findings {
		k := findingKey{f.Object, f.Field}
		next[k] = f.Value
		if prev, seen := r.current[k]; seen && prev == f.Value {
			continue
		}
		logged = append(logged, f)
		f.Log(r.log)
		r.gauge.WithLabelValues(r.component, f.Object, f.Field).Set(1)
	}
	for k := range r.current {
		if _, still := next[k]; !still {
			r.gauge.DeleteLabelValues(r.component, k.object, k.field)
		}
	}
	r.current = next
	return logged
}
