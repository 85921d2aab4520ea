package kernel

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/apply"
	"github.com/calico-host/calico-host/pkg/nft/internal/nfttest"
	"github.com/calico-host/calico-host/pkg/nft/internal/nstest"
)

// capture is a backend that holds nothing and keeps the last batch.
type capture struct{ last *nft.Batch }

func (c *capture) Read(context.Context, []nft.TableID, nft.ReadOptions) ([]*nft.Table, error) {
	return nil, nil
}
func (c *capture) Generation(context.Context) (uint32, error) { return 0, nil }
func (c *capture) Commit(_ context.Context, b *nft.Batch) (nft.CommitInfo, error) {
	c.last = b
	return nft.CommitInfo{}, nil
}

func planFull(b testing.TB, tb *nft.Table) *nft.Batch {
	c := &capture{}
	a := apply.New(c, apply.Options{Tables: []nft.TableID{tb.ID()}, Log: zerolog.Nop()})
	if _, err := a.Apply(context.Background(), tb); err != nil {
		b.Fatal(err)
	}
	return c.last
}

// BenchmarkPlan is a full sync's planning of a felix-scale ruleset (2,000
// chains of 10 rules, 1,000 sets of 10-1,000 elements, a 1,000-key map)
// against an empty backend.
func BenchmarkPlan(b *testing.B) {
	tb := nfttest.Felix(nfttest.FelixScale)
	b.ReportAllocs()
	for b.Loop() {
		planFull(b, tb)
	}
}

// BenchmarkEncode is the netlink encoding of that full sync's batch.
func BenchmarkEncode(b *testing.B) {
	batch := planFull(b, nfttest.Felix(nfttest.FelixScale))
	b.ReportAllocs()
	var size int
	for b.Loop() {
		e := newEncoder(1, batch, sizeHint(batch))
		e.encode()
		size = len(e.b.Buf)
	}
	b.ReportMetric(float64(size), "batch-bytes")
}

// BenchmarkPartialSync is a partial sync after one chain and one set
// changed, planned and encoded (the steady state of felix).
func BenchmarkPartialSync(b *testing.B) {
	tb := nfttest.Felix(nfttest.FelixScale)
	c := &capture{}
	a := apply.New(c, apply.Options{Tables: []nft.TableID{tb.ID()}, Log: zerolog.Nop()})
	if _, err := a.Apply(context.Background(), tb); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		old := tb.Chain("cali-pi-policy-0007")
		rules := append([]nft.Rule{nft.NewRule(nft.Mark(uint32(i)), nft.Accept())}, old.Rules[1:]...)
		must(b, tb.PutChain(&nft.Chain{Name: old.Name, Rules: rules}))
		must(b, tb.UpdateSet("cali40s-0500", []nft.Element{nft.AddrElem(a4("11.0.0.1"))}, nil))
		must(b, tb.UpdateSet("cali40s-0500", nil, []nft.Element{nft.AddrElem(a4("11.0.0.1"))}))
		if _, err := a.Apply(context.Background(), tb); err != nil {
			b.Fatal(err)
		}
		e := newEncoder(1, c.last, sizeHint(c.last))
		e.encode()
	}
}

// BenchmarkCommitKernel commits the felix-scale ruleset to an empty kernel
// (a fresh Applier, one batch), to compare with BenchmarkNftF.
func BenchmarkCommitKernel(b *testing.B) {
	ns := nstest.New(b)
	k := newBackend(b, ns)
	tb := nfttest.Felix(nfttest.FelixScale)
	var st apply.Stats
	for b.Loop() {
		b.StopTimer()
		ns.Exec(b, "nft", "flush", "ruleset")
		a := apply.New(k, apply.Options{Tables: []nft.TableID{tb.ID()}, Log: zerolog.Nop()})
		b.StartTimer()
		var err error
		if st, err = a.Apply(context.Background(), tb); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(st.Messages), "messages")
	b.ReportMetric(float64(st.Bytes), "bytes")
}

// BenchmarkNftF loads the same ruleset's dump with `nft -f`.
func BenchmarkNftF(b *testing.B) {
	ns := nstest.New(b)
	file := filepath.Join(b.TempDir(), "ruleset.nft")
	must(b, os.WriteFile(file, []byte(nfttest.Felix(nfttest.FelixScale).Dump()), 0o644))
	for b.Loop() {
		b.StopTimer()
		ns.Exec(b, "nft", "flush", "ruleset")
		b.StartTimer()
		ns.Exec(b, "nft", "-f", file)
	}
}

// TestFootprint reports the memory a felix-scale desired table holds and
// what an Applier adds once it has written it (its mirror shares the
// table's objects).
func TestFootprint(t *testing.T) {
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	h0 := heap()
	tb := nfttest.Felix(nfttest.FelixScale)
	h1 := heap()
	c := &capture{}
	a := apply.New(c, apply.Options{Tables: []nft.TableID{tb.ID()}, Log: zerolog.Nop()})
	start := time.Now()
	if _, err := a.Apply(context.Background(), tb); err != nil {
		t.Fatal(err)
	}
	plan := time.Since(start)
	c.last = nil
	h2 := heap()
	chains, rules, sets, elems, _, mapElems := tb.Counts()
	t.Logf("desired table: %d chains, %d rules, %d sets, %d elements, %d map elements: %.1f MB (%.0f B/rule+element)",
		chains, rules, sets, elems, mapElems, float64(h1-h0)/1e6, float64(h1-h0)/float64(rules+elems+mapElems))
	t.Logf("Applier after the full sync (plan %v): +%.2f MB", plan, (float64(h2)-float64(h1))/1e6)
	runtime.KeepAlive(tb)
	runtime.KeepAlive(a)

	h3 := heap()
	rulesOnly := nfttest.Felix(nfttest.Scale{Chains: 2000, RulesPerChain: 10})
	h4 := heap()
	setsOnly := nfttest.Felix(nfttest.Scale{Sets: 1000, MaxSetSize: 1000})
	h5 := heap()
	_, rules, _, _, _, _ = rulesOnly.Counts()
	_, _, _, elems, _, _ = setsOnly.Counts()
	t.Logf("per rule (with its chain's share): %.0f B; per interval set element: %.1f B",
		float64(h4-h3)/float64(rules), float64(h5-h4)/float64(elems))
	runtime.KeepAlive(rulesOnly)
	runtime.KeepAlive(setsOnly)
}

// BenchmarkPartialCommitKernel is felix's steady state against the kernel:
// one policy chain rewritten and one set element added and removed, on a
// kernel holding the felix-scale ruleset.
func BenchmarkPartialCommitKernel(b *testing.B) {
	ns := nstest.New(b)
	k := newBackend(b, ns)
	tb := nfttest.Felix(nfttest.FelixScale)
	a := apply.New(k, apply.Options{Tables: []nft.TableID{tb.ID()}, Log: zerolog.Nop()})
	if _, err := a.Apply(context.Background(), tb); err != nil {
		b.Fatal(err)
	}
	i := 0
	for b.Loop() {
		i++
		old := tb.Chain("cali-pi-policy-0007")
		rules := append([]nft.Rule{nft.NewRule(nft.Mark(uint32(i)), nft.Accept())}, old.Rules[1:]...)
		must(b, tb.PutChain(&nft.Chain{Name: old.Name, Rules: rules}))
		add := []nft.Element{nft.AddrElem(a4("11.0.0.1"))}
		if i%2 == 0 {
			must(b, tb.UpdateSet("cali40s-0500", nil, add))
		} else {
			must(b, tb.UpdateSet("cali40s-0500", add, nil))
		}
		if _, err := a.Apply(context.Background(), tb); err != nil {
			b.Fatal(err)
		}
	}
}
