package felix

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// testNetNS creates a network namespace of a random name for the test and returns its path.
func testNetNS(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (network namespaces)")
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "flt" + hex.EncodeToString(b)
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	return "/var/run/netns/" + name
}

// TestFlowLogsStart: with FlowLogsFileEnabled felix starts the collector in the dataplane's
// namespace, opens the file and asks the dataplane for NFLOG statements; when an output cannot
// be opened (a TLS CA file that does not exist) felix still starts, without flow logs and
// without NFLOG statements. The collector has the pending feed's hook unless
// FlowLogsPolicyEvaluationMode is None.
func TestFlowLogsStart(t *testing.T) {
	ns := testNetNS(t)
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
