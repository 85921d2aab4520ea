package status

import (
	"context"
	"errors"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/calico-host/calico-host/pkg/datastore"
)

// errGone is returned by writer.delete when the key was already gone.
var errGone = errors.New("already deleted")

// writer writes keys with compare-and-swap, remembering each key's mod revision so that a write
// is normally one round trip: create when the key is believed absent, otherwise update at the
// known revision. When the belief is wrong (someone else wrote or deleted the key, a lease
// expired), it reads the key and retries once.
type writer struct {
	ds   *datastore.Client
	revs map[string]int64 // 0 or missing: believed absent
}

func newWriter(ds *datastore.Client) *writer { return &writer{ds: ds, revs: map[string]int64{}} }

// put writes value to key (opts such as clientv3.WithLease apply to the put).
func (w *writer) put(ctx context.Context, key string, value []byte, opts ...clientv3.OpOption) error {
	for attempt := 0; ; attempt++ {
		rev, err := w.tryPut(ctx, key, value, opts...)
		if err == nil {
			w.revs[key] = rev
			return nil
		}
		if attempt > 0 || !(datastore.IsConflict(err) || datastore.IsNotFound(err) || datastore.IsAlreadyExists(err)) {
			return err
		}
		if err := w.refresh(ctx, key); err != nil {
			return err
		}
	}
}

func (w *writer) tryPut(ctx context.Context, key string, value []byte, opts ...clientv3.OpOption) (int64, error) {
	if rev := w.revs[key]; rev != 0 {
		return w.ds.UpdateKV(ctx, key, value, rev, opts...)
	}
	return w.ds.CreateKV(ctx, key, value, opts...)
}

// refresh re-reads a key's revision.
func (w *writer) refresh(ctx context.Context, key string) error {
	kv, err := w.ds.GetKV(ctx, key)
	switch {
	case datastore.IsNotFound(err):
		delete(w.revs, key)
		return nil
	case err != nil:
		return err
	}
	w.revs[key] = kv.ModRevision
	return nil
}

// delete removes key if it exists (errGone if it did not).
func (w *writer) delete(ctx context.Context, key string) error {
	for attempt := 0; ; attempt++ {
		rev := w.revs[key]
		if rev == 0 && attempt == 0 {
			if err := w.refresh(ctx, key); err != nil {
				return err
			}
			rev = w.revs[key]
		}
		if rev == 0 {
			return errGone
		}
		err := w.ds.DeleteKV(ctx, key, rev)
		switch {
		case err == nil:
			delete(w.revs, key)
			return nil
		case attempt > 0 || !(datastore.IsConflict(err) || datastore.IsNotFound(err)):
			return fmt.Errorf("deleting status key: %w", err)
		}
		if err := w.refresh(ctx, key); err != nil {
			return err
		}
	}
}

// forget drops what the writer knows about key.
func (w *writer) forget(key string) { delete(w.revs, key) }

// learn records a key's revision seen in a listing.
func (w *writer) learn(key string, rev int64) { w.revs[key] = rev }
