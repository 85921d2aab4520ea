package ipam_test

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/ipam"
)

// hostKeys lists the keys under /calico/ipam/v2/host/<host>/ (and the bare root key).
func (e *env) hostKeys(t *testing.T, host string) []string {
	t.Helper()
	resp, err := e.srv.Client().Get(tctx(t), datastore.HostPrefix+host, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, kv := range resp.Kvs {
		k := string(kv.Key)
		if k == datastore.HostPrefix+host || strings.HasPrefix(k, datastore.HostPrefix+host+"/") {
			out = append(out, k)
		}
	}
	return out
}

func (e *env) put(t *testing.T, key, value string) {
	t.Helper()
	if _, err := e.srv.Client().Put(tctx(t), key, value); err != nil {
		t.Fatal(err)
	}
}

// blocksOf returns the /30 blocks holding the given addresses, deduplicated and sorted.
func blocksOf(ps []netip.Prefix) []netip.Prefix {
	var out []netip.Prefix
	for _, p := range ps {
		b, _ := p.Addr().Prefix(30)
		if !slices.Contains(out, b) {
			out = append(out, b)
		}
	}
	slices.SortFunc(out, func(a, b netip.Prefix) int { return a.Addr().Compare(b.Addr()) })
	return out
}

// TestRemoveIPAMHost: host-a owns the whole small pool. One of its blocks ends up empty, one
// holds an address host-b borrowed, the others hold host-a's own addresses. Removing host-a
// deletes the empty block, takes the affinity off the others (their addresses, host-b's
// included, stay allocated and releasable), deletes every key of host-a's tree (an undecodable
// one and a block claim naming no block too) and leaves host-a-2, whose name host-a prefixes,
// alone. A second removal finds nothing to do and writes nothing.
func TestRemoveIPAMHost(t *testing.T) {
	e := newEnv(t)
	ctx := tctx(t)
	e.pool(t, "small", "10.65.0.0/28", 30, nil) // 4 blocks of 4 addresses
	a, _, err := e.c.AutoAssign(ctx, ipam.AutoAssignArgs{Num4: 16, HandleID: "a", Hostname: "host-a"})
	if err != nil {
		t.Fatal(err)
	}
	// Free a[4] so that host-b borrows it (the only free address), then empty the block of
	// a[0..3] and free the rest of a[4]'s block: it holds host-b's address only.
	if _, err := e.c.ReleaseIPs(ctx, a[4].Addr()); err != nil {
		t.Fatal(err)
	}
	b, _, err := e.c.AutoAssign(ctx, ipam.AutoAssignArgs{Num4: 1, HandleID: "b", Hostname: "host-b"})
	if err != nil || b[0].Addr() != a[4].Addr() {
		t.Fatalf("host-b borrowed %v (%v), want %s", b, err, a[4].Addr())
	}
	if _, err := e.c.ReleaseIPs(ctx, append(addrs(a[0:4]), addrs(a[5:8])...)...); err != nil {
		t.Fatal(err)
	}
	e.put(t, datastore.HostPrefix+"host-a/ipv4/block/garbage", "{not json")
	e.put(t, datastore.AffinityKey("host-a", "10.65.200.0/30"), `{"state":"pending","deleted":false}`)
	e.put(t, datastore.AffinityKey("host-a-2", "10.65.100.0/30"), `{"state":"pending","deleted":false}`)

	got, err := e.c.RemoveHost(ctx, "host-a")
	if err != nil {
		t.Fatal(err)
	}
	emptied := blocksOf(a[0:1])
	inUse := slices.DeleteFunc(blocksOf(a), func(p netip.Prefix) bool { return p == emptied[0] })
	want := &ipam.HostRemoval{BlocksDeleted: emptied, BlocksUnaffined: inUse, AffinitiesReleased: 5, OtherKeysDeleted: 1}
	if !equalRemoval(got, want) {
		t.Errorf("removal = %+v, want %+v", got, want)
	}
	if keys := e.hostKeys(t, "host-a"); len(keys) != 0 {
		t.Errorf("keys of host-a left: %v", keys)
	}
	if keys := e.hostKeys(t, "host-a-2"); len(keys) != 1 {
		t.Errorf("host-a-2's claim was touched: %v", keys)
	}
	if _, err := e.srv.Client().Delete(ctx, datastore.AffinityKey("host-a-2", "10.65.100.0/30")); err != nil {
		t.Fatal(err) // it was only there to be left alone
	}
	r := e.assertConsistent(t)
	if r.Blocks != 3 || r.AllocatedIPs != 9 || r.Affinities != 0 {
		t.Errorf("after removal: %d blocks, %d addresses, %d affinities; want 3, 9, 0", r.Blocks, r.AllocatedIPs, r.Affinities)
	}
	for _, blk := range inUse {
		if owner := blockOwnerBits(t, e, blk.Addr(), 30); owner != "" {
			t.Errorf("block %s still affine to %q", blk, owner)
		}
	}
	if held, _ := e.c.IPsByHandle(ctx, "b"); !slices.Equal(held, addrs(b)) {
		t.Errorf("host-b's borrowed address: handle holds %v, want %v", held, addrs(b))
	}

	rev := e.revision(t)
	again, err := e.c.RemoveHost(ctx, "host-a")
	if err != nil || !equalRemoval(again, &ipam.HostRemoval{}) {
		t.Errorf("second removal: %+v, %v; want nothing done", again, err)
	}
	if e.revision(t) != rev {
		t.Error("second removal wrote to etcd")
	}
	// The addresses left behind are released normally, and the unaffine blocks can be claimed.
	if err := e.c.ReleaseByHandle(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := e.c.ReleaseByHandle(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if r := e.assertConsistent(t); r.AllocatedIPs != 0 || r.Handles != 0 {
		t.Errorf("after releasing: %d addresses, %d handles", r.AllocatedIPs, r.Handles)
	}
}

func equalRemoval(a, b *ipam.HostRemoval) bool {
	return a != nil && slices.Equal(a.BlocksDeleted, b.BlocksDeleted) && slices.Equal(a.BlocksUnaffined, b.BlocksUnaffined) &&
		a.AffinitiesReleased == b.AffinitiesReleased && a.OtherKeysDeleted == b.OtherKeysDeleted
}

func (e *env) revision(t *testing.T) int64 {
	t.Helper()
	resp, err := e.srv.Client().Get(tctx(t), "revision-probe")
	if err != nil {
		t.Fatal(err)
	}
	return resp.Header.Revision
}

// TestRemoveIPAMHostOrphanBlocks: blocks naming the host without an affinity key (an interrupted
// release) lose the affinity too; an empty one is deleted.
func TestRemoveIPAMHostOrphanBlocks(t *testing.T) {
	e := newEnv(t)
	ctx := tctx(t)
	e.pool(t, "small", "10.65.0.0/28", 30, nil)
	e.pool(t, "v6", "fd5c:1::/120", 126, nil)
	v4, v6, err := e.c.AutoAssign(ctx, ipam.AutoAssignArgs{Num4: 5, Num6: 1, HandleID: "a", Hostname: "host-a"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.ReleaseIPs(ctx, v4[4].Addr()); err != nil { // the second v4 block is now empty
		t.Fatal(err)
	}
	v6Block, _ := v6[0].Addr().Prefix(126)
	v4Blocks := blocksOf(v4)
	for _, blk := range []netip.Prefix{v4Blocks[0], v4Blocks[1], v6Block} {
		if _, err := e.srv.Client().Delete(ctx, datastore.AffinityKey("host-a", blk.String())); err != nil {
			t.Fatal(err)
		}
	}
	got, err := e.c.RemoveHost(ctx, "host-a")
	if err != nil {
		t.Fatal(err)
	}
	want := &ipam.HostRemoval{BlocksDeleted: v4Blocks[1:2], BlocksUnaffined: []netip.Prefix{v4Blocks[0], v6Block}}
	if !equalRemoval(got, want) {
		t.Errorf("removal = %+v, want %+v", got, want)
	}
	if r := e.assertConsistent(t); r.Blocks != 2 || r.AllocatedIPs != 5 {
		t.Errorf("after removal: %d blocks, %d addresses; want 2, 5", r.Blocks, r.AllocatedIPs)
	}
}

func TestRemoveIPAMHostRefusesBadNames(t *testing.T) {
	e := newEnv(t)
	e.put(t, datastore.AffinityKey("host-a", "10.65.0.0/30"), `{"state":"pending","deleted":false}`)
	for _, host := range []string{"", "host-a/ipv4", "/"} {
		if err := e.c.RemoveIPAMHost(tctx(t), host); err == nil {
			t.Errorf("RemoveIPAMHost(%q) succeeded", host)
		}
	}
	if keys := e.hostKeys(t, "host-a"); len(keys) != 1 {
		t.Errorf("a refused removal touched host-a: %v", keys)
	}
}

// TestRemoveIPAMHostDuringClaims: the host keeps claiming blocks while it is removed. Whatever
// interleaving happens, IPAM stays consistent (no block names host-a without an affinity key,
// no affinity without its block), and a removal after the claims leaves nothing of host-a.
func TestRemoveIPAMHostDuringClaims(t *testing.T) {
	e := newEnv(t)
	ctx := tctx(t)
	e.pool(t, "v4", "10.65.0.0/16", 30, nil)
	errs := make(chan error, 41)
	for i := range 40 {
		go func() {
			_, _, err := e.c.AutoAssign(ctx, ipam.AutoAssignArgs{Num4: 4, HandleID: "h" + strconv.Itoa(i), Hostname: "host-a", MaxBlocksPerHost: 64})
			errs <- err
		}()
	}
	go func() { _, err := e.c.RemoveHost(ctx, "host-a"); errs <- err }()
	for range 41 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	e.assertConsistent(t)
	if _, err := e.c.RemoveHost(ctx, "host-a"); err != nil {
		t.Fatal(err)
	}
	if r := e.assertConsistent(t); r.Affinities != 0 || r.AllocatedIPs != 160 || len(e.hostKeys(t, "host-a")) != 0 {
		t.Errorf("after the last removal: %d affinities, %d addresses, keys %v", r.Affinities, r.AllocatedIPs, e.hostKeys(t, "host-a"))
	}
}
