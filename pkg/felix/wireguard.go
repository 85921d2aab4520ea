package felix

import (
	"context"
	"fmt"
	"time"

	"github.com/calico-host/calico-host/internal/backoff"
	"github.com/calico-host/calico-host/pkg/felix/dataplane"
	"github.com/calico-host/calico-host/pkg/felix/status"
)

// prepareWireguard readies the WireGuard private keys (kept, created, or removed when WireGuard
// is off) before the dataplane starts, and publishes the public keys in this host's Node status
// (a cleared key when off) in the background until the write succeeds.
func (d *Daemon) prepareWireguard(ctx context.Context) error {
	w := d.dpCfg.Wireguard
	if !w.Enabled && !w.EnabledV6 && d.o.Datastore == nil {
		return nil
	}
	v4, v6, err := dataplane.WireguardKeys(d.dpCfg)
	if err != nil {
		return fmt.Errorf("WireGuard keys: %w", err)
	}
	if d.o.Datastore == nil {
		return nil
	}
	d.wg.Go(func() { d.publishWireguardKeys(ctx, v4, v6) })
	return nil
}

func (d *Daemon) publishWireguardKeys(ctx context.Context, v4, v6 string) {
	b := backoff.Backoff{Min: time.Second, Max: 30 * time.Second, Jitter: 0.2}
	for {
		changed, err := status.PublishWireguardKeys(ctx, d.o.Datastore, d.cfg.FelixHostname, v4, v6)
		if err == nil {
			if changed {
				d.log.Info().Str("publicKey", v4).Str("publicKeyV6", v6).Msg("Published the WireGuard public keys in the Node status")
			}
			return
		}
		d.log.Warn().Err(err).Msg("Could not publish the WireGuard public keys; retrying")
		if b.Wait(ctx) != nil {
			return
		}
	}
}
