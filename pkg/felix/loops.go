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

// Loop names, as the watchdog and the logs know them. The syncer has no progress callback, so
// only the calculation graph and the dataplane are watched.
const (
	LoopSyncer    = "syncer"
	LoopCalc      = "calc"
	LoopDataplane = "dataplane"
)
