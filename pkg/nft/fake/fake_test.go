package fake

import (
	"context"
	"errors"
	"net/netip"
	"syscall"
	"testing"

	"github.com/calico-host/calico-host/pkg/nft"
)

var id = nft.TableID{Family: nft.FamilyIP, Name: "t"}

func commit(t *testing.T, b *Backend, ops ...nft.Op) *nft.CommitError {
	t.Helper()
	_, err := b.Commit(context.Background(), &nft.Batch{Ops: ops})
	if err == nil {
		return nil
	}
	var ce *nft.CommitError
	if !errors.As(err, &ce) {
		t.Fatalf("commit: %v", err)
	}
	return ce
}

// TestRefusals: what the kernel refuses, the fake refuses, with the
// kernel's error, attributed to the operation; the batch is not applied.
func TestRefusals(t *testing.T) {
	b := New()
	lookup := nft.NewRule(nft.SAddrInSet(nft.IPv4, "s"), nft.Accept())
	jump := nft.NewRule(nft.Jump("c"))
	setup := []nft.Op{
		{Kind: nft.OpAddTable, Table: id},
		{Kind: nft.OpAddSet, Table: id, Name: "s", Type: nft.TypeIPv4Addr, Interval: true},
		{Kind: nft.OpAddElements, Table: id, Name: "s", Type: nft.TypeIPv4Addr, Interval: true,
			Elements: []nft.Element{nft.PrefixElem(netip.MustParsePrefix("10.0.0.0/8"))}},
		{Kind: nft.OpAddChain, Table: id, Name: "c"},
		{Kind: nft.OpAddChain, Table: id, Name: "d"},
		{Kind: nft.OpAddRule, Table: id, Name: "c", Rule: &lookup},
		{Kind: nft.OpAddRule, Table: id, Name: "d", Rule: &jump},
	}
	if ce := commit(t, b, setup...); ce != nil {
		t.Fatal(ce)
	}
	before := b.Dump()
	dangling := nft.NewRule(nft.SAddrInSet(nft.IPv4, "nope"))
	for _, tc := range []struct {
		name string
		op   nft.Op
		want syscall.Errno
	}{
		{"dangling set", nft.Op{Kind: nft.OpAddRule, Table: id, Name: "c", Rule: &dangling}, syscall.ENOENT},
		{"set in use", nft.Op{Kind: nft.OpDeleteSet, Table: id, Name: "s"}, syscall.EBUSY},
		{"chain in use", nft.Op{Kind: nft.OpDeleteChain, Table: id, Name: "c"}, syscall.EBUSY},
		{"overlap", nft.Op{Kind: nft.OpAddElements, Table: id, Name: "s", Type: nft.TypeIPv4Addr, Interval: true,
			Elements: []nft.Element{nft.PrefixElem(netip.MustParsePrefix("10.1.0.0/16"))}}, syscall.EEXIST},
		{"missing element", nft.Op{Kind: nft.OpDeleteElements, Table: id, Name: "s", Type: nft.TypeIPv4Addr, Interval: true,
			Elements: []nft.Element{nft.AddrElem(netip.MustParseAddr("11.0.0.1"))}}, syscall.ENOENT},
		{"other hook", nft.Op{Kind: nft.OpAddChain, Table: id, Name: "c", Base: &nft.BaseChain{Type: nft.ChainFilter, Hook: nft.HookInput}}, syscall.EOPNOTSUPP},
	} {
		ok := nft.Op{Kind: nft.OpAddChain, Table: id, Name: "fresh"}
		ce := commit(t, b, ok, tc.op)
		if ce == nil || len(ce.Objects) != 1 || !errors.Is(ce.Objects[0].Err, tc.want) || ce.Objects[0].Object != tc.op.Object() {
			t.Errorf("%s: %v, want %v", tc.name, ce, tc.want)
		}
	}
	if b.Dump() != before {
		t.Errorf("refused batches changed the fake:\n%s", b.Dump())
	}
}

// TestTamperAndRead: what Tamper stores reads back.
func TestTamperAndRead(t *testing.T) {
	b := New()
	b.Tamper(id, func(cur *nft.Table) *nft.Table {
		if cur != nil {
			t.Error("table exists")
		}
		tb := nft.NewTable(id.Family, id.Name)
		tb.InsertChain(&nft.Chain{Name: "x", Rules: []nft.Rule{nft.NewRule(nft.Accept())}})
		return tb
	})
	got, err := b.Read(context.Background(), []nft.TableID{id, {Family: nft.FamilyIP6, Name: "t"}}, nft.ReadOptions{})
	if err != nil || len(got) != 1 || got[0].Chain("x") == nil {
		t.Fatalf("read %v %v", got, err)
	}
}
