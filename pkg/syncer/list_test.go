package syncer

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/datastore/etcdtest"
)

// rawDecoder keeps values as strings, so list results are easy to compare.
func rawDecoder(_ datastore.ID, v []byte, _ int64) (any, error) {
	if string(v) == "bad" {
		return nil, errors.New("bad value")
	}
	return string(v), nil
}

func newTestSyncer(t *testing.T, prefixes ...string) (*Syncer, *clientv3.Client) {
	s := etcdtest.Start(t)
	cli, err := datastore.New(s.Datastore())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	cfg := Config{Prefixes: prefixes, Decoder: rawDecoder, PageSize: 2,
		Filter: func(id datastore.ID) bool { return id.Key() == "/b/ignored" }}
	return New(cli, cfg, zerolog.Nop()), s.Client()
}

func TestListIsPinnedToOneRevision(t *testing.T) {
	sy, raw := newTestSyncer(t, "/b/", "/a/")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		must(raw.Put(ctx, fmt.Sprintf("/a/%d", i), fmt.Sprintf("a%d", i)))
		must(raw.Put(ctx, fmt.Sprintf("/b/%d", i), fmt.Sprintf("b%d", i)))
	}
	must(raw.Put(ctx, "/b/bad", "bad"))
	must(raw.Put(ctx, "/b/ignored", "x"))
	must(raw.Put(ctx, "/c/outside", "x"))
	resp, err := raw.Get(ctx, "/a/0")
	if err != nil {
		t.Fatal(err)
	}
	rev := resp.Header.Revision
	// Changes after rev must not show up, under either prefix.
	must(raw.Delete(ctx, "/a/1"))
	must(raw.Put(ctx, "/b/2", "changed"))
	must(raw.Put(ctx, "/a/9", "new"))

	snap, _, err := sy.list(ctx, rev)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range snap {
		got = append(got, fmt.Sprintf("%s=%v", u.ID.Key(), u.Value))
		if u.Revision > rev {
			t.Errorf("%s at revision %d, after the list revision %d", u.ID.Key(), u.Revision, rev)
		}
	}
	want := "[/a/0=a0 /a/1=a1 /a/2=a2 /a/3=a3 /a/4=a4 /b/0=b0 /b/1=b1 /b/2=b2 /b/3=b3 /b/4=b4]"
	if fmt.Sprint(got) != want {
		t.Errorf("list at %d:\ngot  %v\nwant %s", rev, got, want)
	}
}

func TestListCompactedRevision(t *testing.T) {
	sy, raw := newTestSyncer(t, "/a/")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r1, err := raw.Put(ctx, "/a/1", "1")
	if err != nil {
		t.Fatal(err)
	}
	r2, err := raw.Put(ctx, "/a/1", "2")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Compact(ctx, r2.Header.Revision); err != nil {
		t.Fatal(err)
	}
	_, _, err = sy.list(ctx, r1.Header.Revision)
	if !errors.Is(err, rpctypes.ErrCompacted) {
		t.Errorf("listing a compacted revision: %v, want an error matching ErrCompacted", err)
	}
}

// TestEmptyPrefixListsEverything: the prefix "" means every key (etcd rejects an empty key).
func TestEmptyPrefixListsEverything(t *testing.T) {
	sy, raw := newTestSyncer(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, k := range []string{"/x", "/y/z", "a"} {
		if _, err := raw.Put(ctx, k, k); err != nil {
			t.Fatal(err)
		}
	}
	rev, err := sy.currentRevision(ctx)
	if err != nil {
		t.Fatalf("probing with prefix \"\": %v", err)
	}
	snap, _, err := sy.list(ctx, rev)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap) != 3 || snap[0].ID.Key() != "/x" || snap[2].ID.Key() != "a" {
		t.Errorf("list of everything: %+v", snap)
	}
}
