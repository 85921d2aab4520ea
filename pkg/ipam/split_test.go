package ipam_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/ipam"
)

func TestSplitCIDR(t *testing.T) {
	for _, tc := range []struct {
		in    string
		parts int
		want  string // space-separated prefixes, or "error: <substring>"
	}{
		{"10.65.0.0/16", 2, "10.65.0.0/17 10.65.128.0/17"},
		{"10.65.0.0/16", 4, "10.65.0.0/18 10.65.64.0/18 10.65.128.0/18 10.65.192.0/18"},
		{"10.65.7.9/16", 2, "10.65.0.0/17 10.65.128.0/17"}, // masked first, as Project Calico
		{"10.65.0.0/30", 4, "10.65.0.0/32 10.65.0.1/32 10.65.0.2/32 10.65.0.3/32"},
		{"fd5c::/48", 2, "fd5c::/49 fd5c:0:0:8000::/49"},
		{"fd5c:ffff:ffff:ffff:ffff:ffff:ffff:fffc/126", 4,
			"fd5c:ffff:ffff:ffff:ffff:ffff:ffff:fffc/128 fd5c:ffff:ffff:ffff:ffff:ffff:ffff:fffd/128 fd5c:ffff:ffff:ffff:ffff:ffff:ffff:fffe/128 fd5c:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128"},
		{"10.65.0.0/16", 3, "error: not a valid power of 2: 3"},
		{"10.65.0.0/16", 1, "error: not a valid power of 2: 1"},
		{"10.65.0.0/16", 0, "error: not a valid power of 2: 0"},
		{"10.65.0.0/16", -4, "error: not a valid power of 2: -4"},
		{"10.65.0.0/31", 4, "error: the CIDR 10.65.0.0/31 is not large enough to be split into 4 parts"},
	} {
		got, err := ipam.SplitCIDR(netip.MustParsePrefix(tc.in), tc.parts)
		if want, isErr := strings.CutPrefix(tc.want, "error: "); isErr {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("SplitCIDR(%s, %d) = %v, %v; want error %q", tc.in, tc.parts, got, err, want)
			}
			continue
		}
		var s []string
		for _, p := range got {
			s = append(s, p.String())
		}
		if err != nil || strings.Join(s, " ") != tc.want {
			t.Errorf("SplitCIDR(%s, %d) = %v, %v; want %s", tc.in, tc.parts, s, err, tc.want)
		}
	}
}

// setLock writes ClusterInformation default with datastoreReady = !locked.
func (e *env) setLock(t *testing.T, locked bool) {
	t.Helper()
	ready := !locked
	ci := &api.ClusterInformation{ObjectMeta: api.ObjectMeta{Name: "default"},
		Spec: api.ClusterInformationSpec{ClusterGUID: "0123456789abcdef0123456789abcdef", DatastoreReady: &ready}}
	ctx := tctx(t)
	if _, err := e.ds.Create(ctx, ci); datastore.IsAlreadyExists(err) {
		_, err = e.ds.Update(ctx, ci)
		if err != nil {
			t.Fatal(err)
		}
	} else if err != nil {
		t.Fatal(err)
	}
}

// ipamKeys is every key and value under /calico/ipam/.
func (e *env) ipamKeys(t *testing.T) map[string]string {
	t.Helper()
	resp, err := e.srv.Client().Get(tctx(t), "/calico/ipam/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, kv := range resp.Kvs {
		out[string(kv.Key)] = string(kv.Value)
	}
	return out
}

func (e *env) pools(t *testing.T) map[string]*api.IPPool {
	t.Helper()
	items, _, err := datastore.ListAs[*api.IPPool](tctx(t), e.ds, "")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*api.IPPool{}
	for _, p := range items {
		out[p.Name] = p
	}
	return out
}

// TestSplitPool splits a pool holding allocations of two hosts: the new pools are copies with
// their part of the CIDR, the old pool is gone, IPAM's keys are untouched and stay consistent,
// the addresses can be released, and allocation goes on from the new pools.
func TestSplitPool(t *testing.T) {
	e := newEnv(t)
	ctx := tctx(t)
	e.pool(t, "pool-a", "10.65.0.0/16", 26, func(s *api.IPPoolSpec) {
		s.NATOutgoing, s.VXLANMode, s.NodeSelector = true, api.EncapAlways, "all()"
	})
	e.setLock(t, false)
	var taken []netip.Prefix
	for i, host := range []string{"host-a", "host-b"} {
		v4, _, err := e.c.AutoAssign(ctx, ipam.AutoAssignArgs{Num4: 3, HandleID: fmt.Sprintf("h%d", i), Hostname: host})
		if err != nil {
			t.Fatal(err)
		}
		taken = append(taken, v4...)
	}
	old := e.pools(t)["pool-a"]
	before := e.ipamKeys(t)

	if _, err := e.c.SplitPool(ctx, ipam.SplitRequest{Name: "pool-a", Parts: 4}); !errors.Is(err, ipam.ErrNotLocked) {
		t.Fatalf("split of an unlocked datastore: %v, want ErrNotLocked", err)
	}
	e.setLock(t, true)
	res, err := e.c.SplitPool(ctx, ipam.SplitRequest{Name: "pool-a", Parts: 4})
	if err != nil {
		t.Fatal(err)
	}
	pools := e.pools(t)
	if _, ok := pools["pool-a"]; ok || len(pools) != 4 || len(res.Created) != 4 {
		t.Fatalf("pools after split: %v (result %d pools)", keys(pools), len(res.Created))
	}
	for i, cidr := range []string{"10.65.0.0/18", "10.65.64.0/18", "10.65.128.0/18", "10.65.192.0/18"} {
		p := pools[fmt.Sprintf("split-pool-a-%d", i)]
		if p == nil || p.Spec.CIDR != cidr || p.Spec.Disabled {
			t.Fatalf("pool %d: %+v, want enabled with CIDR %s", i, p, cidr)
		}
		want := old.Spec
		want.CIDR = cidr
		if fmt.Sprint(p.Spec) != fmt.Sprint(want) {
			t.Errorf("pool %d spec %+v, want the old spec %+v with its CIDR", i, p.Spec, want)
		}
		if p.UID == "" || p.UID == old.UID || p.CreationTimestamp == "" {
			t.Errorf("pool %d: uid %q creationTimestamp %q, want fresh ones", i, p.UID, p.CreationTimestamp)
		}
	}
	if after := e.ipamKeys(t); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("split changed IPAM keys:\nbefore %v\nafter  %v", before, after)
	}
	e.assertConsistent(t)

	e.setLock(t, false)
	v4, _, err := e.c.AutoAssign(ctx, ipam.AutoAssignArgs{Num4: 1, HandleID: "h-new", Hostname: "host-c"})
	if err != nil || !netip.MustParsePrefix("10.65.0.0/16").Contains(v4[0].Addr()) {
		t.Fatalf("allocation after the split: %v, %v", v4, err)
	}
	unreleased, err := e.c.ReleaseIPs(ctx, addrs(taken)...)
	if err != nil || len(unreleased) != 0 {
		t.Fatalf("releasing the addresses allocated before the split: %v, %v", unreleased, err)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestSplitPoolRefusals: every refusal happens before anything is written.
func TestSplitPoolRefusals(t *testing.T) {
	e := newEnv(t)
	ctx := tctx(t)
	if _, err := e.c.SplitPool(ctx, ipam.SplitRequest{Parts: 2}); err == nil || !strings.Contains(err.Error(), "no name or CIDR provided") {
		t.Errorf("no pool named: %v", err)
	}
	if _, err := e.c.SplitPool(ctx, ipam.SplitRequest{Name: "x", Parts: 2}); err == nil || !strings.Contains(err.Error(), "error retrieving ClusterInformation") {
		t.Errorf("no ClusterInformation: %v", err)
	}
	e.setLock(t, true)
	e.pool(t, "small", "10.65.1.0/26", 26, nil)
	e.pool(t, "v6", "fd5c::/120", 122, func(s *api.IPPoolSpec) { s.Disabled = true })
	e.pool(t, "old-blocks", "10.65.2.0/23", 26, nil)
	// A /24 block left from an older block size straddles the /25s of a /23 split in 4.
	e.put(t, datastore.BlockKey("10.65.2.0/24"), `{"cidr":"10.65.2.0/24","affinity":null,"allocations":[],"unallocated":[],"attributes":[]}`)
	snapshot := e.allKeys(t)
	for _, tc := range []struct {
		req  ipam.SplitRequest
		want string
	}{
		{ipam.SplitRequest{Name: "missing", Parts: 2}, "unable to find IP pool with name missing"},
		{ipam.SplitRequest{CIDR: "10.65.9.0/24", Parts: 2}, "unable to find IP pool  covering the specified CIDR 10.65.9.0/24"},
		{ipam.SplitRequest{CIDR: "10.65.1.0/26", Parts: 3}, "not a valid power of 2: 3"},
		{ipam.SplitRequest{Name: "small", Parts: 2}, "error using unsafe create to make split pool with cidr 10.65.1.0/27"},
		{ipam.SplitRequest{Name: "v6", Parts: 8}, "error using unsafe create to make split pool with cidr fd5c::/123"},
		{ipam.SplitRequest{Name: "old-blocks", Parts: 4}, "IPAM block 10.65.2.0/24 is larger than the new pools (/25)"},
	} {
		_, err := e.c.SplitPool(ctx, tc.req)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.req, err, tc.want)
		}
	}
	if after := e.allKeys(t); fmt.Sprint(after) != fmt.Sprint(snapshot) {
		t.Errorf("a refused split wrote to the datastore:\nbefore %v\nafter  %v", snapshot, after)
	}

	// By CIDR, a disabled pool: the new pools are enabled, as Project Calico makes them.
	if _, err := e.c.SplitPool(ctx, ipam.SplitRequest{CIDR: "fd5c::/120", Parts: 2}); err != nil {
		t.Fatal(err)
	}
	p := e.pools(t)["split-v6-1"]
	if p == nil || p.Spec.CIDR != "fd5c::80/121" || p.Spec.Disabled {
		t.Errorf("split of a disabled pool by CIDR: %+v", p)
	}
}

func (e *env) allKeys(t *testing.T) map[string]string {
	t.Helper()
	resp, err := e.srv.Client().Get(context.Background(), "/calico/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, kv := range resp.Kvs {
		out[string(kv.Key)] = fmt.Sprintf("%d %s", kv.ModRevision, kv.Value)
	}
	return out
}

// TestSplitPoolLongName: a name that would make the new names longer than 253 characters is cut
// to 245 characters first, as Project Calico does.
func TestSplitPoolLongName(t *testing.T) {
	e := newEnv(t)
	e.setLock(t, true)
	name := strings.Repeat("a", 250)
	e.pool(t, name, "10.65.0.0/16", 26, nil)
	if _, err := e.c.SplitPool(tctx(t), ipam.SplitRequest{Name: name, Parts: 2}); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.pools(t)["split-"+name[:245]+"-1"]; !ok {
		t.Errorf("pools: %v", keys(e.pools(t)))
	}
}
