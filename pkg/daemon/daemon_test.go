package daemon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/daemon/notifytest"
)

func TestParseLevel(t *testing.T) {
	for in, want := range map[string]zerolog.Level{"Debug": zerolog.DebugLevel, "INFO": zerolog.InfoLevel,
		"Warning": zerolog.WarnLevel, "error": zerolog.ErrorLevel, "None": zerolog.Disabled, "": zerolog.InfoLevel} {
		got, err := ParseLevel(in)
		if err != nil || got != want {
			t.Errorf("ParseLevel(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseLevel("loud"); err == nil || !strings.Contains(err.Error(), `"loud"`) {
		t.Errorf("ParseLevel(loud) error = %v", err)
	}
}

func TestTextLoggerForJournald(t *testing.T) {
	t.Setenv("JOURNAL_STREAM", "8:1234")
	t.Setenv("CALICO_LOG_FORMAT", "")
	var buf bytes.Buffer
	log := NewLogger(&buf, "felix", zerolog.InfoLevel, FormatAuto)
	log.Info().Int("chains", 3).Msg("Applied")
	log.Debug().Msg("hidden")
	out := buf.String()
	if !strings.Contains(out, "Applied") || !strings.Contains(out, "chains=3") || !strings.Contains(out, "component=felix") {
		t.Errorf("unexpected log line %q", out)
	}
	if strings.Contains(out, "hidden") || strings.Contains(out, "T") && strings.Contains(out, "Z ") {
		t.Errorf("debug line or timestamp leaked: %q", out)
	}
}

func TestNotifierReadyAndStatus(t *testing.T) {
	sock := notifytest.Listen(t, 0)
	n := NewNotifier(zerolog.Nop())
	n.Status("waiting for %s", "etcd")
	n.Status("waiting for %s", "etcd") // unchanged: not sent twice
	n.Ready()
	n.Ready()
	seen := sock.WaitFor(t, "READY=1", 2*time.Second)
	if len(seen) != 1 || seen[0] != "STATUS=waiting for etcd" {
		t.Errorf("before READY got %q", seen)
	}
	time.Sleep(50 * time.Millisecond)
	if extra := sock.Drain(); len(extra) != 0 {
		t.Errorf("READY sent twice or extra messages: %q", extra)
	}
}

func TestWatchdogStopsPettingWhenALoopStalls(t *testing.T) {
	sock := notifytest.Listen(t, 200*time.Millisecond)
	n := NewNotifier(zerolog.Nop())
	if n.WatchdogInterval() != 200*time.Millisecond {
		t.Fatalf("watchdog interval %v", n.WatchdogInterval())
	}
	w := NewWatchdog(n, zerolog.Nop(), "syncer", "dataplane")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := make(chan struct{})
	go func() { // only "syncer" keeps beating; "dataplane" stalls after a while
		t0 := time.Now()
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
				w.Beat("syncer")
				if time.Since(t0) < 300*time.Millisecond {
					w.Beat("dataplane")
				}
			}
		}
	}()
	defer close(stop)
	go w.Run(ctx)
	sock.WaitFor(t, "WATCHDOG=1", time.Second)
	time.Sleep(500 * time.Millisecond) // dataplane is now stale
	sock.Drain()
	time.Sleep(300 * time.Millisecond)
	if got := sock.Drain(); len(got) != 0 {
		t.Fatalf("watchdog still petted with a stalled loop: %q", got)
	}
	w.Beat("syncer") // its goroutine may have been starved on a loaded machine (it once was)
	if w.Healthy() || len(w.Stale()) != 1 || w.Stale()[0] != "dataplane" {
		t.Fatalf("stale loops = %v", w.Stale())
	}
}

func TestHealthServer(t *testing.T) {
	var ready atomic.Bool
	h := HealthHandler(func() (bool, string) { return true, "" }, func() (bool, string) { return ready.Load(), "not in sync" })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, err := Serve(ctx, "127.0.0.1:0", h, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr.String() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("/liveness"); code != 200 {
		t.Errorf("liveness %d", code)
	}
	if code, body := get("/readiness"); code != 503 || !strings.Contains(body, "not in sync") {
		t.Errorf("readiness %d %q", code, body)
	}
	ready.Store(true)
	if code, _ := get("/readiness"); code != 200 {
		t.Errorf("readiness after ready %d", code)
	}
}

func TestExitCode(t *testing.T) {
	cfgErr := fmt.Errorf("loading configuration: %w", ConfigError(errors.New("bad value")))
	for _, tc := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{errors.New("etcd unreachable"), ExitFailure},
		{cfgErr, ExitConfig},
		{fmt.Errorf("outer: %w", cfgErr), ExitConfig},
		{ConfigError(nil), 0},
	} {
		if got := ExitCode(tc.err); got != tc.want {
			t.Errorf("ExitCode(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
	if cfgErr.Error() != "loading configuration: bad value" {
		t.Errorf("message %q", cfgErr.Error())
	}
}
