package main

import (
	"context"
	"time"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/felix"
	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane"
)

// Why felix talks to etcd right after its first apply.
//
// Felix connects to etcd before it programs anything. On a host (or namespace) where no ruleset
// used conntrack yet, felix's first nftables transaction is what turns conntrack on, so the
// kernel first meets felix's own etcd connection in the middle of its life. If the first packet
// it sees comes from etcd (a watch event), conntrack takes it for a NEW connection from etcd's
// port 2379 to felix's ephemeral port: the host endpoint's ingress policy drops it (failsafes
// match the destination port), it is never confirmed, and every TCP retransmission meets the
// same fate, until felix itself sends something (a gRPC keepalive after 10 s, a syncer probe).
// The first change after ready then took 7-12 s instead of milliseconds (test/e2e/scale).
//
// A request from felix right after the first apply lets conntrack pick the connection up in the
// right direction instead (an outbound packet to port 2379, which the outbound failsafes
// allow): etcd's answers and later events are then replies of an established connection.

// pokeTimeout bounds the request; it only has to leave the host.
const pokeTimeout = 5 * time.Second

// afterFirstApply wraps a dataplane builder so that fn runs (once, in its own goroutine) as soon
// as the dataplane completed its first apply.
func afterFirstApply(newDP felix.NewDataplane, fn func(context.Context)) felix.NewDataplane {
	return func(cfg dataplane.Config, log zerolog.Logger) (felix.Dataplane, error) {
		dp, err := newDP(cfg, log)
		if err != nil {
			return nil, err
		}
		return firstApplyHook{Dataplane: dp, fn: fn}, nil
	}
}

type firstApplyHook struct {
	felix.Dataplane
	fn func(context.Context)
}

// Run runs the dataplane, and fn once its first apply is done.
func (h firstApplyHook) Run(ctx context.Context, in <-chan []calc.Update, status chan<- dataplane.EndpointStatus, progress func()) {
	go func() {
		select {
		case <-ctx.Done():
		case <-h.FirstApplyDone():
			h.fn(ctx)
		}
	}()
	h.Dataplane.Run(ctx, in, status, progress)
}

// pokeDatastore sends one cheap request on the datastore connection (see above).
func pokeDatastore(ds *datastore.Client, log zerolog.Logger) func(context.Context) {
	return func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, pokeTimeout)
		defer cancel()
		if err := ds.Ping(ctx); err != nil && ctx.Err() == nil {
			log.Debug().Err(err).Msg("Datastore request after the first apply failed")
		}
	}
}
