package kernel

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/calico-host/calico-host/internal/logtest"
	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/apply"
	"github.com/calico-host/calico-host/pkg/nft/internal/nstest"
)

// Nothing a test of this package creates may program the test process's own namespace.
func init() { RefuseOwnNamespace() }

func newBackend(t testing.TB, ns *nstest.NS) *Backend {
	t.Helper()
	k, err := New(Config{NetNS: ns.FD})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	return k
}

func newApplier(t testing.TB, k nft.Backend, tables ...*nft.Table) *apply.Applier {
	ids := make([]nft.TableID, len(tables))
	for i, tb := range tables {
		ids[i] = tb.ID()
	}
	return apply.New(k, apply.Options{Tables: ids, Log: logtest.Logger(t)})
}

func applyOK(t testing.TB, a *apply.Applier, tables ...*nft.Table) apply.Stats {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := a.Apply(ctx, tables...)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	return st
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestKernelSmoke(t *testing.T) {
	ns := nstest.New(t)
	k := newBackend(t, ns)
	tb := nft.NewTable(nft.FamilyIP, "calico")
	must(t, tb.PutSet(&nft.Set{Name: "allowed", Type: nft.TypeIPv4Addr, Interval: true,
		Elements: []nft.Element{nft.PrefixElem(netip.MustParsePrefix("10.65.0.0/16")), nft.AddrElem(netip.MustParseAddr("198.18.0.1"))}}))
	must(t, tb.PutChain(&nft.Chain{Name: "from-cali1", Rules: []nft.Rule{
		nft.NewRule(nft.SAddrInSet(nft.IPv4, "allowed"), nft.DPort(nft.ProtoTCP, nft.Port(80), nft.Port(443)), nft.Counter(), nft.Accept()),
		nft.NewRule(nft.Drop()).WithComment("default deny"),
	}}))
	must(t, tb.PutMap(&nft.Map{Name: "from-wl", Type: nft.TypeIfname, Elements: map[nft.Key]nft.Verdict{
		nft.IfnameKey("cali1"): nft.Goto("from-cali1"),
	}}))
	must(t, tb.PutChain(&nft.Chain{Name: "forward", Base: &nft.BaseChain{Type: nft.ChainFilter, Hook: nft.HookForward},
		Rules: []nft.Rule{
			nft.NewRule(nft.CTStateIn(nft.CTStateEstablished|nft.CTStateRelated), nft.Accept()),
			nft.NewRule(nft.IIFName("cali*"), nft.IIFNameVmap("from-wl")),
		}}))
	a := newApplier(t, k, tb)
	st := applyOK(t, a, tb)
	t.Logf("%+v", st)
	got, want := ns.List(t), nstest.Normalize(tb.Dump())
	if got != want {
		t.Errorf("nft list:\n%s\nwant:\n%s", got, want)
	}
	rd, err := k.Read(context.Background(), []nft.TableID{tb.ID()}, nft.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := nstest.Normalize(rd[0].Dump()); got != want {
		t.Errorf("read back:\n%s\nwant:\n%s", got, want)
	}
	a2 := newApplier(t, k, tb)
	if st := applyOK(t, a2, tb); st.Ops != 0 {
		t.Errorf("restart: %+v", st)
	}
}

var a4 = netip.MustParseAddr
var p4 = netip.MustParsePrefix
