// Package felix is the calico-felix daemon: it runs the syncer, the calculation graph and the
// dataplane as three loops connected by channels, resolves its configuration (local sources plus
// the datastore's part that calc reports), waits for the datastore to be ready, reports agent and
// endpoint status to etcd, and talks to systemd (READY after the first full apply, STATUS lines,
// a watchdog that needs every loop to make progress) and to HTTP health and metrics clients.
//
// The loops are used through the small interfaces below, so that tests can run the daemon with
// fakes; cmd/calico-felix wires in pkg/syncer, pkg/felix/calc and pkg/felix/dataplane.
package felix

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// Syncer streams the datastore (pkg/syncer.Syncer).
type Syncer interface {
	// Run sends messages to out until ctx is done.
	Run(ctx context.Context, out chan<- syncer.Message)
	Status() syncer.Status
}

// CalcGraph is the calculation graph (pkg/felix/calc.Graph with its RunConfig bound).
type CalcGraph interface {
	// Run turns syncer messages into dataplane update batches until ctx is done, calling
	// progress whenever it makes progress and periodically while idle.
	Run(ctx context.Context, in <-chan syncer.Message, out chan<- []calc.Update, progress func())
}

// Dataplane programs the kernel (pkg/felix/dataplane.Dataplane).
type Dataplane interface {
	// Run applies update batches until ctx is done, reporting endpoint statuses, and calling
	// progress whenever it makes progress and periodically while idle. Returning leaves the
	// kernel state in place.
	Run(ctx context.Context, in <-chan []calc.Update, status chan<- dataplane.EndpointStatus, progress func())
	// FirstApplyDone is closed after the first successful full apply after InSync.
	FirstApplyDone() <-chan struct{}
	// Collectors are the dataplane's Prometheus metrics.
	Collectors() []prometheus.Collector
}

// NewDataplane builds the dataplane once the configuration is known.
type NewDataplane func(cfg dataplane.Config, log zerolog.Logger) (Dataplane, error)

// Loop names, as the watchdog and the logs know them.
const (
	LoopSyncer    = "syncer"
	LoopCalc      = "calc"
	LoopDataplane = "dataplane"
)
