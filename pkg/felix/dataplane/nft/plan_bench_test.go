package nft

import "testing"

// BenchmarkPlanPartial: planning the big ruleset against the mirror of what
// was written, when one workload was added (the common partial sync): a
// full comparison (untracked) and a tracked ruleset that reports only the
// workload's objects.
func BenchmarkPlanPartial(b *testing.B) {
	for _, tracked := range []bool{false, true} {
		name := map[bool]string{false: "compare-all", true: "tracked"}[tracked]
		b.Run(name, func(b *testing.B) {
			cur := loadedMirror(b, bigHost(1000))
			grown := bigHost(1000)
			var scope *changes
			if tracked {
				grown.Track()
				grown.resetJournal()
				addWorkload(grown, 1000)
				scope = grown.journal(1)
			} else {
				addWorkload(grown, 1000)
			}
			var st Stats
			var err error
			for b.Loop() {
				if _, _, st, err = plan(cur, grown, scope); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(st.Ops), "ops")
		})
	}
}

// loadedMirror is the mirror after writing rs to an empty table.
func loadedMirror(tb testing.TB, rs *Ruleset) *mirror {
	m := newMirror()
	_, ed, _, err := plan(m, rs, nil)
	if err != nil {
		tb.Fatal(err)
	}
	ed.apply(m)
	m.table = true
	return m
}
