package kernel

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/fake"
	"github.com/calico-host/calico-host/pkg/nft/internal/nstest"
)

// refusals renders a commit's outcome: the refused operations and errors.
func refusals(err error) string {
	var ce *nft.CommitError
	if !errors.As(err, &ce) {
		return fmt.Sprint(err)
	}
	var out []string
	for _, o := range ce.Objects {
		out = append(out, fmt.Sprintf("%s %s: %v", o.Op, o.Object, o.Err))
	}
	return strings.Join(out, "; ")
}

// TestFakeMatchesKernel commits the same refused batches to the kernel and
// to the fake: both refuse the same operations with the same errors.
func TestFakeMatchesKernel(t *testing.T) {
	id := nft.TableID{Family: nft.FamilyIP, Name: "t"}
	lookup := nft.NewRule(nft.SAddrInSet(nft.IPv4, "s"), nft.Accept())
	jump := nft.NewRule(nft.Jump("c"))
	back := nft.NewRule(nft.Jump("d"))
	toBase := nft.NewRule(nft.Jump("in"))
	dangling := nft.NewRule(nft.SAddrInSet(nft.IPv4, "nope"))
	wrongKey := nft.NewRule(nft.InSet("s", nft.FieldDPort(nft.ProtoTCP)))
	setup := []nft.Op{
		{Kind: nft.OpAddTable, Table: id},
		{Kind: nft.OpAddSet, Table: id, Name: "s", Type: nft.TypeIPv4Addr, Interval: true},
		{Kind: nft.OpAddElements, Table: id, Name: "s", Type: nft.TypeIPv4Addr, Interval: true,
			Elements: []nft.Element{nft.PrefixElem(netip.MustParsePrefix("10.0.0.0/8"))}},
		{Kind: nft.OpAddChain, Table: id, Name: "in", Base: &nft.BaseChain{Type: nft.ChainFilter, Hook: nft.HookInput}},
		{Kind: nft.OpAddChain, Table: id, Name: "c"},
		{Kind: nft.OpAddChain, Table: id, Name: "d"},
		{Kind: nft.OpAddRule, Table: id, Name: "c", Rule: &lookup},
		{Kind: nft.OpAddRule, Table: id, Name: "d", Rule: &jump},
		{Kind: nft.OpAddRule, Table: id, Name: "in", Rule: &back},
	}
	cases := map[string][]nft.Op{
		"dangling set": {{Kind: nft.OpAddRule, Table: id, Name: "c", Rule: &dangling}},
		"jump to base": {{Kind: nft.OpAddRule, Table: id, Name: "c", Rule: &toBase}},
		"loop":         {{Kind: nft.OpAddRule, Table: id, Name: "c", Rule: &back, Index: 1}, {Kind: nft.OpAddRule, Table: id, Name: "d", Rule: &lookup, Index: 1}},
		"set in use":   {{Kind: nft.OpDeleteSet, Table: id, Name: "s"}},
		"chain in use": {{Kind: nft.OpDeleteChain, Table: id, Name: "c"}},
		"no chain":     {{Kind: nft.OpFlushChain, Table: id, Name: "none"}},
		"no table":     {{Kind: nft.OpAddChain, Table: nft.TableID{Family: nft.FamilyIP, Name: "none"}, Name: "c"}},
		"long name":    {{Kind: nft.OpAddSet, Table: id, Name: strings.Repeat("s", 256), Type: nft.TypeIPv4Addr}},
		"overlap": {{Kind: nft.OpAddElements, Table: id, Name: "s", Type: nft.TypeIPv4Addr, Interval: true,
			Elements: []nft.Element{nft.PrefixElem(netip.MustParsePrefix("10.1.0.0/16"))}}},
		"missing element": {{Kind: nft.OpDeleteElements, Table: id, Name: "s", Type: nft.TypeIPv4Addr, Interval: true,
			Elements: []nft.Element{nft.AddrElem(netip.MustParseAddr("11.0.0.1"))}}},
		"other hook": {{Kind: nft.OpAddChain, Table: id, Name: "c", Base: &nft.BaseChain{Type: nft.ChainFilter, Hook: nft.HookOutput}}},
		"map element to a missing chain": {{Kind: nft.OpAddMap, Table: id, Name: "m", Type: nft.TypeIfname},
			{Kind: nft.OpAddMapElements, Table: id, Name: "m", Type: nft.TypeIfname,
				MapElements: []nft.MapElement{{Key: nft.IfnameKey("a"), Verdict: nft.Goto("none")}}}},
		"element of the wrong length": {{Kind: nft.OpAddElements, Table: id, Name: "s", Type: nft.TypeIPv4Addr, Interval: true,
			Elements: []nft.Element{nft.PortElem(1)}}},
	}
	// The kernel also accepts what the fake accepts: deleting a chain that
	// still has rules deletes them, and a lookup's key length is not
	// compared with the set's (the Applier refuses that before sending).
	accepted := map[string][]nft.Op{
		"delete a chain with rules": {{Kind: nft.OpDeleteChain, Table: id, Name: "in"}},
		"lookup with another key":   {{Kind: nft.OpAddRule, Table: id, Name: "c", Rule: &wrongKey}},
	}
	ns := nstest.New(t)
	k := newBackend(t, ns)
	f := fake.New()
	ctx := context.Background()
	for _, be := range []nft.Backend{k, f} {
		if _, err := be.Commit(ctx, &nft.Batch{Ops: setup}); err != nil {
			t.Fatal(err)
		}
	}
	for name, ops := range cases {
		_, kerr := k.Commit(ctx, &nft.Batch{Ops: ops})
		_, ferr := f.Commit(ctx, &nft.Batch{Ops: ops})
		if kr, fr := refusals(kerr), refusals(ferr); kr != fr || kr == "<nil>" {
			t.Errorf("%s:\n  kernel: %s\n  fake:   %s", name, kr, fr)
		}
	}
	for name, ops := range accepted {
		_, kerr := k.Commit(ctx, &nft.Batch{Ops: ops})
		_, ferr := f.Commit(ctx, &nft.Batch{Ops: ops})
		if kerr != nil || ferr != nil {
			t.Errorf("%s: kernel %v, fake %v, want both to accept", name, kerr, ferr)
		}
	}
	if got, want := ns.List(t), nstest.Normalize(f.Dump()); got != want {
		t.Errorf("kernel and fake differ:\n%s", lineDiff(got, want))
	}
}
