package dataplane

import (
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/calico-host/calico-host/pkg/felix/calc"
)

func summaryCount(t *testing.T, s prometheus.Summary) uint64 {
	t.Helper()
	var m dto.Metric
	if err := s.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetSummary().GetSampleCount()
}

// TestCalicoDataplaneMetrics: Project Calico's felix_int_dataplane_* metrics move with the
// loop: a failed commit counts in felix_int_dataplane_failures, the first successful apply sets
// the initial resync gauge (not the summary), later applies go to the summary, and every calc
// update is counted by its type.
func TestCalicoDataplaneMetrics(t *testing.T) {
	r := startRunner(t, Config{Hostname: "host1"}, Timing{RetryMin: time.Millisecond, RetryMax: 5 * time.Millisecond})
	m := r.dp.metrics
	r.flaky.failNext(errors.New("boom"))
	first := append(example19(), calc.InSync{})
	r.in <- first
	select {
	case <-r.dp.FirstApplyDone():
	case <-time.After(5 * time.Second):
		t.Fatal("no first apply")
	}
	if n := testutil.ToFloat64(m.calicoFailures); n != 1 {
		t.Errorf("felix_int_dataplane_failures = %v, want 1", n)
	}
	if n := summaryCount(t, m.calicoApply); n != 0 {
		t.Errorf("apply time summary has %d samples after the first apply, want 0 (it goes to the initial resync gauge)", n)
	}
	if n := testutil.ToFloat64(m.calicoMessages.WithLabelValues("InSync")); n != 1 {
		t.Errorf(`felix_int_dataplane_messages{type="InSync"} = %v, want 1`, n)
	}
	if n := testutil.CollectAndCount(m.calicoMessages); n < 2 {
		t.Errorf("%d message types counted, want the types of example19 too", n)
	}
	r.in <- []calc.Update{calc.InSync{}}
	waitFor(t, "a second apply in the summary", func() bool { return summaryCount(t, m.calicoApply) == 1 })
	if n := summaryCount(t, m.calicoBatchSize); n < 2 {
		t.Errorf("felix_int_dataplane_msg_batch_size has %d samples, want one per batch taken", n)
	}
}
