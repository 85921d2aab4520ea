package nft

import (
	"context"
	"testing"
	"time"
)

// commitKind is one small transaction committed against the loaded big
// ruleset, and the transaction that undoes it.
type commitKind struct {
	name     string
	do, undo []Op
}

// commitKinds are the building blocks of a partial sync, one at a time, to
// see which of them make the kernel re-validate the table (any rule with an
// expression that has a validate hook, and any verdict map element that
// jumps or goes to a chain, do; set elements and deletions do not).
func commitKinds(tb testing.TB) []commitKind {
	elem := func(t, s string) element {
		st, _ := parseSetType(t)
		e, err := parseElement(st, t == TypeIPv4Addr, s)
		if err != nil {
			tb.Fatal(err)
		}
		return e
	}
	mapElem := func(iface string, v Verdict) mapElement {
		e := elem(TypeIfname, iface)
		return mapElement{text: e.text, key: e.key, verdict: v}
	}
	chain := func(rules ...Rule) []Op {
		ops := []Op{{Kind: OpAddChain, Name: "x"}}
		for _, r := range rules {
			ops = append(ops, Op{Kind: OpAddRule, Name: "x", Rule: r, Hash: "AAAAAAAAAAAAAAAA"})
		}
		return ops
	}
	delChain := []Op{{Kind: OpFlushChain, Name: "x"}, {Kind: OpDeleteChain, Name: "x"}}
	setEl := []element{elem(TypeIPv4Addr, "10.99.0.1")}
	goX := []mapElement{mapElem("caliX", Goto("x"))}
	acc := []mapElement{mapElem("caliX", Accept())}
	return []commitKind{
		{"set-element", []Op{{Kind: OpAddElements, Name: "cali40s-0000", Interval: true, Elements: setEl}},
			[]Op{{Kind: OpDeleteElements, Name: "cali40s-0000", Interval: true, Elements: setEl}}},
		{"empty-chain", chain(), delChain},
		{"rule-counter", chain(NewRule(Counter())), delChain},
		{"rule-mark-cmp", chain(NewRule(MarkMatch(markAccept, markAccept), Counter())), delChain},
		{"rule-accept", chain(NewRule(Accept())), delChain},
		{"rule-set-mark", chain(NewRule(AndMark(^uint32(markPass)))), delChain},
		{"rule-jump", chain(NewRule(Jump("cali-pi-gnp/policy-0001"))), delChain},
		{"vmap-elem-accept", []Op{{Kind: OpAddMapElements, Name: "cali-to-wl-dispatch", MapElems: acc}},
			[]Op{{Kind: OpDeleteMapElements, Name: "cali-to-wl-dispatch", MapElems: acc}}},
		{"vmap-elem-goto", append(chain(), Op{Kind: OpAddMapElements, Name: "cali-to-wl-dispatch", MapElems: goX}),
			append([]Op{{Kind: OpDeleteMapElements, Name: "cali-to-wl-dispatch", MapElems: goX}}, delChain...)},
	}
}

// BenchmarkCommitKinds: the kernel's commit time of each commitKind on the
// loaded big ruleset (do-µs), and of its undo (undo-µs).
func BenchmarkCommitKinds(b *testing.B) {
	requireRoot(b)
	ns := newNetNS(b)
	a, k := ns.applier(b)
	ns.apply(b, a, bigHost(1000))
	kinds := append(commitKinds(b), endpointKinds(b, a.mirror)...)
	for _, kind := range kinds {
		b.Run(kind.name, func(b *testing.B) {
			var do, undo time.Duration
			n := 0
			for b.Loop() {
				do += timedCommit(b, k, kind.do)
				undo += timedCommit(b, k, kind.undo)
				n++
			}
			b.ReportMetric(float64(do.Microseconds())/float64(n), "do-µs")
			b.ReportMetric(float64(undo.Microseconds())/float64(n), "undo-µs")
		})
	}
}

func timedCommit(b *testing.B, k Kernel, ops []Op) time.Duration {
	start := time.Now()
	if _, err := k.Commit(context.Background(), &Transaction{Ops: ops}); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

// endpointKinds are the transactions that add one workload to the big
// ruleset (two chains and two dispatch map elements), with and without the
// map elements, planned from the mirror of the loaded ruleset.
func endpointKinds(b *testing.B, loaded *mirror) []commitKind {
	base := bigHost(1000)
	grown := bigHost(1000)
	addWorkload(grown, 1000)
	chainsOnly := bigHost(1000)
	addWorkload(chainsOnly, 1000)
	delete(chainsOnly.Maps["cali-from-wl-dispatch"].Elements, "cali00000001000")
	delete(chainsOnly.Maps["cali-to-wl-dispatch"].Elements, "cali00000001000")
	var out []commitKind
	for _, k := range []struct {
		name string
		rs   *Ruleset
	}{{"endpoint", grown}, {"endpoint-chains-only", chainsOnly}} {
		do, _, _, err := plan(loaded, k.rs, nil)
		if err != nil {
			b.Fatal(err)
		}
		undo, _, _, err := plan(loadedMirror(b, k.rs), base, nil)
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, commitKind{k.name, do.Ops, undo.Ops})
	}
	return out
}
