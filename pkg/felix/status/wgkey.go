package status

import (
	"context"
	"fmt"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
)

// maxKeyWrites bounds the compare-and-swap retries of one key publication.
const maxKeyWrites = 5

// PublishWireguardKeys writes this host's WireGuard public keys into its Node's
// status.wireguardPublicKey and status.wireguardPublicKeyV6 ("" removes a key), as Project
// Calico's felix does; the other hosts' felixes configure their peers from them. The Node is
// updated read-modify-write at its revision; nothing is written when the keys are already there.
func PublishWireguardKeys(ctx context.Context, ds *datastore.Client, node, v4, v6 string) (changed bool, err error) {
	for attempt := 1; ; attempt++ {
		n, err := datastore.GetAs[*api.Node](ctx, ds, "", node)
		if err != nil {
			return false, fmt.Errorf("reading node %s: %w", node, err)
		}
		if n.Status.WireguardPublicKey == v4 && n.Status.WireguardPublicKeyV6 == v6 {
			return false, nil
		}
		n.Status.WireguardPublicKey, n.Status.WireguardPublicKeyV6 = v4, v6
		_, err = ds.Update(ctx, n)
		if err == nil {
			return true, nil
		}
		if !datastore.IsConflict(err) || attempt >= maxKeyWrites {
			return false, fmt.Errorf("publishing the WireGuard keys of node %s: %w", node, err)
		}
	}
}
