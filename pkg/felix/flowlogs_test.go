package felix

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/calico-host/calico-host/pkg/netnstest"
)

// TestFlowLogsStart: with FlowLogsFileEnabled felix starts the collector in the dataplane's
// namespace, opens the file and asks the dataplane for NFLOG statements; when an output cannot
// be opened (a TLS CA file that does not exist) felix still starts, without flow logs and
// without NFLOG statements. The collector has the pending feed's hook unless
// FlowLogsPolicyEvaluationMode is None.
func TestFlowLogsStart(t *testing.T) {
	ns := netnstest.New(t, "flowlogs").Path()
	dir := t.TempDir()
	env := []string{"FELIX_DATAPLANENETNS=" + ns, "FELIX_FLOWLOGSFILEENABLED=true", "FELIX_FLOWLOGSFILEDIRECTORY=" + dir}
	t.Run("on", func(t *testing.T) {
		h := newHarness(t, env...)
		dp := h.ready(nil)
		if !dp.cfg.FlowLogs || h.daemon.flowLogs == nil {
			t.Fatalf("dataplane FlowLogs %v, pipeline %v", dp.cfg.FlowLogs, h.daemon.flowLogs)
		}
		if _, err := os.Stat(filepath.Join(dir, "flows.log")); err != nil {
			t.Error(err)
		}
		if h.daemon.flowLogs.pending == nil || h.daemon.pending.isDropped() {
			t.Error("FlowLogsPolicyEvaluationMode Continuous (the default): the collector has no pending hook")
		}
	})
	t.Run("evaluation None", func(t *testing.T) {
		h := newHarness(t, append(env, "FELIX_FLOWLOGSPOLICYEVALUATIONMODE=None")...)
		h.ready(nil)
		if h.daemon.flowLogs == nil || h.daemon.flowLogs.pending != nil || !h.daemon.pending.isDropped() {
			t.Error("FlowLogsPolicyEvaluationMode None: want flow logs without a pending hook, the feed dropped")
		}
	})
	t.Run("output fails", func(t *testing.T) {
		h := newHarness(t, append(env, "FELIX_FLOWLOGSGOLDMANESERVER=127.0.0.1:7443", "FELIX_TYPHACAFILE=/nonexistent/ca.pem",
			"FELIX_TYPHACERTFILE=/nonexistent/cert.pem", "FELIX_TYPHAKEYFILE=/nonexistent/key.pem")...)
		dp := h.ready(nil)
		if dp.cfg.FlowLogs || h.daemon.flowLogs != nil {
			t.Errorf("dataplane FlowLogs %v, pipeline %v: want neither", dp.cfg.FlowLogs, h.daemon.flowLogs)
		}
	})
}
