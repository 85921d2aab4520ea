package ipam

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/datastore/etcdtest"
)

// TestSplitCommitGuards: a split worked out against one view of the datastore is not written
// when the lock, the old pool or a block of the family changed in between.
func TestSplitCommitGuards(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv := etcdtest.Start(t)
	ds, err := datastore.New(srv.Datastore())
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	c := New(ds, zerolog.Nop())
	locked := false
	if _, err := ds.Create(ctx, &api.ClusterInformation{ObjectMeta: api.ObjectMeta{Name: "default"},
		Spec: api.ClusterInformationSpec{DatastoreReady: &locked}}); err != nil {
		t.Fatal(err)
	}
	pool := &api.IPPool{ObjectMeta: api.ObjectMeta{Name: "p"}, Spec: api.IPPoolSpec{CIDR: "10.65.0.0/16", BlockSize: 26}}
	api.SetDefaults(pool)
	if _, err := ds.Create(ctx, pool); err != nil {
		t.Fatal(err)
	}
	req := SplitRequest{Name: "p", Parts: 2}
	for _, change := range []struct {
		name string
		do   func() error
	}{
		{"a block of the family", func() error {
			_, err := srv.Client().Put(ctx, datastore.BlockKey("10.99.0.0/26"), `{"cidr":"10.99.0.0/26"}`)
			return err
		}},
		{"the old pool", func() error {
			pool.Spec.NATOutgoing = true
			_, err := ds.Update(ctx, pool)
			return err
		}},
		{"the lock", func() error {
			_, err := srv.Client().Put(ctx, "/calico/resources/v3/projectcalico.org/clusterinformations/default",
				`{"kind":"ClusterInformation","apiVersion":"projectcalico.org/v3","metadata":{"name":"default"},"spec":{"datastoreReady":false}}`)
			return err
		}},
	} {
		plan, err := c.planSplit(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if err := change.do(); err != nil {
			t.Fatal(err)
		}
		if err := c.commitSplit(ctx, plan); !errors.Is(err, errConflict) {
			t.Errorf("after a change of %s, commit = %v, want errConflict", change.name, err)
		}
	}
	if _, err := c.SplitPool(ctx, req); err != nil {
		t.Fatalf("split on a fresh view: %v", err)
	}
}
