package kernel

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/internal/nstest"
)

func commitErr(t *testing.T, err error) *nft.CommitError {
	t.Helper()
	var ce *nft.CommitError
	if !errors.As(err, &ce) {
		t.Fatalf("got %v, want a *nft.CommitError", err)
	}
	return ce
}

// TestKernelAttributionLoop: the kernel refuses a rule that closes a jump
// loop (EMLINK: it finds loops as chains nested too deep); the error names
// that rule first (every later rule is refused too, as the kernel validates
// the whole table for each one), nothing of the batch is applied, and
// once the caller replaces the chain the Applier's next (partial) sync
// applies the rest.
func TestKernelAttributionLoop(t *testing.T) {
	ns := nstest.New(t)
	k := newBackend(t, ns)
	tb := nft.NewTable(nft.FamilyIP, "calico")
	must(t, tb.PutChain(&nft.Chain{Name: "input", Base: &nft.BaseChain{Type: nft.ChainFilter, Hook: nft.HookInput},
		Rules: []nft.Rule{nft.NewRule(nft.Jump("a"))}}))
	must(t, tb.PutChain(&nft.Chain{Name: "a", Rules: []nft.Rule{nft.NewRule(nft.Counter())}}))
	must(t, tb.PutChain(&nft.Chain{Name: "b", Rules: []nft.Rule{nft.NewRule(nft.Accept())}}))
	a := newApplier(t, k, tb)
	applyOK(t, a, tb)
	before := ns.List(t)

	must(t, tb.PutChain(&nft.Chain{Name: "a", Rules: []nft.Rule{nft.NewRule(nft.Counter()), nft.NewRule(nft.Jump("b"))}}))
	must(t, tb.PutChain(&nft.Chain{Name: "b", Rules: []nft.Rule{nft.NewRule(nft.Accept()), nft.NewRule(nft.Jump("a"))}}))
	must(t, tb.PutChain(&nft.Chain{Name: "c", Rules: []nft.Rule{nft.NewRule(nft.Drop())}}))
	_, err := a.Apply(context.Background(), tb)
	ce := commitErr(t, err)
	t.Logf("%v", ce)
	first := ce.Objects[0]
	if !ce.Kernel || !errors.Is(first.Err, syscall.EMLINK) || first.Object.Kind != nft.ObjectRule || first.Object.Name != "b" || first.Object.Rule != 1 {
		t.Errorf("first refusal %v, want EMLINK for rule 1 of chain b", first)
	}
	if got := ns.List(t); got != before {
		t.Errorf("a refused batch changed the kernel:\n%s", got)
	}
	must(t, tb.PutChain(&nft.Chain{Name: "b", Rules: []nft.Rule{nft.NewRule(nft.Accept())}}))
	// b is back to what the kernel holds: only a is rewritten and c added.
	if st := applyOK(t, a, tb); st.FullSync || st.ChainsAdded != 1 || st.ChainsRewritten != 1 {
		t.Errorf("retry: %+v", st)
	}
	if got, want := ns.List(t), nstest.Normalize(tb.Dump()); got != want {
		t.Errorf("after retry:\n%s\nwant:\n%s", got, want)
	}
}

// TestKernelAttributionObjects commits hand-made batches the kernel
// refuses (an element of the wrong length, a chain name over the kernel's
// limit, a rule in a chain that does not exist) and checks each error names
// the operation, the object and, for elements, the element.
func TestKernelAttributionObjects(t *testing.T) {
	ns := nstest.New(t)
	k := newBackend(t, ns)
	id := nft.TableID{Family: nft.FamilyIP, Name: "calico"}
	setup := &nft.Batch{Ops: []nft.Op{
		{Kind: nft.OpAddTable, Table: id},
		{Kind: nft.OpAddSet, Table: id, Name: "s", Type: nft.TypeIPv4Addr, Interval: true},
		{Kind: nft.OpAddChain, Table: id, Name: "c"},
	}}
	if _, err := k.Commit(context.Background(), setup); err != nil {
		t.Fatal(err)
	}
	before := ns.List(t)
	good := nft.AddrElem(a4("10.0.0.1"))
	wrong := nft.PortElem(80) // two bytes in a set of IPv4 addresses
	rule := nft.NewRule(nft.Accept())
	batch := &nft.Batch{Ops: []nft.Op{
		{Kind: nft.OpAddElements, Table: id, Name: "s", Type: nft.TypeIPv4Addr, Interval: true, Elements: []nft.Element{good}},
		{Kind: nft.OpAddChain, Table: id, Name: strings.Repeat("x", 300)},
		{Kind: nft.OpAddRule, Table: id, Name: "c", Rule: &rule},
		{Kind: nft.OpAddElements, Table: id, Name: "s", Type: nft.TypeIPv4Addr, Elements: []nft.Element{good, wrong}},
		{Kind: nft.OpAddRule, Table: id, Name: "nochain", Rule: &rule, Index: 3},
	}}
	_, err := k.Commit(context.Background(), batch)
	ce := commitErr(t, err)
	t.Logf("%v", ce)
	want := []struct {
		op    int
		errno syscall.Errno
	}{{1, syscall.ERANGE}, {3, syscall.EINVAL}, {4, syscall.ENOENT}}
	if len(ce.Objects) != len(want) {
		t.Fatalf("%d refusals, want %d: %v", len(ce.Objects), len(want), ce)
	}
	for i, w := range want {
		o := ce.Objects[i]
		if o.Object != batch.Ops[w.op].Object() || !errors.Is(o.Err, w.errno) {
			t.Errorf("refusal %d: %v, want %v for %v", i, o, w.errno, batch.Ops[w.op].Object())
		}
	}
	if d := ce.Objects[1].Detail; !strings.Contains(d, "element") {
		t.Errorf("the wrong element is not named: %q", d)
	}
	if got := ns.List(t); got != before {
		t.Errorf("a refused batch changed the kernel:\n%s", got)
	}
}
