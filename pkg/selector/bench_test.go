package selector

import (
	"fmt"
	"testing"
)

// bench5Terms is a typical namespaced-policy selector with five terms.
const bench5Terms = `projectcalico.org/namespace == "ns-3" && app in {"web", "api", "db"} && ` +
	`has(version) && tier != "legacy" && !has(quarantine)`

// benchLabelSets returns n endpoint-like label sets (7 to 9 labels each), about 1 in 20 of
// which match bench5Terms.
func benchLabelSets(n int) []map[string]string {
	apps := []string{"web", "api", "db", "cache", "queue"}
	out := make([]map[string]string, n)
	for i := range out {
		m := map[string]string{
			"projectcalico.org/namespace":    fmt.Sprintf("ns-%d", i%4),
			"projectcalico.org/orchestrator": "k8s",
			"app":                            apps[i%len(apps)],
			"tier":                           []string{"frontend", "backend", "legacy"}[i%3],
			"pod-template-hash":              fmt.Sprintf("%08x", i*2654435761),
			"team":                           fmt.Sprintf("team-%d", i%17),
			"zone":                           fmt.Sprintf("zone-%c", 'a'+i%3),
		}
		if i%3 != 0 {
			m["version"] = fmt.Sprintf("v%d", i%5)
		}
		if i%11 == 0 {
			m["quarantine"] = "true"
		}
		out[i] = m
	}
	return out
}

// BenchmarkEvaluate5Terms evaluates a five-term selector against 10,000 label sets; one op
// is the whole pass, and ns/eval is the cost of one evaluation.
func BenchmarkEvaluate5Terms(b *testing.B) {
	sel := MustParse(bench5Terms)
	sets := benchLabelSets(10000)
	inherited := make([]Labels, len(sets))
	for i, m := range sets {
		inherited[i] = layered{own: map[string]string{"pod-template-hash": "x"}, parent: Map(m)}
	}
	b.Run("Map", func(b *testing.B) {
		matches := 0
		b.ReportAllocs()
		for b.Loop() {
			matches = 0
			for _, m := range sets {
				if sel.EvaluateMap(m) {
					matches++
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(sets)), "ns/eval")
		b.ReportMetric(float64(matches), "matches")
	})
	b.Run("LayeredLabels", func(b *testing.B) {
		matches := 0
		b.ReportAllocs()
		for b.Loop() {
			matches = 0
			for _, l := range inherited {
				if sel.Evaluate(l) {
					matches++
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(sets)), "ns/eval")
		b.ReportMetric(float64(matches), "matches")
	})
}

func BenchmarkParse5Terms(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(bench5Terms); err != nil {
			b.Fatal(err)
		}
	}
}

// TestBenchSelectorSelectsSome keeps the benchmark honest: its selector must match some but
// not all of the generated label sets.
func TestBenchSelectorSelectsSome(t *testing.T) {
	sel := MustParse(bench5Terms)
	matches := 0
	sets := benchLabelSets(10000)
	for _, m := range sets {
		if sel.EvaluateMap(m) {
			matches++
		}
	}
	if matches == 0 || matches > len(sets)/5 {
		t.Errorf("benchmark selector matches %d of %d label sets", matches, len(sets))
	}
}
