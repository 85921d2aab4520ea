package ipam_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/ipam"
)

// rpcCounter counts the etcd requests of a client, by method ("Range", "Txn").
type rpcCounter struct {
	mu    sync.Mutex
	calls map[string]int
}

func (c *rpcCounter) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	c.mu.Lock()
	c.calls[method[strings.LastIndex(method, "/")+1:]]++
	c.mu.Unlock()
	return invoker(ctx, method, req, reply, cc, opts...)
}

func (c *rpcCounter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.calls
	c.calls = map[string]int{}
	return out
}

// countingClient is an IPAM client whose etcd requests are counted.
func (e *env) countingClient(t *testing.T) (*ipam.Client, *rpcCounter) {
	t.Helper()
	n := &rpcCounter{calls: map[string]int{}}
	cli, err := clientv3.New(clientv3.Config{Endpoints: e.srv.Endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(n.intercept)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return ipam.New(datastore.NewFromEtcd(cli), zerolog.Nop()), n
}

// TestRoundTripsOfAWorkload: a dual-stack assignment into the host's blocks reads the IPAM
// configuration, the pools, the host's affinities and Node and the handle in one request, both
// blocks in another, and writes both blocks with the handle in one compare-and-swap transaction:
// 3 requests (13 when every family read everything again, each in a request of its own, and
// wrote its block with the handle). A repeated assignment to the handle returns what it holds.
// Releasing the handle (and a legacy handle that does not exist) reads the handles in one request,
// the blocks in another, and deletes the handle and frees its addresses in one transaction (3
// requests; 8 when each handle and block was read and written on its own).
func TestRoundTripsOfAWorkload(t *testing.T) {
	e := newEnv(t)
	e.pool(t, "v4", "10.65.0.0/16", 26, nil)
	e.pool(t, "v6", "fd5c:1::/64", 122, nil)
	ctx := tctx(t)
	args := func(h string) ipam.AutoAssignArgs {
		return ipam.AutoAssignArgs{Num4: 1, Num6: 1, HandleID: h, Hostname: "host-a", Attrs: map[string]string{"node": "host-a"}}
	}
	if _, _, err := e.c.AutoAssign(ctx, args("net.first")); err != nil { // claims the host's blocks
		t.Fatal(err)
	}
	c, n := e.countingClient(t)
	addrs, assigned, err := c.AssignToHandle(ctx, args("net.second"))
	if err != nil || !assigned || len(addrs) != 2 || !addrs[0].Addr().Is4() || addrs[0].Bits() != 26 || addrs[1].Bits() != 122 {
		t.Fatalf("AssignToHandle: %v %v %v", addrs, assigned, err)
	}
	if got := n.take(); got["Txn"] != 3 || len(got) != 1 {
		t.Errorf("an assignment into the host's blocks made requests %v, want 3 Txn (the state, the blocks, one CAS write)", got)
	}
	again, assigned, err := c.AssignToHandle(ctx, args("net.second"))
	if err != nil || assigned || !slices.Equal(again, addrs) {
		t.Errorf("repeated AssignToHandle: %v %v %v, want %v and nothing assigned", again, assigned, err, addrs)
	}
	if got := n.take(); got["Txn"] != 1 || got["Range"] != 2 {
		t.Errorf("a repeated assignment made requests %v, want 1 Txn (the state) and 2 Range (the blocks)", got)
	}
	if err := c.ReleaseByHandles(ctx, "net.second", "second"); err != nil {
		t.Fatal(err)
	}
	if got := n.take(); got["Txn"] != 3 || len(got) != 1 {
		t.Errorf("ReleaseByHandles made requests %v, want 3 Txn (the handles, the blocks, one CAS write)", got)
	}
	if ips, err := e.c.IPsByHandle(ctx, "net.second"); err != nil || len(ips) != 0 {
		t.Errorf("released handle still holds %v (%v)", ips, err)
	}
	e.assertConsistent(t)
}

// TestFullOwnBlockGoesTheGeneralWay: when the host's first block of a family has no room, the
// one-transaction assignment does not apply and writes nothing; the general way claims a new block
// for that family, and the other family still comes from the host's block.
func TestFullOwnBlockGoesTheGeneralWay(t *testing.T) {
	e := newEnv(t)
	e.pool(t, "v4", "10.65.0.0/16", 30, nil)
	e.pool(t, "v6", "fd5c:1::/64", 122, nil)
	ctx := tctx(t)
	var first netip.Prefix
	for i := range 4 { // fills the host's /30
		v4, _, err := e.c.AutoAssignInBlocks(ctx, ipam.AutoAssignArgs{Num4: 1, Num6: 1, HandleID: fmt.Sprintf("net.fill%d", i), Hostname: "host-a"})
		if err != nil || len(v4) != 1 {
			t.Fatalf("filling: %v %v", v4, err)
		}
		first = v4[0].Masked()
	}
	addrs, assigned, err := e.c.AssignToHandle(ctx, ipam.AutoAssignArgs{Num4: 1, Num6: 1, HandleID: "net.next", Hostname: "host-a"})
	if err != nil || !assigned || len(addrs) != 2 {
		t.Fatalf("AssignToHandle with a full block: %v %v %v", addrs, assigned, err)
	}
	if addrs[0].Masked() == first || !addrs[1].Addr().Is6() {
		t.Errorf("assigned %v: want an IPv4 address outside the full block %s and an IPv6 one", addrs, first)
	}
	ips, err := e.c.IPsByHandle(ctx, "net.next")
	if err != nil || len(ips) != 2 {
		t.Errorf("handle holds %v (%v)", ips, err)
	}
	e.assertConsistent(t)
}

// TestReleaseWithABadBlockName: a handle naming a block that is not a CIDR is released block by
// block (not in one transaction): its addresses are freed and it is deleted.
func TestReleaseWithABadBlockName(t *testing.T) {
	e := newEnv(t)
	e.pool(t, "v4", "10.65.0.0/16", 26, nil)
	ctx := tctx(t)
	v4, _, err := e.c.AutoAssign(ctx, ipam.AutoAssignArgs{Num4: 1, HandleID: "net.bad", Hostname: "host-a"})
	if err != nil {
		t.Fatal(err)
	}
	kv, err := e.ds.GetKV(ctx, datastore.HandleKey("net.bad"))
	if err != nil {
		t.Fatal(err)
	}
	var h map[string]any
	if err := json.Unmarshal(kv.Value, &h); err != nil {
		t.Fatal(err)
	}
	h["block"].(map[string]any)["not-a-cidr"] = 1
	b, _ := json.Marshal(h)
	if _, err := e.ds.UpdateKV(ctx, kv.Key, b, kv.ModRevision); err != nil {
		t.Fatal(err)
	}
	if err := e.c.ReleaseByHandle(ctx, "net.bad"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ds.GetKV(ctx, kv.Key); !datastore.IsNotFound(err) {
		t.Errorf("handle still stored: %v", err)
	}
	if _, _, err := e.c.GetAssignmentAttributes(ctx, v4[0].Addr()); !errors.Is(err, ipam.ErrNotAssigned) {
		t.Errorf("%s still assigned: %v", v4[0].Addr(), err)
	}
}
