package syncer

import (
	"testing"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestCatchUpNeedsEveryChange: a prefix is caught up only once every change the consumer needs
// arrived, however the counts happen to match on the way.
func TestCatchUpNeedsEveryChange(t *testing.T) {
	put := func(key string, rev, version int64) *clientv3.Event {
		return &clientv3.Event{Type: mvccpb.PUT, Kv: &mvccpb.KeyValue{Key: []byte(key), ModRevision: rev, Version: version}}
	}
	del := func(key string, rev int64) *clientv3.Event {
		return &clientv3.Event{Type: mvccpb.DELETE, Kv: &mvccpb.KeyValue{Key: []byte(key), ModRevision: rev}}
	}
	// Listed at 10 with keys a and b; by 14 (the target): c created (11), a deleted (12), d
	// created (13), b updated (14). At 14: b, c, d live; b, c and d changed after the list.
	newCatchUp := func() *catchUp {
		return &catchUp{target: 14, prefixes: map[string]*prefixCatchUp{
			"/p/": {count: 2, want: 3, changed: map[string]int64{"/p/b": 14, "/p/c": 11, "/p/d": 13}},
			"/q/": {count: 5, want: 5, changed: map[string]int64{}, done: true},
		}}
	}
	events := []*clientv3.Event{put("/p/c", 11, 1), del("/p/a", 12), put("/p/d", 13, 1), put("/p/b", 14, 2)}
	for n := range events {
		c := newCatchUp()
		for _, ev := range events[:n] {
			c.observe("/p/", ev)
		}
		if c.caughtUp() {
			t.Errorf("caught up after %d of %d changes", n, len(events))
		}
	}
	c := newCatchUp()
	for _, ev := range events {
		c.observe("/p/", ev)
	}
	if !c.caughtUp() {
		t.Errorf("not caught up after every change: %+v", c.prefixes["/p/"])
	}
	// A key created and deleted again before the target is not needed; a later event or a
	// progress notification at the target proves the rest arrived.
	c = &catchUp{target: 14, prefixes: map[string]*prefixCatchUp{"/p/": {count: 2, want: 2, changed: map[string]int64{}}}}
	c.prefixes["/p/"].check()
	if !c.caughtUp() {
		t.Error("not caught up without changes")
	}
	c = newCatchUp()
	c.observe("/p/", put("/p/x", 15, 1))
	if !c.caughtUp() {
		t.Error("an event after the target did not end the catch-up")
	}
	c = newCatchUp()
	c.progress("/p/", 14)
	if !c.caughtUp() {
		t.Error("a progress notification at the target did not end the catch-up")
	}
}
