package syncer

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/datastore/etcdtest"
)

// runUntilSnapshot runs a syncer until its first snapshot and returns it.
func runUntilSnapshot(t *testing.T, sy *Syncer) Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out := make(chan Message, 8)
	done := make(chan struct{})
	go func() { sy.Run(ctx, out); close(done) }()
	defer func() { cancel(); <-done }()
	for {
		select {
		case m := <-out:
			if m.Snapshot {
				return m
			}
		case <-ctx.Done():
			t.Fatal("no snapshot")
		}
	}
}

// TestSyncersListAtTheSameRevision: syncers that list while etcd's revision moves within one
// ListQuantum window list at the same revision (the window's start), which is what lets a
// grpc-proxy answer all but the first from its cache; the changes since then come as events.
func TestSyncersListAtTheSameRevision(t *testing.T) {
	s := etcdtest.Start(t)
	raw := s.Client()
	ctx := context.Background()
	var cur int64
	for i := 0; cur < 10 || cur%8 != 1; i++ { // into a window, with room for two more writes
		resp, err := raw.Put(ctx, fmt.Sprintf("/a/%d", i), "v")
		if err != nil {
			t.Fatal(err)
		}
		cur = resp.Header.Revision
	}
	cfg := Config{Prefixes: []string{"/a/"}, Decoder: rawDecoder, ListQuantum: 8}
	var revs []int64
	for i := range 3 {
		if i > 0 { // etcd moves on between the syncers' starts, but stays in the window
			resp, err := raw.Put(ctx, "/a/late", fmt.Sprint(i))
			if err != nil {
				t.Fatal(err)
			}
			cur = resp.Header.Revision
		}
		cli, err := datastore.New(s.Datastore())
		if err != nil {
			t.Fatal(err)
		}
		defer cli.Close()
		m := runUntilSnapshot(t, New(cli, cfg, zerolog.Nop()))
		revs = append(revs, m.Revision)
		if want := cur - cur%8; m.Revision != want {
			t.Errorf("syncer %d listed at %d with etcd at %d, want %d", i, m.Revision, cur, want)
		}
		for _, u := range m.Updates {
			if u.Revision > m.Revision {
				t.Errorf("snapshot at %d holds %s at %d", m.Revision, u.ID.Key(), u.Revision)
			}
		}
	}
	if revs[0] != revs[1] || revs[1] != revs[2] {
		t.Errorf("list revisions %v: syncers within one window must share one", revs)
	}
}

// TestListRevisionFallsBackWhenCompacted: when the rounded revision is compacted, the syncer
// lists at etcd's current revision instead of failing.
func TestListRevisionFallsBackWhenCompacted(t *testing.T) {
	s := etcdtest.Start(t)
	raw := s.Client()
	ctx := context.Background()
	var cur int64
	for i := 0; cur < 20 || cur%16 < 3; i++ {
		resp, err := raw.Put(ctx, "/a/k", fmt.Sprint(i))
		if err != nil {
			t.Fatal(err)
		}
		cur = resp.Header.Revision
	}
	if _, err := raw.Compact(ctx, cur); err != nil {
		t.Fatal(err)
	}
	cli, err := datastore.New(s.Datastore())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	m := runUntilSnapshot(t, New(cli, Config{Prefixes: []string{"/a/"}, Decoder: rawDecoder, ListQuantum: 16}, zerolog.Nop()))
	if m.Revision != cur || len(m.Updates) != 1 || m.Updates[0].Value != fmt.Sprint(cur-2) {
		t.Errorf("snapshot at %d with %+v, want the current revision %d", m.Revision, m.Updates, cur)
	}
}

func TestListRevision(t *testing.T) {
	s := &Syncer{cfg: Config{ListQuantum: 100}}
	for _, c := range []struct{ have, cur, want int64 }{
		{0, 5, 5}, {0, 100, 100}, {0, 250, 200}, {199, 250, 200}, {200, 250, 250}, {150, 250, 200},
	} {
		s.rev = c.have
		if got := s.listRevision(c.cur); got != c.want {
			t.Errorf("consumer at %d, etcd at %d: list at %d, want %d", c.have, c.cur, got, c.want)
		}
	}
}

// TestFirstListIsNotSpread: ResyncSpread delays re-lists only; a syncer's first list starts at
// once (with an hour's spread, the snapshot would otherwise never come within the test).
func TestFirstListIsNotSpread(t *testing.T) {
	s := etcdtest.Start(t)
	if _, err := s.Client().Put(context.Background(), "/a/k", "v"); err != nil {
		t.Fatal(err)
	}
	cli, err := datastore.New(s.Datastore())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	m := runUntilSnapshot(t, New(cli, Config{Prefixes: []string{"/a/"}, Decoder: rawDecoder, ResyncSpread: time.Hour}, zerolog.Nop()))
	if len(m.Updates) != 1 {
		t.Errorf("snapshot %+v, want /a/k", m.Updates)
	}
}
