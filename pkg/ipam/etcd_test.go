package ipam_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/datastore/etcdtest"
	"github.com/calico-host/calico-host/pkg/ipam"
)

type env struct {
	srv *etcdtest.Server
	ds  *datastore.Client
	c   *ipam.Client
}

func newEnv(t *testing.T) *env {
	t.Helper()
	srv := etcdtest.Start(t)
	ds := newDS(t, srv)
	return &env{srv: srv, ds: ds, c: ipam.New(ds, zerolog.Nop())}
}

func newDS(t *testing.T, srv *etcdtest.Server) *datastore.Client {
	t.Helper()
	ds, err := datastore.New(srv.Datastore())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ds.Close() })
	return ds
}

func tctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func (e *env) pool(t *testing.T, name, cidr string, blockSize int, mutate func(*api.IPPoolSpec)) {
	t.Helper()
	p := &api.IPPool{ObjectMeta: api.ObjectMeta{Name: name}, Spec: api.IPPoolSpec{CIDR: cidr, BlockSize: blockSize}}
	if mutate != nil {
		mutate(&p.Spec)
	}
	api.SetDefaults(p)
	if _, err := e.ds.Create(tctx(t), p); err != nil {
		t.Fatal(err)
	}
}

// rawBlock reads a block's JSON as a generic map.
func (e *env) rawBlock(t *testing.T, cidr string) map[string]any {
	t.Helper()
	kv, err := e.ds.GetKV(tctx(t), datastore.BlockKey(cidr))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(kv.Value, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func (e *env) block(t *testing.T, cidr string) api.AllocationBlock {
	t.Helper()
	kv, err := e.ds.GetKV(tctx(t), datastore.BlockKey(cidr))
	if err != nil {
		t.Fatal(err)
	}
	var b api.AllocationBlock
	if err := json.Unmarshal(kv.Value, &b); err != nil {
		t.Fatal(err)
	}
	return b
}

func (e *env) assertConsistent(t *testing.T) *ipam.CheckReport {
	t.Helper()
	r, err := e.c.Check(tctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if r.Problems() != 0 {
		b, _ := json.MarshalIndent(r, "", " ")
		t.Fatalf("IPAM is inconsistent:\n%s", b)
	}
	return r
}

func addrs(ps []netip.Prefix) []netip.Addr {
	var out []netip.Addr
	for _, p := range ps {
		out = append(out, p.Addr())
	}
	return out
}

const fixtureHandle = "calico-net.cidpwl20000000000"

const fixtureV4Block = "10.65.54.0/26"

// TestFixtureReadAndExtend loads what Project Calico's CNI plugin wrote, reads it, allocates more
// from the same blocks and checks that the result keeps Project Calico's fields and semantics.
func TestFixtureReadAndExtend(t *testing.T) {
	e := newEnv(t)
	etcdtest.LoadFixture(t, e.srv.Client(), "cni-ipam-and-status.json")
	e.pool(t, "v4", "10.65.0.0/16", 26, nil)
	e.pool(t, "v6", "fd5c:1:2::/48", 122, nil)
	ctx := tctx(t)
	before := e.block(t, fixtureV4Block)
	rawBefore := e.rawBlock(t, fixtureV4Block)

	ips, err := e.c.IPsByHandle(ctx, fixtureHandle)
	if err != nil {
		t.Fatal(err)
	}
	want := []netip.Addr{netip.MustParseAddr("10.65.54.0"), netip.MustParseAddr("fd5c:1:2:13f2:fcce:4caf:5a2d:bc40")}
	if !slices.Equal(ips, want) {
		t.Fatalf("IPsByHandle = %v, want %v", ips, want)
	}
	ps, err := e.c.PrefixesByHandle(ctx, fixtureHandle)
	if err != nil || len(ps) != 2 || ps[0].String() != "10.65.54.0/26" || ps[1].String() != "fd5c:1:2:13f2:fcce:4caf:5a2d:bc40/122" {
		t.Fatalf("PrefixesByHandle = %v (%v), want the addresses with their block masks", ps, err)
	}
	attrs, h, err := e.c.GetAssignmentAttributes(ctx, want[0])
	if err != nil || h != fixtureHandle || attrs["node"] != "host-a" {
		t.Fatalf("attributes %v handle %q err %v", attrs, h, err)
	}
	e.assertConsistent(t)

	v4, v6, err := e.c.AutoAssign(ctx, ipam.AutoAssignArgs{Num4: 1, Num6: 1, HandleID: "calico-net.c3",
		Hostname: "host-a", Attrs: map[string]string{"node": "host-a"}})
	if err != nil {
		t.Fatal(err)
	}
	// The fixture's free list starts at 2 (1 was released and went to the tail).
	if v4[0].String() != "10.65.54.2/32" || v6[0].String() != "fd5c:1:2:13f2:fcce:4caf:5a2d:bc42/128" {
		t.Fatalf("got %v %v, want the head of the fixture blocks' free lists", v4, v6)
	}
	after := e.block(t, fixtureV4Block)
	if after.SequenceNumber != before.SequenceNumber+1 || after.SequenceNumberForAllocation["2"] != before.SequenceNumber {
		t.Errorf("sequence numbers: before %d, after %d, for ordinal 2: %d", before.SequenceNumber, after.SequenceNumber, after.SequenceNumberForAllocation["2"])
	}
	if after.Unallocated[0] != 3 || after.Unallocated[len(after.Unallocated)-1] != 1 {
		t.Errorf("free list order not kept: %v", after.Unallocated)
	}
	rawAfter := e.rawBlock(t, fixtureV4Block)
	for k := range rawBefore {
		if _, ok := rawAfter[k]; !ok {
			t.Errorf("field %q written by Project Calico is gone after our update", k)
		}
	}
	for k := range rawAfter {
		if _, ok := rawBefore[k]; !ok {
			t.Errorf("we added field %q that Project Calico does not write", k)
		}
	}
	e.assertConsistent(t)

	// Release the fixture's own handle: the handle goes, ordinal 0 goes to the tail.
	if err := e.c.ReleaseByHandle(ctx, fixtureHandle); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ds.GetKV(ctx, datastore.HandleKey(fixtureHandle)); !datastore.IsNotFound(err) {
		t.Errorf("handle still there: %v", err)
	}
	rel := e.block(t, fixtureV4Block)
	if rel.Allocations[0] != nil || rel.Unallocated[len(rel.Unallocated)-1] != 0 || len(rel.Attributes) != 1 {
		t.Errorf("release did not free ordinal 0: allocations[0]=%v tail=%v attrs=%d", rel.Allocations[0], rel.Unallocated[len(rel.Unallocated)-1], len(rel.Attributes))
	}
	e.assertConsistent(t)
}

// TestConcurrentOneHost: 200 concurrent allocations for one host from several connections.
func TestConcurrentOneHost(t *testing.T) {
	e := newEnv(t)
	e.pool(t, "v4", "10.65.0.0/16", 26, nil)
	got := allocateConcurrently(t, e, []string{"host-a"}, 200)
	checkAllocations(t, e, got, map[string]int{"host-a": 4}) // ceil(200/64)
	releaseConcurrently(t, e, got)
}

// TestConcurrentFourHosts: 4 hosts x 100 concurrent allocations.
func TestConcurrentFourHosts(t *testing.T) {
	e := newEnv(t)
	e.pool(t, "v4", "10.65.0.0/16", 26, nil)
	e.pool(t, "v6", "fd5c:2::/48", 122, nil)
	hosts := []string{"host-a", "host-b", "host-c", "host-d"}
	got := allocateConcurrently(t, e, hosts, 100)
	checkAllocations(t, e, got, map[string]int{"host-a": 2, "host-b": 2, "host-c": 2, "host-d": 2})
	releaseConcurrently(t, e, got)
}

type allocation struct {
	host, handle string
	ips          []netip.Addr
}

// allocateConcurrently runs perHost AutoAssign calls (one IPv4, plus one IPv6 when a v6 pool
// exists) for each host at once, spread over 4 datastore connections.
func allocateConcurrently(t *testing.T, e *env, hosts []string, perHost int) []allocation {
	t.Helper()
	clients := make([]*ipam.Client, 4)
	for i := range clients {
		clients[i] = ipam.New(newDS(t, e.srv), zerolog.Nop())
	}
	pools, _, _ := datastore.ListAs[*api.IPPool](tctx(t), e.ds, "")
	num6 := 0
	if len(pools) > 1 {
		num6 = 1
	}
	var mu sync.Mutex
	var out []allocation
	var wg sync.WaitGroup
	errs := make(chan error, len(hosts)*perHost)
	for hi, host := range hosts {
		for i := 0; i < perHost; i++ {
			wg.Add(1)
			go func(c *ipam.Client, host, handle string) {
				defer wg.Done()
				v4, v6, err := c.AutoAssign(tctx(t), ipam.AutoAssignArgs{Num4: 1, Num6: num6, HandleID: handle,
					Hostname: host, Attrs: map[string]string{"node": host}})
				if err != nil {
					errs <- fmt.Errorf("%s: %w", handle, err)
					return
				}
				mu.Lock()
				out = append(out, allocation{host: host, handle: handle, ips: append(addrs(v4), addrs(v6)...)})
				mu.Unlock()
			}(clients[(hi*perHost+i)%len(clients)], host, fmt.Sprintf("net.%s-%d", host, i))
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}
	return out
}

// checkAllocations verifies uniqueness, handle consistency and per-host block counts.
func checkAllocations(t *testing.T, e *env, got []allocation, wantBlocks map[string]int) {
	t.Helper()
	ctx := tctx(t)
	seen := map[netip.Addr]string{}
	for _, a := range got {
		for _, ip := range a.ips {
			if prev, dup := seen[ip]; dup {
				t.Fatalf("%s given to both %s and %s", ip, prev, a.handle)
			}
			seen[ip] = a.handle
		}
		held, err := e.c.IPsByHandle(ctx, a.handle)
		if err != nil || !slices.Equal(held, a.ips) {
			t.Fatalf("handle %s holds %v (err %v), want %v", a.handle, held, err, a.ips)
		}
		attrs, h, err := e.c.GetAssignmentAttributes(ctx, a.ips[0])
		if err != nil || h != a.handle || attrs["node"] != a.host {
			t.Fatalf("%s: attributes %v handle %q err %v", a.ips[0], attrs, h, err)
		}
	}
	r := e.assertConsistent(t)
	if r.AllocatedIPs != len(seen) {
		t.Errorf("blocks hold %d addresses, handed out %d", r.AllocatedIPs, len(seen))
	}
	kvs, _, err := e.ds.ListKV(ctx, datastore.HostPrefix, 0)
	if err != nil {
		t.Fatal(err)
	}
	perHost := map[string]int{}
	for _, kv := range kvs {
		if host, cidr, ok := datastore.ParseAffinityKey(kv.Key); ok && !isV6(cidr) {
			perHost[host]++
		}
	}
	for host, n := range wantBlocks {
		if perHost[host] != n {
			t.Errorf("host %s claimed %d IPv4 blocks, want %d (all: %v)", host, perHost[host], n, perHost)
		}
	}
	// Every address sits in a block affine to the host it was given to (no borrowing was needed).
	for _, a := range got {
		for _, ip := range a.ips {
			if owner := blockOwner(t, e, ip); owner != a.host {
				t.Errorf("%s for %s is in a block of %q", ip, a.host, owner)
			}
		}
	}
}

func isV6(cidr string) bool { return netip.MustParsePrefix(cidr).Addr().Is6() }

func blockOwner(t *testing.T, e *env, ip netip.Addr) string {
	bits := 26
	if ip.Is6() {
		bits = 122
	}
	p, _ := ip.Prefix(bits)
	b := e.block(t, p.String())
	if b.Affinity == nil {
		return ""
	}
	return (*b.Affinity)[len("host:"):]
}

func releaseConcurrently(t *testing.T, e *env, got []allocation) {
	t.Helper()
	var wg sync.WaitGroup
	for _, a := range got {
		wg.Add(1)
		go func(handle string) {
			defer wg.Done()
			if err := e.c.ReleaseByHandle(tctx(t), handle); err != nil {
				t.Errorf("release %s: %v", handle, err)
			}
		}(a.handle)
	}
	wg.Wait()
	r := e.assertConsistent(t)
	if r.AllocatedIPs != 0 || r.Handles != 0 {
		t.Errorf("after releasing everything: %d addresses, %d handles left", r.AllocatedIPs, r.Handles)
	}
	// Released addresses are handed out again.
	v4, _, err := e.c.AutoAssign(tctx(t), ipam.AutoAssignArgs{Num4: 1, HandleID: "again", Hostname: got[0].host})
	if err != nil || len(v4) != 1 {
		t.Fatalf("assigning after release: %v %v", v4, err)
	}
}

func TestStrictAffinityAndBorrowing(t *testing.T) {
	e := newEnv(t)
	ctx := tctx(t)
	e.pool(t, "small", "10.65.0.0/28", 30, nil) // 4 blocks of 4 addresses
	v4, _, err := e.c.AutoAssign(ctx, ipam.AutoAssignArgs{Num4: 16, HandleID: "a", Hostname: "host-a"})
	if err != nil || len(v4) != 16 {
		t.Fatalf("host-a takes the whole pool: %d addresses, %v", len(v4), err)
	}
	if _, _, err := e.c.AutoAssign(ctx, ipam.AutoAssignArgs{Num4: 1, HandleID: "b", Hostname: "host-b"}); !errors.Is(err, ipam.ErrExhausted) {
		t.Fatalf("full pool: want ErrExhausted, got %v", err)
	}
	if _, err := e.c.ReleaseIPs(ctx, v4[5].Addr(), v4[6].Addr()); err != nil {
		t.Fatal(err)
	}
	// Non-strict: host-b borrows from host-a's block, which stays host-a's.
	b1, _, err := e.c.AutoAssign(ctx, ipam.AutoAssignArgs{Num4: 1, HandleID: "b", Hostname: "host-b"})
	if err != nil {
		t.Fatalf("borrowing: %v", err)
	}
	if owner := blockOwnerBits(t, e, b1[0].Addr(), 30); owner != "host-a" {
		t.Errorf("borrowed address is in a block of %q", owner)
	}
	// Strict: host-b may not borrow any more; host-a still gets its own free address.
	if err := e.c.SetIPAMConfig(ctx, api.IPAMConfig{StrictAffinity: true, AutoAllocateBlocks: true}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.c.AutoAssign(ctx, ipam.AutoAssignArgs{Num4: 1, HandleID: "b2", Hostname: "host-b"}); err == nil {
		t.Fatal("strict affinity: host-b borrowed anyway")
	}
	if _, _, err := e.c.AutoAssign(ctx, ipam.AutoAssignArgs{Num4: 1, HandleID: "a2", Hostname: "host-a"}); err != nil {
		t.Fatalf("strict affinity: host-a could not use its own block: %v", err)
	}
	e.assertConsistent(t)
}

func blockOwnerBits(t *testing.T, e *env, ip netip.Addr, bits int) string {
	p, _ := ip.Prefix(bits)
	b := e.block(t, p.String())
	if b.Affinity == nil {
		return ""
	}
	return (*b.Affinity)[len("host:"):]
}

func TestBlockLimitLeavesNothingBehind(t *testing.T) {
	e := newEnv(t)
	ctx := tctx(t)
	e.pool(t, "small", "10.65.0.0/28", 30, nil)
	_, _, err := e.c.AutoAssign(ctx, ipam.AutoAssignArgs{Num4: 5, HandleID: "h", Hostname: "host-a", MaxBlocksPerHost: 1})
	if !errors.Is(err, ipam.ErrBlockLimit) {
		t.Fatalf("want ErrBlockLimit, got %v", err)
	}
	if ips, _ := e.c.IPsByHandle(ctx, "h"); len(ips) != 0 {
		t.Errorf("a failed request left %v assigned", ips)
	}
	r := e.assertConsistent(t)
	if r.AllocatedIPs != 0 {
		t.Errorf("%d addresses still allocated", r.AllocatedIPs)
	}
	// The configured limit applies too.
	if err := e.c.SetIPAMConfig(ctx, api.IPAMConfig{AutoAllocateBlocks: true, MaxBlocksPerHost: 2}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.c.AutoAssign(ctx, ipam.AutoAssignArgs{Num4: 9, HandleID: "h", Hostname: "host-a"}); !errors.Is(err, ipam.ErrBlockLimit) {
		t.Fatalf("configured limit 2: want ErrBlockLimit, got %v", err)
	}
	if v4, _, err := e.c.AutoAssign(ctx, ipam.AutoAssignArgs{Num4: 8, HandleID: "h", Hostname: "host-a"}); err != nil || len(v4) != 8 {
		t.Fatalf("8 addresses fit in 2 blocks: %v %v", v4, err)
	}
}

func TestIPAMConfigDefaults(t *testing.T) {
	e := newEnv(t)
	ctx := tctx(t)
	cfg, err := e.c.GetIPAMConfig(ctx)
	if err != nil || cfg != (api.IPAMConfig{AutoAllocateBlocks: true}) {
		t.Fatalf("defaults: %+v %v", cfg, err)
	}
	want := api.IPAMConfig{StrictAffinity: true, AutoAllocateBlocks: true, MaxBlocksPerHost: 7}
	if err := e.c.SetIPAMConfig(ctx, want); err != nil {
		t.Fatal(err)
	}
	kv, err := e.ds.GetKV(ctx, datastore.IPAMConfigKey)
	if err != nil || string(kv.Value) != `{"strict_affinity":true,"auto_allocate_blocks":true,"maxBlocksPerHost":7}` {
		t.Fatalf("stored config %s (%v)", kv.Value, err)
	}
	if got, _ := e.c.GetIPAMConfig(ctx); got != want {
		t.Errorf("read back %+v", got)
	}
}

func sortedAddrs(a []netip.Addr) []netip.Addr {
	sort.Slice(a, func(i, j int) bool { return a[i].Less(a[j]) })
	return a
}

// TestSetIPAMConfigKeepsWhatItDoesNotSet: Project Calico's fields calico-host does not
// implement and fields of a newer Project Calico survive calicoctl ipam configure.
func TestSetIPAMConfigKeepsWhatItDoesNotSet(t *testing.T) {
	e := newEnv(t)
	ctx := tctx(t)
	stored := `{"strict_affinity":false,"auto_allocate_blocks":true,"kubeVirtVMAddressPersistence":"Disabled","ipCooldownSeconds":30,"futureField":{"a":1}}`
	if _, err := e.ds.CreateKV(ctx, datastore.IPAMConfigKey, []byte(stored)); err != nil {
		t.Fatal(err)
	}
	cfg, err := e.c.GetIPAMConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cfg.StrictAffinity = true
	if err := e.c.SetIPAMConfig(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	kv, err := e.ds.GetKV(ctx, datastore.IPAMConfigKey)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"strict_affinity":true`, `"kubeVirtVMAddressPersistence":"Disabled"`, `"ipCooldownSeconds":30`, `"futureField":{"a":1}`} {
		if !strings.Contains(string(kv.Value), want) {
			t.Errorf("stored %s lacks %s", kv.Value, want)
		}
	}
}
