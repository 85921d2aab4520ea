package dashboard

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/calico-host/calico-host/pkg/confd"
	"github.com/calico-host/calico-host/pkg/felix"
	"github.com/calico-host/calico-host/pkg/startup"
)

const dashboardFile = "../../docs/grafana-dashboard.json"

// registeredMetrics lists every metric calico-felix, calico-confd and calico-startup register (name -> its
// labels), from the same collectors they register, plus the series Prometheus derives from histograms and
// summaries and the "instance" and "job" labels it adds.
func registeredMetrics(t *testing.T) map[string][]string {
	t.Helper()
	cs := append(felix.MetricCollectors(), confd.MetricCollectors()...)
	cs = append(cs, startup.MetricCollectors()...)
	cs = append(cs, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	descRE := regexp.MustCompile(`fqName: "([^"]+)".*constLabels: \{([^}]*)\}.*variableLabels: \{([^}]*)\}`)
	out := map[string][]string{}
	for _, c := range cs {
		ch := make(chan *prometheus.Desc, 64)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			m := descRE.FindStringSubmatch(d.String())
			if m == nil {
				t.Fatalf("cannot read %s", d)
			}
			labels := []string{"instance", "job", "le", "quantile"}
			for _, l := range strings.Split(m[2], ",") {
				labels = append(labels, strings.SplitN(l, "=", 2)[0])
			}
			labels = append(labels, strings.Split(m[3], ",")...)
			for _, suffix := range []string{"", "_bucket", "_sum", "_count"} {
				out[m[1]+suffix] = labels
			}
		}
	}
	return out
}

// TestDashboardQueriesExist: every metric the shipped Grafana dashboard queries is one calico-felix
// or calico-confd registers, and every label it groups, filters or names a legend by is one of that metric's.
func TestDashboardQueriesExist(t *testing.T) {
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr, LegendFormat string }
		}
		Templating struct{ List []struct{ Query any } }
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	reg := registeredMetrics(t)
	metricRE := regexp.MustCompile(`\b(?:felix|calico|go|process)_[a-z0-9_]+`)
	labelRE := regexp.MustCompile(`(?:by \(([^)]*)\))|([a-z_]+)=~?"|\{\{([a-z_]+)\}\}`)
	queries := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			queries++
			names := metricRE.FindAllString(tg.Expr, -1)
			if len(names) == 0 {
				t.Errorf("panel %q: no metric in %q", p.Title, tg.Expr)
			}
			var labels []string
			for _, m := range labelRE.FindAllStringSubmatch(tg.Expr+" "+tg.LegendFormat, -1) {
				for _, l := range append(strings.Split(m[1], ","), m[2], m[3]) {
					if l = strings.TrimSpace(l); l != "" {
						labels = append(labels, l)
					}
				}
			}
			for _, n := range names {
				known, ok := reg[n]
				if !ok {
					t.Errorf("panel %q queries %s, which neither calico-felix nor calico-confd registers", p.Title, n)
					continue
				}
				for _, l := range labels {
					if !slices.Contains(known, l) {
						t.Errorf("panel %q uses label %q, which %s does not have (%v)", p.Title, l, n, known)
					}
				}
			}
		}
	}
	if queries < 10 {
		t.Errorf("only %d queries in the dashboard", queries)
	}
}
