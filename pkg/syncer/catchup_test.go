package syncer_test

import (
	"fmt"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/calico-host/calico-host/pkg/config"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// fillTo writes filler keys (outside the test's prefixes) until etcd's revision is a multiple
// of q, and returns it.
func fillTo(t *testing.T, raw *clientv3.Client, q int64) int64 {
	t.Helper()
	rev := put(t, raw, "/filler", "0")
	for rev%q != 0 {
		rev = put(t, raw, "/filler", fmt.Sprint(rev))
	}
	return rev
}

// TestFirstInSyncIsCurrent: a syncer lists at etcd's revision rounded down to ListQuantum (so
// that a fleet shares lists), but the first time it says InSync its consumer holds everything
// etcd held when it started: here 13 changes made after a revision that is a multiple of the
// quantum (new keys, an update, a deletion, a key created and deleted again) on one prefix,
// and none on another. Directly and through etcd's grpc-proxy (which never answers progress
// requests), and with the default quantum.
func TestFirstInSyncIsCurrent(t *testing.T) {
	for _, viaProxy := range []bool{false, true} {
		t.Run(map[bool]string{false: "etcd", true: "grpc-proxy"}[viaProxy], func(t *testing.T) {
			s, raw := startEtcd(t)
			for i := range 4 {
				put(t, raw, poolPrefix+fmt.Sprintf("old-%d", i), poolJSON(fmt.Sprintf("10.65.%d.0/24", i)))
			}
			put(t, raw, wepPrefix+"ns/quiet", wepJSON("ns", "quiet", 1))
			listed := fillTo(t, raw, syncer.DefaultListQuantum)
			for i := range 10 {
				put(t, raw, poolPrefix+fmt.Sprintf("new-%d", i), poolJSON(fmt.Sprintf("10.66.%d.0/24", i)))
			}
			put(t, raw, poolPrefix+"old-0", poolJSON("10.67.0.0/24"))
			del(t, raw, poolPrefix+"old-1")
			put(t, raw, poolPrefix+"gone", poolJSON("10.68.0.0/24"))
			del(t, raw, poolPrefix+"gone") // 14 revisions, 13 of them changes the consumer needs
			ds := s.Datastore()
			if viaProxy {
				ds = config.Datastore{Etcd: ds.Etcd}
				ds.Etcd.Endpoints = []string{startGRPCProxy(t, raw)}
			}
			cfg := syncer.Config{Prefixes: []string{poolPrefix, wepPrefix}}
			want := etcdState(t, raw, cfg)
			c := startConsumer(t, newClient(t, ds), cfg)
			c.waitFor(t, "InSync", func() bool { return c.firstInSync != nil })
			c.mu.Lock()
			first, snapRev := c.firstInSync, c.messages[0].Revision
			for _, m := range c.messages {
				if m.Snapshot {
					snapRev = m.Revision
					break
				}
			}
			c.mu.Unlock()
			if snapRev != listed {
				t.Errorf("snapshot listed at %d, want the rounded revision %d (the test must exercise the catch-up)", snapRev, listed)
			}
			if d := diffModels(want, first); d != "" {
				t.Errorf("model at the first InSync differs from etcd's when the syncer started:\n%s", d)
			}
		})
	}
}
