package dataplane

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/nft"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// newBenchDataplane is a Dataplane on the netns at path, or on the nft kernel k (a fake). It
// refuses to make one that would program this process's own namespace.
func newBenchDataplane(b *testing.B, path string, k nft.Kernel) *Dataplane {
	b.Helper()
	if path == "" && k == nil {
		b.Fatal("refusing a netlink dataplane without a test namespace")
	}
	opts := []Option{WithRoutes(nullRoutes{}), WithInterfaces(nullInterfaces{}), WithVXLAN(nullVXLAN{})}
	if k != nil {
		opts = append(opts, WithNFTKernel(k))
	}
	dp, err := New(Config{Hostname: "host1", NetNS: path}, zerolog.Nop(), opts...)
	if err != nil {
		b.Fatal(err)
	}
	return dp
}

// load records the updates and applies them.
func (d *Dataplane) load(b *testing.B, ups []calc.Update) nft.Stats {
	b.Helper()
	for _, u := range ups {
		d.model.apply(u)
	}
	stats, err := d.applyStats(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	return stats
}

// applyStats is apply returning the nft statistics.
func (d *Dataplane) applyStats(ctx context.Context) (nft.Stats, error) {
	rs := d.builder.build(d.model, buildInput{})
	return d.nft.Apply(ctx, rs)
}

// BenchmarkRender: the calc bench shape from calc's output to the desired ruleset (model
// updates plus rendering every chain, set and map).
func BenchmarkRender(b *testing.B) {
	ups := benchUpdates(b, calcBenchShape)
	for b.Loop() {
		dp := newBenchDataplane(b, "", nft.NewFake())
		for _, u := range ups {
			dp.model.apply(u)
		}
		dp.builder.build(dp.model, buildInput{})
	}
}

// BenchmarkLoadCalcShape compares programming the calc bench shape into a fresh namespace
// through the Dataplane (render, plan, encode, one netlink batch) with `nft -f` loading the
// same ruleset (the fake's dump, same rule comments). Each iteration runs both, one after the
// other, so that load from other processes affects them alike; it reports the mean wall time
// of each, their ratio, and the CPU time (user+system, which includes the kernel's work).
func BenchmarkLoadCalcShape(b *testing.B) {
	requireRoot(b)
	ups := benchUpdates(b, calcBenchShape)
	fake := nft.NewFake()
	newBenchDataplane(b, "", fake).load(b, ups)
	file := filepath.Join(b.TempDir(), "ruleset.nft")
	if err := os.WriteFile(file, []byte(fake.DumpWithHashes()), 0o600); err != nil {
		b.Fatal(err)
	}
	var ours, theirs, oursCPU, theirsCPU time.Duration
	var st nft.Stats
	n := 0
	for b.Loop() {
		ns := newTestNS(b, "bench")
		dp := newBenchDataplane(b, ns.path(), nil)
		cpu0, start := selfCPU(), time.Now()
		st = dp.load(b, ups)
		ours, oursCPU = ours+time.Since(start), oursCPU+selfCPU()-cpu0
		dp.closeFn()
		ns2 := newTestNS(b, "bench")
		cpu0, start = childCPU(), time.Now()
		ns2.run(b, "nft", "-f", file)
		theirs, theirsCPU = theirs+time.Since(start), theirsCPU+childCPU()-cpu0
		n++
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(n) }
	b.ReportMetric(ms(ours), "dataplane-ms")
	b.ReportMetric(ms(theirs), "nft-f-ms")
	b.ReportMetric(float64(ours)/float64(theirs), "dataplane/nft-f")
	b.ReportMetric(ms(oursCPU), "dataplane-cpu-ms")
	b.ReportMetric(ms(theirsCPU), "nft-f-cpu-ms")
	b.ReportMetric(float64(st.PlanTime.Microseconds())/1000, "plan-ms")
	b.ReportMetric(float64(st.CommitTime.Microseconds())/1000, "commit-ms")
	b.ReportMetric(float64(st.Ops), "ops")
}

// selfCPU and childCPU are the user+system time of this process and of its waited-for
// children.
func selfCPU() time.Duration  { return rusage(syscall.RUSAGE_SELF) }
func childCPU() time.Duration { return rusage(syscall.RUSAGE_CHILDREN) }

func rusage(who int) time.Duration {
	var r syscall.Rusage
	_ = syscall.Getrusage(who, &r)
	return time.Duration(r.Utime.Nano() + r.Stime.Nano())
}

// BenchmarkAddEndpoint: on the loaded calc bench shape, one more local endpoint (calc's real
// output for it: the endpoint and its IP set memberships) is applied, then removed again;
// both are one small batch.
func BenchmarkAddEndpoint(b *testing.B) {
	requireRoot(b)
	g := calc.New("host1", zerolog.Nop())
	g.OnMessage(syncer.Message{Snapshot: true, Status: syncer.InSync, Updates: benchSnapshot(calcBenchShape)})
	initial := g.Flush()
	ns := newTestNS(b, "bench")
	dp := newBenchDataplane(b, ns.path(), nil)
	defer dp.closeFn()
	dp.load(b, initial)
	i := calcBenchShape.local + calcBenchShape.remote
	ctr := fmt.Sprintf("c%05d", i)
	name := api.WorkloadEndpointName("host1", "cni", ctr, "eth0")
	key := resPrefix + "workloadendpoints/ns1/" + name
	addUps := flushWith(g, syncer.Update{Key: key, Value: benchWEP(i, "host1", "ns1", ctr, name), Revision: 1 << 40})
	delUps := flushWith(g, syncer.Update{Key: key})
	nftNS, addScript, delScript := nftScripts(b, initial, addUps, delUps)
	var add, del nft.Stats
	var addTotal, delTotal, nftAdd, nftDel time.Duration
	n := 0
	for b.Loop() {
		start := time.Now()
		add = dp.load(b, addUps)
		addTotal += time.Since(start)
		start = time.Now()
		del = dp.load(b, delUps)
		delTotal += time.Since(start)
		start = time.Now()
		nftNS.run(b, "nft", "-f", addScript)
		nftAdd += time.Since(start)
		start = time.Now()
		nftNS.run(b, "nft", "-f", delScript)
		nftDel += time.Since(start)
		n++
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(n) }
	b.ReportMetric(float64(len(addUps)), "add-updates")
	b.ReportMetric(float64(add.Ops), "add-ops")
	b.ReportMetric(ms(addTotal), "add-ms")
	b.ReportMetric(float64(add.CommitTime.Microseconds())/1000, "add-commit-ms")
	b.ReportMetric(float64(add.PlanTime.Microseconds())/1000, "add-plan-ms")
	b.ReportMetric(ms(nftAdd), "nft-f-add-ms")
	b.ReportMetric(float64(del.Ops), "del-ops")
	b.ReportMetric(ms(delTotal), "del-ms")
	b.ReportMetric(ms(nftDel), "nft-f-del-ms")
}

// nftScripts loads the initial state into a second namespace with `nft -f`, and writes the
// same add and delete transactions the Dataplane makes as `nft -f` scripts, for comparison.
func nftScripts(b *testing.B, initial, addUps, delUps []calc.Update) (*testNS, string, string) {
	fake := nft.NewFake()
	dp := newBenchDataplane(b, "", fake)
	dp.load(b, initial)
	dir := b.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			b.Fatal(err)
		}
		return path
	}
	full := write("full.nft", fake.DumpWithHashes())
	dp.load(b, addUps)
	add := write("add.nft", fake.LastTransaction().Script(nft.DefaultTable))
	dp.load(b, delUps)
	del := write("del.nft", fake.LastTransaction().Script(nft.DefaultTable))
	ns := newTestNS(b, "bench")
	ns.run(b, "nft", "-f", full)
	return ns, add, del
}

// flushWith feeds one update to the graph and returns its output.
func flushWith(g *calc.Graph, u syncer.Update) []calc.Update {
	g.OnMessage(syncer.Message{Updates: []syncer.Update{u}})
	return g.Flush()
}
