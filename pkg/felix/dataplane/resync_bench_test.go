package dataplane

import (
	"context"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/netnstest"
)

// BenchmarkFullResync: the periodic full resync (NftablesRefreshInterval) of the calc bench
// shape loaded into a namespace: with nothing else committed to the namespace's ruleset since
// the last apply ("quiet"), and after another program's commit to another table each time
// ("other-commit"). It reports the mean time reading the tables back and committing repairs.
func BenchmarkFullResync(b *testing.B) {
	netnstest.Require(b, "nft", "sysctl")
	ns := netnstest.New(b, "bench")
	dp := newBenchDataplane(b, ns.Path(), nil)
	b.Cleanup(dp.close)
	dp.load(b, benchUpdates(b, calcBenchShape))
	for _, other := range []bool{false, true} {
		name := "quiet"
		if other {
			name = "other-commit"
		}
		b.Run(name, func(b *testing.B) {
			var read, commit time.Duration
			verb := "add"
			for b.Loop() {
				if other {
					b.StopTimer()
					ns.Exec(b, "nft", verb, "table", "ip", "other")
					verb = map[string]string{"add": "delete", "delete": "add"}[verb]
					b.StartTimer()
				}
				dp.nft.RequestFullSync()
				st, err := dp.applyStats(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				read, commit = read+st.ReadTime, commit+st.CommitTime
			}
			b.ReportMetric(float64(read.Microseconds())/1000/float64(b.N), "read-ms")
			b.ReportMetric(float64(commit.Microseconds())/1000/float64(b.N), "commit-ms")
		})
	}
}
