package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"
)

// Probe answers a health question and explains a "no".
type Probe func() (ok bool, reason string)

// HealthHandler serves /liveness and /readiness (also /health for both): 200 "ok" or 503 with the
// reason.
func HealthHandler(live, ready Probe) http.Handler {
	mux := http.NewServeMux()
	serve := func(p Probe) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			if ok, reason := p(); !ok {
				http.Error(w, reason, http.StatusServiceUnavailable)
				return
			}
			fmt.Fprintln(w, "ok")
		}
	}
	both := func() (bool, string) {
		if ok, r := live(); !ok {
			return false, r
		}
		return ready()
	}
	mux.HandleFunc("/liveness", serve(live))
	mux.HandleFunc("/readiness", serve(ready))
	mux.HandleFunc("/health", serve(both))
	return mux
}

// MetricsHandler serves a Prometheus registry on /metrics.
func MetricsHandler(reg *prometheus.Registry) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	return mux
}

// Serve runs an HTTP server on addr until ctx is done. It returns once listening has started (or
// failed), serving in the background.
func Serve(ctx context.Context, addr string, h http.Handler, log zerolog.Logger) (net.Addr, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error().Err(err).Str("addr", addr).Msg("HTTP server failed")
		}
	}()
	go shutdownOnDone(ctx, srv)
	log.Info().Str("addr", l.Addr().String()).Msg("Serving HTTP")
	return l.Addr(), nil
}
