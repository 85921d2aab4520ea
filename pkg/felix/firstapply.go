package felix

import (
	"context"
	"time"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/datastore"
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
