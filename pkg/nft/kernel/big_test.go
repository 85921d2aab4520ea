package kernel

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/apply"
	"github.com/calico-host/calico-host/pkg/nft/internal/nla"
	"github.com/calico-host/calico-host/pkg/nft/internal/nstest"
)

// readTable reads one table back from the kernel.
func readTable(t *testing.T, k *Backend, id nft.TableID) *nft.Table {
	t.Helper()
	rd, err := k.Read(context.Background(), []nft.TableID{id}, nft.ReadOptions{})
	if err != nil || len(rd) != 1 {
		t.Fatalf("read %s: %v (%d tables)", id, err, len(rd))
	}
	return rd[0]
}

// TestKernelBigSet: a set of a million interval elements (two million
// kernel elements, far beyond one netlink attribute) goes in with one
// batch, and a later change of two elements is two small operations.
// Reading it back whole (a full sync) is left to NFT_BIG_READ=1: the
// kernel's rbtree dump restarts its walk for every 32 KiB message, so it
// costs minutes at this size (`nft list set` is slower still).
func TestKernelBigSet(t *testing.T) {
	if testing.Short() {
		t.Skip("big")
	}
	ns := nstest.New(t)
	k := newBackend(t, ns)
	const n = 1_000_000
	elems := make([]nft.Element, n)
	for i := range elems {
		// every other address of 10.0.0.0/8: no two adjacent, so no merging
		v := uint32(10<<24 | 2*i)
		elems[i] = nft.AddrElem(netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}))
	}
	tb := nft.NewTable(nft.FamilyIP, "calico")
	must(t, tb.PutSet(&nft.Set{Name: "big", Type: nft.TypeIPv4Addr, Interval: true, Elements: elems}))
	must(t, tb.PutChain(&nft.Chain{Name: "in", Base: &nft.BaseChain{Type: nft.ChainFilter, Hook: nft.HookInput},
		Rules: []nft.Rule{nft.NewRule(nft.SAddrInSet(nft.IPv4, "big"), nft.Drop())}}))
	a := newApplier(t, k, tb)
	st := applyOK(t, a, tb)
	t.Logf("commit of %d elements: %d messages, %d bytes, encode %v, commit %v", n, st.Messages, st.Bytes, st.EncodeTime, st.CommitTime)
	if st.Messages < 100 || st.ElementsAdded != n {
		t.Errorf("stats %+v", st)
	}
	if os.Getenv("NFT_BIG_READ") != "" {
		k.timeout = 30 * time.Minute
		start := time.Now()
		if got := readTable(t, k, tb.ID()).Set("big"); got == nil || len(got.Elements) != n {
			t.Fatalf("read back %d elements", len(got.Elements))
		}
		t.Logf("read back %d elements in %v", n, time.Since(start))
	}
	must(t, tb.UpdateSet("big", []nft.Element{nft.AddrElem(a4("11.0.0.1"))}, []nft.Element{nft.AddrElem(a4("10.0.0.2"))}))
	if st := applyOK(t, a, tb); st.Ops != 2 || st.ElementsAdded != 1 || st.ElementsRemoved != 1 {
		t.Errorf("partial sync of a big set: %+v", st)
	}
	// (`nft get element` would dump the whole set: minutes at this size.)
	checkBig := func(stage string) {
		t.Helper()
		for key, want := range map[string]bool{"11.0.0.1": true, "10.0.0.4": true, "10.0.0.2": false, "10.0.0.3": false} {
			if got := hasElement(t, k, tb.ID(), "big", nft.AddrKey(a4(key))); got != want {
				t.Errorf("%s: element %s present: %v, want %v", stage, key, got, want)
			}
		}
	}
	checkBig("partial sync")
	bigSetResyncs(t, ns, k, a, tb)
	checkBig("full syncs")
}

// bigSetResyncs measures the full syncs of a table holding a big set: none of them reads its
// elements back. With the ruleset generation unchanged, nothing is read; after another
// program's commits, the tables' structure is read and the set is trusted (the same set: the
// handle read after the commit that made it); a restarted Applier writes it whole (flush and
// add, in one batch).
func bigSetResyncs(t *testing.T, ns *nstest.NS, k *Backend, a *apply.Applier, tb *nft.Table) {
	resync := func(what string, a *apply.Applier) apply.Stats {
		a.RequestFullSync()
		start := time.Now()
		st := applyOK(t, a, tb)
		t.Logf("%s: %v (read %v, commit %v): unchanged %v, %d sets trusted, %d written whole", what, time.Since(start),
			st.ReadTime, st.CommitTime, st.Unchanged, st.SetsTrusted, st.SetsRewritten)
		return st
	}
	if st := resync("full sync, generation unchanged", a); !st.Unchanged || st.Ops != 0 {
		t.Errorf("stats %+v", st)
	}
	for _, verb := range []string{"add", "delete"} {
		ns.Exec(t, "nft", verb, "table", "ip", "other")
		if st := resync("full sync after another commit", a); st.Unchanged || st.SetsTrusted != 1 || st.Ops != 0 {
			t.Errorf("stats %+v", st)
		}
	}
	if st := resync("restart", newApplier(t, k, tb)); st.SetsRewritten != 1 {
		t.Errorf("stats %+v", st)
	}
}

// hasElement asks the kernel for one element (GETSETELEM without a dump:
// a lookup, not a walk of the set).
func hasElement(t *testing.T, k *Backend, id nft.TableID, set string, key nft.Key) bool {
	err := hasElementErr(k, id, set, key)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, os.ErrNotExist) {
		return false
	}
	must(t, err)
	return true
}

func hasElementErr(k *Backend, id nft.TableID, set string, key nft.Key) error {
	conn, err := k.dial()
	if err != nil {
		return err
	}
	defer conn.Close()
	r := &reader{conn: conn}
	_, err = r.request(unix.NFT_MSG_GETSETELEM, id.Family, false, func(b *nla.Builder) {
		b.String(unix.NFTA_SET_ELEM_LIST_TABLE, id.Name)
		b.String(unix.NFTA_SET_ELEM_LIST_SET, set)
		l := b.Begin(unix.NFTA_SET_ELEM_LIST_ELEMENTS)
		e := b.Begin(unix.NFTA_LIST_ELEM)
		kk := b.Begin(unix.NFTA_SET_ELEM_KEY)
		b.BytesString(unix.NFTA_DATA_VALUE, key.Raw())
		b.End(kk)
		b.End(e)
		b.End(l)
	})
	return err
}

// TestKernelBigRule: a rule matching 6,000 ports puts them into an
// anonymous set whose elements span several messages; it reads back as
// the same rule.
func TestKernelBigRule(t *testing.T) {
	ns := nstest.New(t)
	k := newBackend(t, ns)
	var ports []nft.PortRange
	for i := range 6000 {
		ports = append(ports, nft.Port(uint16(1000+3*i)))
	}
	tb := nft.NewTable(nft.FamilyInet, "calico")
	must(t, tb.PutChain(&nft.Chain{Name: "in", Base: &nft.BaseChain{Type: nft.ChainFilter, Hook: nft.HookInput},
		Rules: []nft.Rule{
			nft.NewRule(nft.DPort(nft.ProtoTCP, ports...), nft.Accept()),
			nft.NewRule(nft.SAddr(nft.Host(a4("198.18.0.1"))), nft.Not(nft.DPort(nft.ProtoUDP, append(ports, nft.Ports(30000, 40000))...)), nft.Drop()),
		}}))
	st := applyOK(t, newApplier(t, k, tb), tb)
	t.Logf("%d messages, %d bytes", st.Messages, st.Bytes)
	if st.Messages < 6 {
		t.Errorf("expected the anonymous sets' elements to span several messages: %+v", st)
	}
	if got, want := readTable(t, k, tb.ID()).Dump(), tb.Dump(); got != want {
		t.Errorf("read back differs (%d vs %d bytes)", len(got), len(want))
	}
	out := ns.Exec(t, "nft", "list", "chain", "inet", "calico", "in")
	if !strings.Contains(out, "tcp dport { 1000, 1003, 1006,") || !strings.Contains(out, "18997 }") {
		t.Errorf("nft list does not show the port list: %.300s", out)
	}
}

// TestKernelBigMap: a verdict map of 10,000 interface names, each going to
// its own chain.
func TestKernelBigMap(t *testing.T) {
	ns := nstest.New(t)
	k := newBackend(t, ns)
	tb := nft.NewTable(nft.FamilyIP, "calico")
	m := &nft.Map{Name: "wl", Type: nft.TypeIfname, Elements: map[nft.Key]nft.Verdict{}}
	for i := range 10000 {
		name := fmt.Sprintf("cali%05d", i)
		must(t, tb.PutChain(&nft.Chain{Name: "wl-" + name, Rules: []nft.Rule{nft.NewRule(nft.Counter(), nft.Accept())}}))
		m.Elements[nft.IfnameKey(name)] = nft.Goto("wl-" + name)
	}
	must(t, tb.PutMap(m))
	must(t, tb.PutChain(&nft.Chain{Name: "fwd", Base: &nft.BaseChain{Type: nft.ChainFilter, Hook: nft.HookForward},
		Rules: []nft.Rule{nft.NewRule(nft.IIFNameVmap("wl"))}}))
	a := newApplier(t, k, tb)
	st := applyOK(t, a, tb)
	t.Logf("%d messages, %d bytes, commit %v", st.Messages, st.Bytes, st.CommitTime)
	if got := readTable(t, k, tb.ID()).Map("wl"); got == nil || len(got.Elements) != 10000 || got.Elements[nft.IfnameKey("cali09999")] != nft.Goto("wl-cali09999") {
		t.Fatalf("read back map: %d elements", len(got.Elements))
	}
	if st := applyOK(t, newApplier(t, k, tb), tb); st.Ops != 0 {
		t.Errorf("restart: %+v", st)
	}
}
