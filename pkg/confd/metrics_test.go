package confd

import (
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/calico-host/calico-host/pkg/syncer"
)

// sessionMetrics scrapes the BGP session collector of a BIRD socket.
func sessionMetrics(t *testing.T, socket string) string {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(newMetrics(socket).sessions)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			b.WriteString(mf.GetName())
			for _, l := range m.GetLabel() {
				b.WriteString(" " + l.GetName() + "=" + l.GetValue())
			}
			b.WriteString(" " + strconv.FormatFloat(m.GetGauge().GetValue(), 'g', -1, 64) + "\n")
		}
	}
	return b.String()
}

// TestConfdMetrics: the datastore state, sync results, reloads and configured peers follow the
// daemon's events; without BIRD, calico_confd_bird_up is 0 and no session is reported.
func TestConfdMetrics(t *testing.T) {
	m := newMetrics(filepath.Join(t.TempDir(), "no-bird.ctl"))
	m.onStatus(syncer.ResyncInProgress)
	if v := testutil.ToFloat64(m.datastore); v != 2 {
		t.Errorf("datastore state while resyncing = %v, want 2", v)
	}
	m.onStatus(syncer.InSync)
	m.onSync(Result{Reloaded: true, Sessions: [2]int{3, 1}}, nil, time.Millisecond)
	m.onSync(Result{}, errors.New("bird -p failed"), time.Millisecond)
	checks := map[string]float64{
		"datastore": testutil.ToFloat64(m.datastore), "ok": testutil.ToFloat64(m.syncs.WithLabelValues("ok")),
		"error": testutil.ToFloat64(m.syncs.WithLabelValues("error")), "reloads": testutil.ToFloat64(m.reloads),
		"v4 peers": testutil.ToFloat64(m.peers.WithLabelValues("4")), "v6 peers": testutil.ToFloat64(m.peers.WithLabelValues("6")),
	}
	want := map[string]float64{"datastore": 3, "ok": 1, "error": 1, "reloads": 1, "v4 peers": 3, "v6 peers": 1}
	for k, w := range want {
		if checks[k] != w {
			t.Errorf("%s = %v, want %v", k, checks[k], w)
		}
	}
	if got := sessionMetrics(t, m.sessions.socket); got != "calico_confd_bird_up 0\n" {
		t.Errorf("without BIRD: %q", got)
	}
}
