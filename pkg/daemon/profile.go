package daemon

import (
	"context"
	"fmt"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"runtime"
	rpprof "runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"
)

// Profiles are Project Calico felix's signal-triggered profiles: SIGUSR1 writes a heap profile to
// Memory, SIGUSR2 a 10-second CPU profile to CPU. "<timestamp>" in a path is replaced by the
// time of the signal; an empty path leaves its signal alone.
type Profiles struct {
	Memory, CPU string
	// CPUDuration is how long a CPU profile runs (default 10 s, as Project Calico).
	CPUDuration time.Duration
	// Now is the clock for <timestamp> (default time.Now).
	Now func() time.Time
}

// ProfileOnSignals handles SIGUSR1 and SIGUSR2 as Profiles says until ctx ends.
func ProfileOnSignals(ctx context.Context, p Profiles, log zerolog.Logger) {
	if p.CPUDuration <= 0 {
		p.CPUDuration = 10 * time.Second
	}
	if p.Now == nil {
		p.Now = time.Now
	}
	sigs := make(chan os.Signal, 2)
	if p.Memory != "" {
		signal.Notify(sigs, syscall.SIGUSR1)
	}
	if p.CPU != "" {
		signal.Notify(sigs, syscall.SIGUSR2)
	}
	go func() {
		defer signal.Stop(sigs)
		for {
			select {
			case <-ctx.Done():
				return
			case s := <-sigs:
				p.write(ctx, s, log)
			}
		}
	}()
}

func (p Profiles) write(ctx context.Context, s os.Signal, log zerolog.Logger) {
	var path string
	var err error
	if s == syscall.SIGUSR1 {
		path = renderProfilePath(p.Memory, p.Now())
		err = writeHeapProfile(path)
	} else {
		path = renderProfilePath(p.CPU, p.Now())
		err = writeCPUProfile(ctx, path, p.CPUDuration)
	}
	if err != nil {
		log.Error().Err(err).Str("file", path).Msg("Writing a profile failed")
		return
	}
	log.Info().Str("file", path).Stringer("signal", s).Msg("Profile written")
}

// renderProfilePath replaces <timestamp> as Project Calico's felix does.
func renderProfilePath(tmpl string, now time.Time) string {
	return strings.Replace(tmpl, "<timestamp>", now.Format("2006-01-02-15:04:05"), 1)
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("creating the memory profile: %w", err)
	}
	runtime.GC()
	if err := rpprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("writing the memory profile: %w", err)
	}
	return f.Close()
}

func writeCPUProfile(ctx context.Context, path string, d time.Duration) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("creating the CPU profile: %w", err)
	}
	if err := rpprof.StartCPUProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("starting the CPU profile: %w", err)
	}
	t := time.NewTimer(d)
	select {
	case <-ctx.Done():
	case <-t.C:
	}
	t.Stop()
	rpprof.StopCPUProfile()
	return f.Close()
}

// PprofHandler serves Go's pprof endpoints under /debug/pprof/ (Project Calico's DebugPort).
// They are unauthenticated: bind them to localhost.
func PprofHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}
