package ipam_test

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/ipam"
)

func TestPoolSelection(t *testing.T) {
	e := newEnv(t)
	ctx := tctx(t)
	e.pool(t, "rack-a", "10.65.1.0/24", 26, func(s *api.IPPoolSpec) { s.NodeSelector = "rack == 'a'" })
	e.pool(t, "off", "10.65.2.0/24", 26, func(s *api.IPPoolSpec) { s.Disabled = true })
	e.pool(t, "tunnels", "10.65.3.0/24", 26, func(s *api.IPPoolSpec) { s.AllowedUses = []string{api.UseTunnel} })
	e.pool(t, "v6", "fd5c:3::/64", 122, nil)
	node := &api.Node{ObjectMeta: api.ObjectMeta{Name: "host-a", Labels: map[string]string{"rack": "a"}}}
	if _, err := e.ds.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		args    ipam.AutoAssignArgs
		want    string // pool CIDR the address must come from
		wantErr error
	}{
		{"selector matches node labels", ipam.AutoAssignArgs{Num4: 1, Hostname: "host-a"}, "10.65.1.0/24", nil},
		{"no pool selects a node without labels", ipam.AutoAssignArgs{Num4: 1, Hostname: "host-b"}, "", ipam.ErrNoPool},
		{"tunnel use", ipam.AutoAssignArgs{Num4: 1, Hostname: "host-b", IntendedUse: api.UseTunnel}, "10.65.3.0/24", nil},
		{"requested by name ignores the selector", ipam.AutoAssignArgs{Num4: 1, Hostname: "host-b", IPv4Pools: []string{"rack-a"}}, "10.65.1.0/24", nil},
		{"requested by CIDR", ipam.AutoAssignArgs{Num4: 1, Hostname: "host-b", IPv4Pools: []string{"10.65.1.0/24"}}, "10.65.1.0/24", nil},
		{"requested disabled pool", ipam.AutoAssignArgs{Num4: 1, Hostname: "host-a", IPv4Pools: []string{"off"}}, "", ipam.ErrNoPool},
		{"requested unknown pool", ipam.AutoAssignArgs{Num4: 1, Hostname: "host-a", IPv4Pools: []string{"10.65.9.0/24"}}, "", ipam.ErrNoPool},
		{"requested pool not allowing the use", ipam.AutoAssignArgs{Num4: 1, Hostname: "host-a", IPv4Pools: []string{"tunnels"}}, "", ipam.ErrNoPool},
		{"IPv6 only", ipam.AutoAssignArgs{Num6: 1, Hostname: "host-b"}, "fd5c:3::/64", nil},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.args.HandleID = "h" + string(rune('a'+i))
			v4, v6, err := e.c.AutoAssign(ctx, c.args)
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("want %v, got %v (%v %v)", c.wantErr, err, v4, v6)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := append(v4, v6...)
			if len(got) != 1 || got[0].Bits() != got[0].Addr().BitLen() || !netip.MustParsePrefix(c.want).Contains(got[0].Addr()) {
				t.Fatalf("got %v, want one host prefix in %s", got, c.want)
			}
		})
	}
	e.assertConsistent(t)
}

func TestAssignSpecificIP(t *testing.T) {
	e := newEnv(t)
	ctx := tctx(t)
	e.pool(t, "v4", "10.65.0.0/16", 26, nil)
	e.pool(t, "v6", "fd5c:4::/64", 122, nil)
	ip := netip.MustParseAddr("10.65.7.7")
	args := ipam.AssignIPArgs{IP: ip, HandleID: "net.x", Hostname: "host-a", Attrs: map[string]string{"node": "host-a"}}
	if err := e.c.AssignIP(ctx, args); err != nil {
		t.Fatal(err)
	}
	if err := e.c.AssignIP(ctx, ipam.AssignIPArgs{IP: ip, HandleID: "net.y", Hostname: "host-a"}); !errors.Is(err, ipam.ErrAlreadyAssigned) {
		t.Fatalf("second assignment: %v", err)
	}
	if owner := blockOwnerBits(t, e, ip, 26); owner != "host-a" {
		t.Errorf("block of the requested address is owned by %q", owner)
	}
	v4, _, err := e.c.AutoAssign(ctx, ipam.AutoAssignArgs{Num4: 8, HandleID: "net.z", Hostname: "host-a"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range v4 {
		if p.Addr() == ip {
			t.Fatalf("auto-assign handed out the specifically assigned %s", ip)
		}
	}
	if err := e.c.AssignIP(ctx, ipam.AssignIPArgs{IP: netip.MustParseAddr("10.66.0.1"), Hostname: "host-a"}); !errors.Is(err, ipam.ErrNotInPool) {
		t.Errorf("address outside pools: %v", err)
	}
	if err := e.c.AssignIP(ctx, ipam.AssignIPArgs{IP: netip.MustParseAddr("fd5c:4::5"), HandleID: "net.x", Hostname: "host-a"}); err != nil {
		t.Fatal(err)
	}
	held, _ := e.c.IPsByHandle(ctx, "net.x")
	if len(held) != 2 {
		t.Errorf("net.x holds %v", held)
	}
	e.assertConsistent(t)
}

func TestReleaseIPs(t *testing.T) {
	e := newEnv(t)
	ctx := tctx(t)
	e.pool(t, "v4", "10.65.0.0/16", 26, nil)
	v4, _, err := e.c.AutoAssign(ctx, ipam.AutoAssignArgs{Num4: 3, HandleID: "net.r", Hostname: "host-a"})
	if err != nil {
		t.Fatal(err)
	}
	free := netip.MustParseAddr("10.65.200.1")
	outside := netip.MustParseAddr("10.99.0.1")
	notHeld, err := e.c.ReleaseIPs(ctx, v4[0].Addr(), free, outside)
	if err != nil {
		t.Fatal(err)
	}
	if got := sortedAddrs(notHeld); len(got) != 2 || got[0] != free || got[1] != outside {
		t.Errorf("not allocated: %v", notHeld)
	}
	held, _ := e.c.IPsByHandle(ctx, "net.r")
	if len(held) != 2 || held[0] == v4[0].Addr() {
		t.Errorf("handle holds %v after releasing %s", held, v4[0])
	}
	if _, _, err := e.c.GetAssignmentAttributes(ctx, v4[0].Addr()); !errors.Is(err, ipam.ErrNotAssigned) {
		t.Errorf("released address: %v", err)
	}
	if _, err := e.c.ReleaseIPs(ctx, v4[1].Addr(), v4[2].Addr()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ds.GetKV(ctx, datastore.HandleKey("net.r")); !datastore.IsNotFound(err) {
		t.Errorf("empty handle not deleted: %v", err)
	}
	if err := e.c.ReleaseByHandle(ctx, "net.r"); err != nil {
		t.Errorf("releasing a missing handle: %v", err)
	}
	e.assertConsistent(t)
}

func TestReleaseHostAffinities(t *testing.T) {
	e := newEnv(t)
	ctx := tctx(t)
	e.pool(t, "small", "10.65.0.0/28", 30, nil)
	v4, _, err := e.c.AutoAssign(ctx, ipam.AutoAssignArgs{Num4: 6, HandleID: "h", Hostname: "host-a"})
	if err != nil {
		t.Fatal(err)
	}
	// Free the second block entirely: host-a keeps one full and one empty block.
	if _, err := e.c.ReleaseIPs(ctx, v4[4].Addr(), v4[5].Addr()); err != nil {
		t.Fatal(err)
	}
	if err := e.c.ReleaseHostAffinities(ctx, "host-a", true); err != nil {
		t.Fatal(err)
	}
	r := e.assertConsistent(t)
	if r.Blocks != 1 || r.Affinities != 1 {
		t.Fatalf("mustBeEmpty: %d blocks, %d affinities left, want the used block only", r.Blocks, r.Affinities)
	}
	if err := e.c.ReleaseHostAffinities(ctx, "host-a", false); err != nil {
		t.Fatal(err)
	}
	r = e.assertConsistent(t)
	if r.Blocks != 1 || r.Affinities != 0 || r.AllocatedIPs != 4 {
		t.Fatalf("release all: %d blocks, %d affinities, %d addresses", r.Blocks, r.Affinities, r.AllocatedIPs)
	}
	if owner := blockOwnerBits(t, e, v4[0].Addr(), 30); owner != "" {
		t.Errorf("block in use still affine to %q", owner)
	}
	// Addresses of the unaffine block are still released normally.
	if err := e.c.ReleaseByHandle(ctx, "h"); err != nil {
		t.Fatal(err)
	}
	if r := e.assertConsistent(t); r.AllocatedIPs != 0 {
		t.Errorf("%d addresses left", r.AllocatedIPs)
	}
}

func TestCheckReportsProblems(t *testing.T) {
	e := newEnv(t)
	ctx := tctx(t)
	e.pool(t, "v4", "10.65.0.0/16", 26, nil)
	v4, _, err := e.c.AutoAssign(ctx, ipam.AutoAssignArgs{Num4: 2, HandleID: "good", Hostname: "host-a"})
	if err != nil {
		t.Fatal(err)
	}
	block, _ := v4[0].Addr().Prefix(26)
	cli := e.srv.Client()
	put := func(k, v string) {
		if _, err := cli.Put(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	// A handle claiming one address too many, a handle for nothing, an affinity without a block,
	// a missing affinity for host-a's block, and an allocation whose handle is gone.
	put(datastore.HandleKey("good"), `{"block":{"`+block.String()+`":3},"deleted":false}`)
	put(datastore.HandleKey("ghost"), `{"block":{"10.65.99.0/26":1},"deleted":false}`)
	put(datastore.AffinityKey("host-b", "10.65.98.0/26"), `{"state":"confirmed","deleted":false}`)
	put(datastore.AffinityKey("host-c", "10.65.97.0/26"), `{"state":"pending","deleted":false}`)
	if _, err := cli.Delete(ctx, datastore.AffinityKey("host-a", block.String())); err != nil {
		t.Fatal(err)
	}
	if err := e.c.AssignIP(ctx, ipam.AssignIPArgs{IP: netip.MustParseAddr("10.65.50.1"), HandleID: "gone", Hostname: "host-d"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Delete(ctx, datastore.HandleKey("gone")); err != nil {
		t.Fatal(err)
	}
	r, err := e.c.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.LeakedIPs) != 1 || r.LeakedIPs[0].IP != netip.MustParseAddr("10.65.50.1") || r.LeakedIPs[0].Handle != "gone" {
		t.Errorf("leaked: %+v", r.LeakedIPs)
	}
	wantMis := []ipam.HandleMismatch{
		{Handle: "ghost", Block: "10.65.99.0/26", Recorded: 1, Actual: 0},
		{Handle: "good", Block: block.String(), Recorded: 3, Actual: 2},
	}
	if len(r.HandleMismatches) != 2 || r.HandleMismatches[0] != wantMis[0] || r.HandleMismatches[1] != wantMis[1] {
		t.Errorf("mismatches: %+v", r.HandleMismatches)
	}
	if len(r.BlocksWithoutAffinity) != 1 || r.BlocksWithoutAffinity[0].Host != "host-a" {
		t.Errorf("blocks without affinity: %+v", r.BlocksWithoutAffinity)
	}
	if len(r.AffinitiesWithoutBlock) != 1 || r.AffinitiesWithoutBlock[0].Host != "host-b" {
		t.Errorf("affinities without block: %+v", r.AffinitiesWithoutBlock)
	}
	if len(r.PendingAffinities) != 1 || r.PendingAffinities[0].State != "pending" {
		t.Errorf("pending: %+v", r.PendingAffinities)
	}
	if r.Problems() != 6 {
		t.Errorf("problems = %d, want 6", r.Problems())
	}
}

// TestCorruptBlockIsSkipped: an undecodable block is neither allocated from nor re-created.
func TestCorruptBlockIsSkipped(t *testing.T) {
	e := newEnv(t)
	ctx := tctx(t)
	e.pool(t, "small", "10.65.0.0/29", 30, nil) // two blocks
	cli := e.srv.Client()
	if _, err := cli.Put(ctx, datastore.BlockKey("10.65.0.0/30"), `{"cidr":"10.65.0.0/30","allocations":[1]}`); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, datastore.AffinityKey("host-a", "10.65.0.0/30"), `{"state":"confirmed","deleted":false}`); err != nil {
		t.Fatal(err)
	}
	v4, _, err := e.c.AutoAssign(ctx, ipam.AutoAssignArgs{Num4: 4, HandleID: "h", Hostname: "host-a"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range v4 {
		if !netip.MustParsePrefix("10.65.0.4/30").Contains(p.Addr()) {
			t.Errorf("%s came from the corrupt block", p)
		}
	}
	if _, _, err := e.c.AutoAssign(ctx, ipam.AutoAssignArgs{Num4: 1, HandleID: "h2", Hostname: "host-a"}); !errors.Is(err, ipam.ErrExhausted) {
		t.Errorf("want ErrExhausted, got %v", err)
	}
	r, err := e.c.Check(ctx)
	if err != nil || len(r.CorruptBlocks) != 1 {
		t.Errorf("check: %+v %v", r, err)
	}
}
