package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/compat"
)

func TestReporterLogsOnceAndKeepsTheGauge(t *testing.T) {
	var buf bytes.Buffer
	r := New("felix", zerolog.New(&buf))
	bpf, _ := compat.FelixParam("bpfenabled")
	f := compat.Finding{Object: "FelixConfiguration default", Field: "spec.bpfEnabled", Value: "true", Setting: bpf}
	g := compat.Finding{Object: "environment", Field: "FELIX_NETLINKTIMEOUTSECS", Value: "20", Setting: bpf}
	if n := len(r.Replace([]compat.Finding{f, g})); n != 2 {
		t.Fatalf("logged %d, want 2", n)
	}
	if n := len(r.Replace([]compat.Finding{f, g})); n != 0 {
		t.Fatalf("logged %d again", n)
	}
	if got := testutil.CollectAndCount(r.Collector()); got != 2 {
		t.Fatalf("gauge has %d series, want 2", got)
	}
	g.Value = "30"
	if n := len(r.Replace([]compat.Finding{g})); n != 1 {
		t.Fatalf("a changed value logged %d times, want 1", n)
	}
	if got := testutil.CollectAndCount(r.Collector()); got != 1 {
		t.Fatalf("gauge has %d series after one went away, want 1", got)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d log lines, want 3:\n%s", len(lines), buf.String())
	}
	var rec map[string]string
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatal(err)
	}
	if rec["object"] != "FelixConfiguration default" || rec["field"] != "spec.bpfEnabled" || rec["value"] != "true" || rec["reason"] == "" {
		t.Errorf("log line %v", rec)
	}
}
