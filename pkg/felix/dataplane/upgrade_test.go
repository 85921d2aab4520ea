package dataplane

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vishvananda/netns"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/netnstest"
	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/kernel"
)

// recordingBackend records the batches committed through it.
type recordingBackend struct {
	nft.Backend
	mu      sync.Mutex
	batches []*nft.Batch
}

func (r *recordingBackend) Commit(ctx context.Context, b *nft.Batch) (nft.CommitInfo, error) {
	info, err := r.Backend.Commit(ctx, b)
	if err == nil {
		r.mu.Lock()
		r.batches = append(r.batches, b)
		r.mu.Unlock()
	}
	return info, err
}

func (r *recordingBackend) committed() []*nft.Batch {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.batches
}

// TestKernelUpgradeFromInetTable: the namespace holds the ruleset of felix before per-version
// tables (one inet table); a new dataplane's first sync deletes it in the transaction that
// creates the ip table, so policy is in force throughout: while it starts, dialers hammering a
// denied port never get through, and a connection opened under the old ruleset keeps working.
func TestKernelUpgradeFromInetTable(t *testing.T) {
	tp := newTopology(t)
	a := tp.addWorkload(t, "a", ifA, ipA)
	b := tp.addWorkload(t, "b", ifB, ipB)
	listenTCP(t, b, ipB, 8080)
	listenTCP(t, b, ipB, 8081)
	for _, ifc := range []string{ifA, ifB} { // as the old felix left them
		if err := (&nsInterfaces{t: t, ns: tp.host}).ConfigureWorkload(ifc, false); err != nil {
			t.Fatal(err)
		}
	}
	tp.host.Exec(t, "nft", "-f", "testdata/upgrade-from-inet.nft")
	tcp := func(port int) func() bool { return func() bool { return canTCP(t, a, ipB, port) } }
	check(t, "old layout", expectation{"tcp 8080", tcp(8080), true}, expectation{"tcp 8081", tcp(8081), false})
	c, err := dialTCP(t, a, ipB, 8080)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	stop := make(chan struct{})
	var leaks, tries atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hammer(a, fmt.Sprintf("%s:%d", ipB, 8081), stop, &leaks, &tries)
		}()
	}
	time.Sleep(100 * time.Millisecond)
	nl, err := os.Open(tp.host.Path())
	if err != nil {
		t.Fatal(err)
	}
	kb, err := kernel.New(kernel.Config{NetNS: int(nl.Fd())})
	nl.Close()
	if err != nil {
		t.Fatal(err)
	}
	rec := &recordingBackend{Backend: kb}
	web := gnpID("b-web")
	startDataplaneWith(t, tp, Config{}, []Option{WithNFTBackend(rec)},
		policy(web, []calc.Rule{{Action: calc.RuleAllow, Protocol: 6, DstPorts: ports(8080)}}, nil),
		egressAll(), kwep("a", ifA, ipA), kwep("b", ifB, ipB, tier("default", ids(web), nil)))
	time.Sleep(100 * time.Millisecond)
	close(stop)
	wg.Wait()
	t.Logf("%d dials to the denied port while the dataplane started", tries.Load())
	if leaks.Load() > 0 || tries.Load() == 0 {
		t.Errorf("%d of %d dials to the denied port got through during the upgrade", leaks.Load(), tries.Load())
	}
	if err := echo(c); err != nil {
		t.Errorf("the connection opened under the old ruleset: %v", err)
	}
	batches := rec.committed()
	if len(batches) != 1 || !hasOp(batches[0], nft.OpDeleteTable, nft.FamilyInet) || !hasOp(batches[0], nft.OpAddTable, nft.FamilyIP) {
		t.Errorf("want one transaction deleting the inet table and adding the ip table, got %d: %s", len(batches), batchScript(batches[0]))
	}
	if got := tp.host.Exec(t, "nft", "list", "tables"); got != "table ip calico\n" {
		t.Errorf("tables after the upgrade: %q", got)
	}
	check(t, "new layout", expectation{"tcp 8080", tcp(8080), true}, expectation{"tcp 8081", tcp(8081), false})
}

func hasOp(b *nft.Batch, kind nft.OpKind, fam nft.Family) bool {
	for _, op := range b.Ops {
		if op.Kind == kind && op.Table.Family == fam {
			return true
		}
	}
	return false
}

// hammer dials addr from ns until stop, counting the dials and those that connected. It runs
// on its own goroutine (no testing.T: it reports through the counters).
func hammer(ns *netnstest.NS, addr string, stop <-chan struct{}, leaks, tries *atomic.Int64) {
	runtime.LockOSThread() // the thread stays in ns and ends with the goroutine
	if err := netns.Set(netns.NsHandle(ns.FD)); err != nil {
		return
	}
	for {
		select {
		case <-stop:
			return
		default:
		}
		tries.Add(1)
		if c, err := net.DialTimeout("tcp", addr, 20*time.Millisecond); err == nil {
			leaks.Add(1)
			c.Close()
		}
	}
}

// TestFirstSyncReplacesOldTables: a backend holding the inet table of an older felix and the
// ip6 table of a run with IPv6 on gets, from a dataplane with IPv6 off, one transaction that
// creates the ip table and deletes both.
func TestFirstSyncReplacesOldTables(t *testing.T) {
	old := newHarness(t, Config{Hostname: "host1", IPv6Support: true})
	old.up("cali1a2b3c4d5e6")
	old.send(example19()...)
	h := newHarness(t, Config{Hostname: "host1"})
	inet := nft.TableID{Family: nft.FamilyInet, Name: "calico"}
	for _, id := range old.fake.Tables() {
		src, _ := old.fake.Read(t.Context(), []nft.TableID{id}, nft.ReadOptions{})
		if id.Family == nft.FamilyIP {
			id = inet // stands for the old layout: any content, as an older felix left it
		}
		h.fake.Tamper(id, func(*nft.Table) *nft.Table { return src[0] })
	}
	h.up("cali1a2b3c4d5e6")
	h.send(example19()...)
	b := h.fake.LastBatch()
	if h.fake.Commits() != 1 || !hasOp(b, nft.OpDeleteTable, nft.FamilyInet) || !hasOp(b, nft.OpDeleteTable, nft.FamilyIP6) ||
		!hasOp(b, nft.OpAddTable, nft.FamilyIP) {
		t.Errorf("%d commits; last:\n%s", h.fake.Commits(), batchScript(b))
	}
	if got := h.fake.Tables(); len(got) != 1 || got[0].Family != nft.FamilyIP {
		t.Errorf("tables %v", got)
	}
}

// TestKernelTakeOverProjectCalicoTables: a host moved from Project Calico's felix in nftables
// mode holds tables of the names calico-felix uses (ip calico, ip6 calico). The first sync
// takes them over in one transaction: none of the stale chains, sets or rules is left (they
// would keep dropping what current policy allows), the IPv6 table goes when IPv6 is off, and
// a table that is not calico-felix's (arp calico-arp) is left to the operator.
func TestKernelTakeOverProjectCalicoTables(t *testing.T) {
	tp := newTopology(t)
	a := tp.addWorkload(t, "a", ifA, ipA)
	b := tp.addWorkload(t, "b", ifB, ipB)
	listenTCP(t, b, ipB, 8080)
	listenTCP(t, b, ipB, 8081)
	for _, ifc := range []string{ifA, ifB} { // as Project Calico's felix left them
		if err := (&nsInterfaces{t: t, ns: tp.host}).ConfigureWorkload(ifc, false); err != nil {
			t.Fatal(err)
		}
	}
	tp.host.Exec(t, "nft", "-f", "testdata/projectcalico-nftables.nft")
	tcp := func(port int) func() bool { return func() bool { return canTCP(t, a, ipB, port) } }
	check(t, "Project Calico's stale tables", expectation{"tcp 8080", tcp(8080), false}, expectation{"tcp 8081", tcp(8081), true})
	web := gnpID("b-web")
	startDataplane(t, tp, Config{},
		policy(web, []calc.Rule{{Action: calc.RuleAllow, Protocol: 6, DstPorts: ports(8080)}}, nil),
		egressAll(), kwep("a", ifA, ipA), kwep("b", ifB, ipB, tier("default", ids(web), nil)))
	ruleset := tp.host.Exec(t, "nft", "list", "ruleset")
	for _, stale := range []string{"cali40s-stale", "stale-drop", "stale-v6", "table ip6 calico"} {
		if strings.Contains(ruleset, stale) {
			t.Errorf("%q left after the takeover:\n%s", stale, ruleset)
		}
	}
	if got := tp.host.Exec(t, "nft", "list", "tables"); got != "table ip calico\ntable arp calico-arp\n" {
		t.Errorf("tables after the takeover: %q", got)
	}
	check(t, "calico-felix's policy", expectation{"tcp 8080", tcp(8080), true}, expectation{"tcp 8081", tcp(8081), false})
}
