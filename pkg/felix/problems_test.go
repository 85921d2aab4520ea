package felix

import (
	"strings"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/daemon/notifytest"
)

// TestDataplaneProblemsReported: what the dataplane cannot program (here: IPIP routes without
// tunl0) is on felix's STATUS line and makes the readiness probe fail with it as the reason;
// when it is gone, felix is ready again.
func TestDataplaneProblemsReported(t *testing.T) {
	sock := notifytest.Listen(t, 0)
	h := newHarness(t)
	dp := h.ready(nil)
	sock.WaitFor(t, "STATUS=In sync: 0 endpoints programmed (0 up)", 5*time.Second)
	const p = "IPIP: 3 routes of IPIP pools not programmed: tunl0 is not available (no ipip driver)"
	dp.setProblem(p)
	sock.WaitFor(t, "STATUS=In sync: 0 endpoints programmed (0 up); 0 workload and 0 host endpoints; "+p, 5*time.Second)
	if ok, reason := h.daemon.readiness(); ok || !strings.Contains(reason, "no ipip driver") {
		t.Errorf("readiness with a dataplane problem = %v %q", ok, reason)
	}
	dp.setProblem("")
	if ok, reason := h.daemon.readiness(); !ok {
		t.Errorf("not ready once the problem is gone: %q", reason)
	}
}
