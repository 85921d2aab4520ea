package apply_test

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"syscall"
	"testing"

	"github.com/calico-host/calico-host/internal/logtest"
	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/apply"
	"github.com/calico-host/calico-host/pkg/nft/fake"
)

var ipCalico = nft.TableID{Family: nft.FamilyIP, Name: "calico"}

func newApplier(t testing.TB, b nft.Backend, ids ...nft.TableID) *apply.Applier {
	return apply.New(b, apply.Options{Tables: ids, Log: logtest.Logger(t)})
}

func applyOK(t testing.TB, a *apply.Applier, tables ...*nft.Table) apply.Stats {
	t.Helper()
	st, err := a.Apply(context.Background(), tables...)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	return st
}

// small builds a table with a base chain dispatching through a map to
// per-workload chains, a set and a rule using it.
func small() *nft.Table {
	t := nft.NewTable(nft.FamilyIP, "calico")
	m := &nft.Map{Name: "wl", Type: nft.TypeIfname, Elements: map[nft.Key]nft.Verdict{}}
	for _, wl := range []string{"cali1", "cali2"} {
		mustPut(t.PutChain(&nft.Chain{Name: "wl-" + wl, Rules: []nft.Rule{
			nft.NewRule(nft.SAddrInSet(nft.IPv4, "allowed"), nft.Accept()),
			nft.NewRule(nft.Drop()),
		}}))
		m.Elements[nft.IfnameKey(wl)] = nft.Goto("wl-" + wl)
	}
	mustPut(t.PutMap(m))
	mustPut(t.PutSet(&nft.Set{Name: "allowed", Type: nft.TypeIPv4Addr, Interval: true,
		Elements: []nft.Element{nft.PrefixElem(netip.MustParsePrefix("10.65.0.0/16"))}}))
	mustPut(t.PutChain(&nft.Chain{Name: "forward", Base: &nft.BaseChain{Type: nft.ChainFilter, Hook: nft.HookForward},
		Rules: []nft.Rule{nft.NewRule(nft.IIFNameVmap("wl"))}}))
	return t
}

func mustPut(err error) {
	if err != nil {
		panic(err)
	}
}

func opKinds(b *nft.Batch) string {
	var out []string
	for _, op := range b.Ops {
		s := op.Kind.String() + " " + op.Name
		out = append(out, strings.TrimSpace(s))
	}
	return strings.Join(out, "; ")
}

// TestPartialSyncs: after the first (full) sync, each change costs what
// changed: a rewritten chain is a flush and its rules, a set change its
// element delta, a deleted chain a flush and a delete; nothing changed is
// no batch at all.
func TestPartialSyncs(t *testing.T) {
	b := fake.New()
	tb := small()
	a := newApplier(t, b, ipCalico)
	if st := applyOK(t, a, tb); !st.FullSync || st.Ops != 13 {
		t.Fatalf("first sync: %+v", st)
	}
	for _, step := range []struct {
		name   string
		change func()
		want   string
	}{
		{"nothing", func() {}, ""},
		{"rules", func() {
			mustPut(tb.PutChain(&nft.Chain{Name: "wl-cali1", Rules: []nft.Rule{nft.NewRule(nft.Accept())}}))
		}, "flush chain wl-cali1; add rule wl-cali1"},
		{"same rules, new chain object", func() {
			mustPut(tb.PutChain(&nft.Chain{Name: "wl-cali1", Rules: []nft.Rule{nft.NewRule(nft.Accept())}}))
		}, ""},
		{"set elements", func() {
			mustPut(tb.UpdateSet("allowed", []nft.Element{nft.AddrElem(netip.MustParseAddr("198.18.0.1"))}, nil))
		}, "add element allowed"},
		{"map element", func() {
			mustPut(tb.UpdateMap("wl", map[nft.Key]nft.Verdict{nft.IfnameKey("cali1"): nft.Drop()}, []nft.Key{nft.IfnameKey("cali2")}))
		}, "delete element wl; add element wl"},
		{"delete chain", func() { tb.DeleteChain("wl-cali2") }, "flush chain wl-cali2; delete chain wl-cali2"},
		{"policy", func() {
			mustPut(tb.PutChain(&nft.Chain{Name: "forward", Base: &nft.BaseChain{Type: nft.ChainFilter, Hook: nft.HookForward, Policy: nft.PolicyDrop},
				Rules: tb.Chain("forward").Rules}))
		}, "add chain forward"},
		{"hook", func() {
			mustPut(tb.PutChain(&nft.Chain{Name: "forward", Base: &nft.BaseChain{Type: nft.ChainFilter, Hook: nft.HookForward, Priority: 10},
				Rules: tb.Chain("forward").Rules}))
		}, "flush chain forward; delete chain forward; add chain forward; add rule forward"},
	} {
		before := b.Commits()
		step.change()
		st := applyOK(t, a, tb)
		if st.FullSync {
			t.Errorf("%s: a full sync", step.name)
		}
		got := ""
		if b.Commits() > before {
			got = opKinds(b.LastBatch())
		}
		if got != step.want {
			t.Errorf("%s: batch %q, want %q", step.name, got, step.want)
		}
	}
	if got, want := b.Dump(), nft.Dump(tb); got != want {
		t.Errorf("fake holds:\n%s\nwant:\n%s", got, want)
	}
}

// TestSetTypeChange: a set whose type changes is deleted and recreated in
// the batch, and the chains that use it are flushed before and refilled
// after.
func TestSetTypeChange(t *testing.T) {
	b := fake.New()
	tb := small()
	a := newApplier(t, b, ipCalico)
	applyOK(t, a, tb)
	mustPut(tb.PutSet(&nft.Set{Name: "allowed", Type: nft.TypeIPv4Addr, Elements: []nft.Element{nft.AddrElem(netip.MustParseAddr("10.0.0.1"))}}))
	applyOK(t, a, tb)
	want := "flush chain wl-cali1; flush chain wl-cali2; delete set allowed; add set allowed; add element allowed; " +
		"add rule wl-cali1; add rule wl-cali1; add rule wl-cali2; add rule wl-cali2"
	if got := opKinds(b.LastBatch()); got != want {
		t.Errorf("batch %q\nwant %q", got, want)
	}
}

// TestFullSyncRepairsDrift: rules, elements and objects changed behind the
// Applier's back are repaired by the next full sync, which touches only
// what differs; a deleted table is recreated.
func TestFullSyncRepairsDrift(t *testing.T) {
	b := fake.New()
	tb := small()
	a := newApplier(t, b, ipCalico)
	applyOK(t, a, tb)
	want := b.Dump()
	b.Tamper(ipCalico, func(cur *nft.Table) *nft.Table {
		c := cur.Chain("wl-cali1")
		cur.InsertChain(&nft.Chain{Name: c.Name, Rules: c.Rules[1:]})
		cur.InsertChain(&nft.Chain{Name: "intruder", Rules: []nft.Rule{nft.NewRule(nft.Accept())}})
		s := cur.Set("allowed")
		cur.InsertSet(&nft.Set{Name: s.Name, Type: s.Type, Interval: true})
		return cur
	})
	if st := applyOK(t, a, tb); st.Ops != 0 {
		t.Errorf("a partial sync does not see drift, but it committed %d operations", st.Ops)
	}
	a.RequestFullSync()
	st := applyOK(t, a, tb)
	if wantOps := "add element allowed; flush chain intruder; flush chain wl-cali1; add rule wl-cali1; add rule wl-cali1; delete chain intruder"; opKinds(b.LastBatch()) != wantOps {
		t.Errorf("repair batch %q, want %q", opKinds(b.LastBatch()), wantOps)
	}
	if !st.FullSync || b.Dump() != want {
		t.Errorf("after repair (%+v):\n%s\nwant:\n%s", st, b.Dump(), want)
	}
	b.Tamper(ipCalico, func(*nft.Table) *nft.Table { return nil })
	a.RequestFullSync()
	applyOK(t, a, tb)
	if b.Dump() != want {
		t.Errorf("table not recreated:\n%s", b.Dump())
	}
}

// TestRestart: a new Applier over a backend that already holds the tables
// changes only what differs and never deletes or flushes a chain it keeps.
func TestRestart(t *testing.T) {
	b := fake.New()
	applyOK(t, newApplier(t, b, ipCalico), small())
	tb := small()
	if st := applyOK(t, newApplier(t, b, ipCalico), tb); st.Ops != 0 || !st.FullSync {
		t.Errorf("restart with the same tables: %+v", st)
	}
	tb = small()
	mustPut(tb.PutChain(&nft.Chain{Name: "wl-cali2", Rules: []nft.Rule{nft.NewRule(nft.Counter(), nft.Drop())}}))
	applyOK(t, newApplier(t, b, ipCalico), tb)
	if got, want := opKinds(b.LastBatch()), "flush chain wl-cali2; add rule wl-cali2"; got != want {
		t.Errorf("restart batch %q, want %q", got, want)
	}
}

// TestOwnedTables: the Applier creates and deletes the tables it owns, in
// one batch, and refuses tables it does not own.
func TestOwnedTables(t *testing.T) {
	b := fake.New()
	ip6 := nft.TableID{Family: nft.FamilyIP6, Name: "calico"}
	a := newApplier(t, b, ipCalico, ip6)
	t6 := nft.NewTable(nft.FamilyIP6, "calico")
	mustPut(t6.PutChain(&nft.Chain{Name: "c"}))
	applyOK(t, a, small(), t6)
	if got := len(b.Tables()); got != 2 {
		t.Fatalf("%d tables", got)
	}
	applyOK(t, a, t6)
	if got := opKinds(b.LastBatch()); got != "delete table" || len(b.Tables()) != 1 {
		t.Errorf("batch %q, tables %v", got, b.Tables())
	}
	if _, err := a.Apply(context.Background(), nft.NewTable(nft.FamilyInet, "other")); err == nil {
		t.Error("applied a table it does not own")
	}
}

// TestRefusedBatch: a batch the backend refuses is reported object by
// object; nothing of it is applied; the Applier still knows what the
// backend holds, so replacing the refused object and applying again is a
// partial sync that also carries the changes of the refused batch.
func TestRefusedBatch(t *testing.T) {
	b := fake.New()
	tb := small()
	a := newApplier(t, b, ipCalico)
	applyOK(t, a, tb)
	before := b.Dump()
	refused := errors.New("refused")
	b.Refuse(func(op *nft.Op) error {
		if op.Kind == nft.OpAddRule && op.Name == "wl-cali2" && op.Index == 1 {
			return refused
		}
		return nil
	})
	mustPut(tb.UpdateSet("allowed", []nft.Element{nft.AddrElem(netip.MustParseAddr("198.18.0.9"))}, nil))
	mustPut(tb.PutChain(&nft.Chain{Name: "wl-cali2", Rules: []nft.Rule{nft.NewRule(nft.Accept()), nft.NewRule(nft.Log("x"), nft.Drop())}}))
	_, err := a.Apply(context.Background(), tb)
	var ce *nft.CommitError
	if !errors.As(err, &ce) || len(ce.Objects) != 1 || !errors.Is(err, refused) {
		t.Fatalf("Apply = %v", err)
	}
	o := ce.Objects[0].Object
	if o.Kind != nft.ObjectRule || o.Name != "wl-cali2" || o.Rule != 1 || o.Table != ipCalico || o.Owner().Kind != nft.ObjectChain {
		t.Errorf("refused object %+v", o)
	}
	if b.Dump() != before {
		t.Error("a refused batch changed the backend")
	}
	mustPut(tb.PutChain(&nft.Chain{Name: "wl-cali2", Rules: []nft.Rule{nft.NewRule(nft.Drop())}}))
	st := applyOK(t, a, tb)
	if st.FullSync || st.ElementsAdded != 1 || st.ChainsRewritten != 1 {
		t.Errorf("retry: %+v", st)
	}
	if got, want := b.Dump(), nft.Dump(tb); got != want {
		t.Errorf("after retry:\n%s\nwant:\n%s", got, want)
	}
}

// TestInvalidDesired: what the desired tables get wrong is refused before
// anything is sent, naming the objects at fault.
func TestInvalidDesired(t *testing.T) {
	b := fake.New()
	tb := small()
	a := newApplier(t, b, ipCalico)
	applyOK(t, a, tb)
	tb.DeleteSet("allowed")
	mustPut(tb.PutChain(&nft.Chain{Name: "x", Rules: []nft.Rule{nft.NewRule(nft.Jump("nowhere"))}}))
	commits := b.Commits()
	_, err := a.Apply(context.Background(), tb)
	var ce *nft.CommitError
	if !errors.As(err, &ce) || ce.Kernel {
		t.Fatalf("Apply = %v", err)
	}
	var got []string
	for _, o := range ce.Objects {
		got = append(got, o.Object.String())
	}
	want := "chain wl-cali1 in table ip calico, chain wl-cali2 in table ip calico, rule 0 of chain x in table ip calico"
	if strings.Join(got, ", ") != want {
		t.Errorf("objects %v, want %s", got, want)
	}
	if b.Commits() != commits {
		t.Error("an invalid batch was committed")
	}
}

// TestFakeRefusesLikeTheKernel: jump loops, over-long names, deleting what
// is in use and elements of the wrong length are refused with the
// kernel's errors, attributed to the operation at fault.
func TestFakeRefusesLikeTheKernel(t *testing.T) {
	b := fake.New()
	tb := nft.NewTable(nft.FamilyIP, "calico")
	mustPut(tb.PutChain(&nft.Chain{Name: "a", Rules: []nft.Rule{nft.NewRule(nft.Jump("b"))}}))
	mustPut(tb.PutChain(&nft.Chain{Name: "b", Rules: []nft.Rule{nft.NewRule(nft.Accept()), nft.NewRule(nft.Jump("a"))}}))
	_, err := newApplier(t, b, ipCalico).Apply(context.Background(), tb)
	var ce *nft.CommitError
	if !errors.As(err, &ce) || !errors.Is(ce.Objects[0].Err, syscall.EMLINK) || ce.Objects[0].Object.Name != "b" || ce.Objects[0].Object.Rule != 1 {
		t.Errorf("loop: %v", err)
	}
	id := nft.TableID{Family: nft.FamilyIP, Name: "t"}
	long := strings.Repeat("c", 256)
	for _, tc := range []struct {
		ops  []nft.Op
		want syscall.Errno
		at   int
	}{
		{[]nft.Op{{Kind: nft.OpAddTable, Table: id}, {Kind: nft.OpAddChain, Table: id, Name: long}}, syscall.ERANGE, 1},
		{[]nft.Op{{Kind: nft.OpAddTable, Table: id}, {Kind: nft.OpAddSet, Table: id, Name: "s", Type: nft.TypeIPv4Addr},
			{Kind: nft.OpAddElements, Table: id, Name: "s", Type: nft.TypeIPv4Addr, Elements: []nft.Element{nft.PortElem(1)}}}, syscall.EINVAL, 2},
		{[]nft.Op{{Kind: nft.OpAddTable, Table: id}, {Kind: nft.OpDeleteChain, Table: id, Name: "none"}}, syscall.ENOENT, 1},
	} {
		_, err := b.Commit(context.Background(), &nft.Batch{Ops: tc.ops})
		if !errors.As(err, &ce) || !errors.Is(ce.Objects[0].Err, tc.want) || ce.Objects[0].Object != tc.ops[tc.at].Object() {
			t.Errorf("%s: %v, want %v at op %d", tc.ops[tc.at].Kind, err, tc.want, tc.at)
		}
	}
	if len(b.Tables()) != 0 {
		t.Errorf("refused batches left tables: %v", b.Tables())
	}
}

// TestRefusedFullSync: when a full sync's batch is refused, the Applier
// keeps what it read, so the retry compares with it without reading the
// backend again.
func TestRefusedFullSync(t *testing.T) {
	b := fake.New()
	applyOK(t, newApplier(t, b, ipCalico), small()) // what a previous run left
	tb := small()
	mustPut(tb.PutChain(&nft.Chain{Name: "wl-cali1", Rules: []nft.Rule{nft.NewRule(nft.Counter(), nft.Drop())}}))
	mustPut(tb.PutChain(&nft.Chain{Name: "new", Rules: []nft.Rule{nft.NewRule(nft.Accept())}}))
	b.Refuse(func(op *nft.Op) error {
		if op.Name == "new" && op.Kind == nft.OpAddChain {
			return errors.New("no")
		}
		return nil
	})
	a := newApplier(t, b, ipCalico)
	if _, err := a.Apply(context.Background(), tb); err == nil {
		t.Fatal("refused batch succeeded")
	}
	if a.FullSyncPending() {
		t.Error("a refused batch should not need another read")
	}
	b.Refuse(nil)
	st := applyOK(t, a, tb)
	if st.FullSync || st.ChainsAdded != 1 || st.ChainsRewritten != 1 || st.Ops != 4 {
		t.Errorf("retry: %+v", st)
	}
	if got, want := b.Dump(), nft.Dump(tb); got != want {
		t.Errorf("after retry:\n%s\nwant:\n%s", got, want)
	}
}

// TestNewTableObject: a desired table rebuilt from scratch (another Table,
// other objects, same content) is compared object by object with what the
// Applier wrote, without reading the backend: nothing to do.
func TestNewTableObject(t *testing.T) {
	b := fake.New()
	a := newApplier(t, b, ipCalico)
	applyOK(t, a, small())
	commits := b.Commits()
	if st := applyOK(t, a, small()); st.FullSync || st.Ops != 0 || b.Commits() != commits {
		t.Errorf("same content in a new Table: %+v", st)
	}
	tb := small()
	tb.DeleteChain("wl-cali2")
	mustPut(tb.UpdateMap("wl", nil, []nft.Key{nft.IfnameKey("cali2")}))
	applyOK(t, a, small())
	if st := applyOK(t, a, tb); st.ChainsDeleted != 1 || st.ElementsRemoved != 1 || st.Ops != 3 {
		t.Errorf("new Table without a chain: %+v", st)
	}
}

// TestMapElementToMissingChain: a map element added to a kept map that targets a chain the
// table lacks, or a base chain, is refused before anything is sent, blaming the map; the map's
// other elements are not re-checked, but deleting a chain they still target is refused too.
func TestMapElementToMissingChain(t *testing.T) {
	b := fake.New()
	a := newApplier(t, b, ipCalico)
	tb := small()
	applyOK(t, a, tb)
	commits := b.Commits()
	for _, target := range []string{"nowhere", "forward"} {
		mustPut(tb.UpdateMap("wl", map[nft.Key]nft.Verdict{nft.IfnameKey("cali3"): nft.Goto(target)}, nil))
		_, err := a.Apply(context.Background(), tb)
		var ce *nft.CommitError
		if !errors.As(err, &ce) || len(ce.Objects) != 1 || ce.Objects[0].Object.Kind != nft.ObjectMap || b.Commits() != commits {
			t.Errorf("element to %s: %v", target, err)
		}
		mustPut(tb.UpdateMap("wl", nil, []nft.Key{nft.IfnameKey("cali3")}))
	}
	tb.DeleteChain("wl-cali1")
	if _, err := a.Apply(context.Background(), tb); err == nil || b.Commits() != commits {
		t.Errorf("deleting a chain a kept element targets: %v", err)
	}
}
