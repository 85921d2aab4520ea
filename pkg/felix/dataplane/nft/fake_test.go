package nft

import (
	"errors"
	"testing"
)

// TestFakeRefusesWhatTheKernelRefuses: each transaction fails as a whole
// and leaves the table as it was.
func TestFakeRefusesWhatTheKernelRefuses(t *testing.T) {
	rule := func(chain string, x ...Expr) Op { return Op{Kind: OpAddRule, Name: chain, Rule: NewRule(x...)} }
	for _, tc := range []struct {
		name string
		ops  []Op
		want error
	}{
		{"jump to a missing chain", []Op{rule("c", Jump("nope"))}, ErrFakeNoEntry},
		{"goto a base chain", []Op{rule("c", Goto("base"))}, ErrFakeInvalid},
		{"lookup in a missing set", []Op{rule("c", SAddrInSet(IPv4, "nope"))}, ErrFakeNoEntry},
		{"lookup with the wrong type", []Op{rule("c", SAddrInSet(IPv6, "s"))}, ErrFakeInvalid},
		{"vmap on a missing map", []Op{rule("c", IIFNameVmap("nope"))}, ErrFakeNoEntry},
		{"delete a chain in use", []Op{{Kind: OpDeleteChain, Name: "target"}}, ErrFakeBusy},
		{"delete a set in use", []Op{{Kind: OpDeleteSet, Name: "s"}}, ErrFakeBusy},
		{"delete a map in use", []Op{{Kind: OpDeleteMap, Name: "m"}}, ErrFakeBusy},
		{"delete a chain a map element uses", []Op{{Kind: OpFlushChain, Name: "c"}, {Kind: OpDeleteChain, Name: "target"}}, ErrFakeBusy},
		{"map element to a missing chain", []Op{{Kind: OpAddMapElements, Name: "m",
			MapElems: []mapElement{{text: `"eth9"`, key: ifnameKey("eth9"), verdict: Goto("nope")}}}}, ErrFakeNoEntry},
		{"element of the wrong type", []Op{{Kind: OpAddElements, Name: "s", Interval: true,
			Elements: []element{{text: "fd5c::1"}}}}, ErrFakeInvalid},
		{"overlapping intervals", []Op{{Kind: OpAddElements, Name: "s", Interval: true,
			Elements: mustElems(t, TypeIPv4Addr, true, "10.65.0.0/24")}}, ErrFakeExists},
		{"delete a missing element", []Op{{Kind: OpDeleteElements, Name: "s", Interval: true,
			Elements: mustElems(t, TypeIPv4Addr, true, "10.66.0.1")}}, ErrFakeNoEntry},
		{"flush a missing chain", []Op{{Kind: OpFlushChain, Name: "nope"}}, ErrFakeNoEntry},
		{"set named like a map", []Op{{Kind: OpAddSet, Name: "m", Type: TypeIPv4Addr}}, ErrFakeExists},
		{"chain re-added with another hook", []Op{{Kind: OpAddChain, Name: "c", Base: &BaseChain{Type: TypeFilter, Hook: HookInput}}}, ErrFakeExists},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := fakeFixture(t)
			before := f.DumpWithHashes()
			ops := append([]Op{{Kind: OpAddChain, Name: "scratch"}}, tc.ops...)
			err := f.Apply(ops...)
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
			if f.DumpWithHashes() != before {
				t.Error("a failed transaction changed the table")
			}
		})
	}
}

// fakeFixture: chain c uses set s, map m and chain target; m sends eth0
// to target.
func fakeFixture(t *testing.T) *Fake {
	t.Helper()
	f := NewFake()
	mustFake(t, f,
		Op{Kind: OpAddTable},
		Op{Kind: OpAddSet, Name: "s", Type: TypeIPv4Addr, Interval: true},
		Op{Kind: OpAddElements, Name: "s", Interval: true, Elements: mustElems(t, TypeIPv4Addr, true, "10.65.0.5")},
		Op{Kind: OpAddMap, Name: "m", Type: TypeIfname},
		Op{Kind: OpAddChain, Name: "target"},
		Op{Kind: OpAddChain, Name: "base", Base: &BaseChain{Type: TypeFilter, Hook: HookForward}},
		Op{Kind: OpAddMapElements, Name: "m", MapElems: []mapElement{{text: `"eth0"`, key: ifnameKey("eth0"), verdict: Goto("target")}}},
		Op{Kind: OpAddChain, Name: "c"},
		Op{Kind: OpAddRule, Name: "c", Rule: NewRule(SAddrInSet(IPv4, "s"), Jump("target"))},
		Op{Kind: OpAddRule, Name: "c", Rule: NewRule(IIFNameVmap("m"))},
	)
	return f
}

// TestFakeReleasesReferences: once the users are gone, deletion works in
// the same transaction.
func TestFakeReleasesReferences(t *testing.T) {
	f := fakeFixture(t)
	mustFake(t, f,
		Op{Kind: OpFlushChain, Name: "c"},
		Op{Kind: OpDeleteMap, Name: "m"},
		Op{Kind: OpDeleteSet, Name: "s"},
		Op{Kind: OpDeleteChain, Name: "target"},
	)
	want := dedent(`
		table inet calico {
			chain base {
				type filter hook forward priority filter; policy accept;
			}
			chain c {
			}
		}
	`)
	if got := f.Dump(); got != want {
		t.Errorf("dump:\n%s\nwant:\n%s", got, want)
	}
	f.DeleteTable()
	if f.Dump() != "" {
		t.Error("deleted table still dumps")
	}
	if err := f.Apply(Op{Kind: OpAddChain, Name: "x"}); !errors.Is(err, ErrFakeNoEntry) {
		t.Errorf("adding a chain to a missing table: %v", err)
	}
}
