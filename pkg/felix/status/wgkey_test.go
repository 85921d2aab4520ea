package status

import (
	"context"
	"strings"
	"testing"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
)

// TestPublishWireguardKeys writes the public keys into the Node's status in Project Calico's
// JSON, keeps the rest of the Node, writes nothing when unchanged and clears them when off.
func TestPublishWireguardKeys(t *testing.T) {
	_, ds, cli := startEtcd(t)
	ctx := context.Background()
	node := &api.Node{ObjectMeta: api.ObjectMeta{Name: "host1"}, Spec: api.NodeSpec{BGP: &api.NodeBGPSpec{IPv4Address: "198.18.0.1/24"}}}
	if _, err := ds.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	const k4, k6 = "bP3fO8v6iKd0fvUQ4m8wH8mYVyrbwAPe8FPxFvr0b1o=", "cP3fO8v6iKd0fvUQ4m8wH8mYVyrbwAPe8FPxFvr0b1o="
	if changed, err := PublishWireguardKeys(ctx, ds, "host1", k4, k6); err != nil || !changed {
		t.Fatalf("publish: changed=%v err=%v", changed, err)
	}
	resp, err := cli.Get(ctx, "/calico/resources/v3/projectcalico.org/nodes/host1")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("get: %v", err)
	}
	raw := string(resp.Kvs[0].Value)
	for _, want := range []string{`"wireguardPublicKey":"` + k4 + `"`, `"wireguardPublicKeyV6":"` + k6 + `"`, `"ipv4Address":"198.18.0.1/24"`} {
		if !strings.Contains(raw, want) {
			t.Errorf("node JSON lacks %s:\n%s", want, raw)
		}
	}
	rev := resp.Kvs[0].ModRevision
	if changed, err := PublishWireguardKeys(ctx, ds, "host1", k4, k6); err != nil || changed {
		t.Errorf("republishing the same keys: changed=%v err=%v", changed, err)
	}
	if again, _ := cli.Get(ctx, "/calico/resources/v3/projectcalico.org/nodes/host1"); again.Kvs[0].ModRevision != rev {
		t.Error("republishing the same keys wrote the Node")
	}
	if changed, err := PublishWireguardKeys(ctx, ds, "host1", "", ""); err != nil || !changed {
		t.Fatalf("clear: changed=%v err=%v", changed, err)
	}
	n, err := datastore.GetAs[*api.Node](ctx, ds, "", "host1")
	if err != nil || n.Status.WireguardPublicKey != "" || n.Status.WireguardPublicKeyV6 != "" {
		t.Errorf("keys not cleared: %+v %v", n.Status, err)
	}
}
