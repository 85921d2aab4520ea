package nft

import "testing"

// BenchmarkPlanPartial: diffing the big ruleset against the mirror of what
// was written, when one workload was added (the common partial sync).
func BenchmarkPlanPartial(b *testing.B) {
	base := bigHost(1000)
	_, cur, _, err := plan(newMirror(), base)
	if err != nil {
		b.Fatal(err)
	}
	grown := bigHost(1000)
	addWorkload(grown, 1000)
	var st Stats
	for b.Loop() {
		if _, _, st, err = plan(cur, grown); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(st.Ops), "ops")
}
