package dataplane

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/netnstest"
	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/apply"
	"github.com/calico-host/calico-host/pkg/nft/fake"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// newBenchDataplane is a Dataplane on the netns at path, or on the nft kernel k (a fake). It
// refuses to make one that would program this process's own namespace.
func newBenchDataplane(b *testing.B, path string, k nft.Backend) *Dataplane {
	b.Helper()
	if path == "" && k == nil {
		b.Fatal("refusing a netlink dataplane without a test namespace")
	}
	opts := []Option{WithRoutes(nullRoutes{}), WithInterfaces(nullInterfaces{}), WithVXLAN(nullVXLAN{})}
	if k != nil {
		opts = append(opts, WithNFTBackend(k))
	}
	dp, err := New(FelixDefaults(Config{Hostname: "host1", NetNS: path}), zerolog.Nop(), opts...)
	if err != nil {
		b.Fatal(err)
	}
	return dp
}

// load records the updates and applies them.
func (d *Dataplane) load(b *testing.B, ups []calc.Update) apply.Stats {
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
func (d *Dataplane) applyStats(ctx context.Context) (apply.Stats, error) {
	tables := d.buildRuleset()
	return d.nft.Apply(ctx, tables...)
}

// BenchmarkRender: the calc bench shape from calc's output to the desired ruleset (model
// updates plus rendering every chain, set and map).
func BenchmarkRender(b *testing.B) {
	ups := benchUpdates(b, calcBenchShape)
	for b.Loop() {
		dp := newBenchDataplane(b, "", fake.New())
		for _, u := range ups {
			dp.model.apply(u)
		}
		dp.buildRuleset()
	}
}

// BenchmarkLoadCalcShape compares programming the calc bench shape into a fresh namespace
// through the Dataplane (render, plan, encode, one netlink batch) with `nft -f` loading the
// same ruleset (the fake's dump, same rule comments). Each iteration runs both, one after the
// other, so that load from other processes affects them alike; it reports the mean wall time
// of each, their ratio, and the CPU time (user+system, which includes the kernel's work).
func BenchmarkLoadCalcShape(b *testing.B) {
	netnstest.Require(b, "nft", "sysctl")
	ups := benchUpdates(b, calcBenchShape)
	fake := fake.New()
	newBenchDataplane(b, "", fake).load(b, ups)
	file := filepath.Join(b.TempDir(), "ruleset.nft")
	if err := os.WriteFile(file, []byte(fake.Dump()), 0o600); err != nil {
		b.Fatal(err)
	}
	var ours, theirs, oursCPU, theirsCPU time.Duration
	var st apply.Stats
	n := 0
	for b.Loop() {
		ns := netnstest.New(b, "bench")
		dp := newBenchDataplane(b, ns.Path(), nil)
		cpu0, start := selfCPU(), time.Now()
		st = dp.load(b, ups)
		ours, oursCPU = ours+time.Since(start), oursCPU+selfCPU()-cpu0
		dp.close()
		ns2 := netnstest.New(b, "bench")
		cpu0, start = childCPU(), time.Now()
		ns2.Exec(b, "nft", "-f", file)
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
// both are one small batch. After the timed loop, `nft -f` applies the same two transactions
// to a copy of the table in another namespace as many times, for comparison; the two are not
// interleaved, because `nft -f` loading its cache of the whole table in a neighbouring
// namespace slows the kernel's next commit down in ours (by about 5 ms here).
func BenchmarkAddEndpoint(b *testing.B) {
	netnstest.Require(b, "nft", "sysctl")
	g := calc.New("host1", zerolog.Nop())
	g.OnMessage(syncer.Message{Snapshot: true, Status: syncer.InSync, Updates: benchSnapshot(calcBenchShape)})
	initial := g.Flush()
	i := calcBenchShape.local + calcBenchShape.remote
	ctr := fmt.Sprintf("c%05d", i)
	name := api.WorkloadEndpointName("host1", "cni", ctr, "eth0")
	key := resPrefix + "workloadendpoints/ns1/" + name
	addUps := flushWith(g, syncer.Update{ID: datastore.IDOf(key), Value: benchWEP(i, "host1", "ns1", ctr, name), Revision: 1 << 40})
	delUps := flushWith(g, syncer.Update{ID: datastore.IDOf(key)})
	nftNS, addScript, delScript := nftScripts(b, initial, addUps, delUps)
	dp := loadedBenchDataplane(b, initial)
	var add, del phases
	for b.Loop() {
		add.add(timedLoad(b, dp, addUps))
		del.add(timedLoad(b, dp, delUps))
	}
	var nftAdd, nftDel time.Duration
	for range add.n {
		nftAdd += timed(func() { nftNS.Exec(b, "nft", "-f", addScript) })
		nftDel += timed(func() { nftNS.Exec(b, "nft", "-f", delScript) })
	}
	b.ReportMetric(float64(len(addUps)), "add-updates")
	b.ReportMetric(float64(add.ops), "add-ops")
	add.report(b, "add")
	b.ReportMetric(add.ms(nftAdd), "nft-f-add-ms")
	b.ReportMetric(float64(del.ops), "del-ops")
	del.report(b, "del")
	b.ReportMetric(del.ms(nftDel), "nft-f-del-ms")
}

// loadedBenchDataplane is a Dataplane in a new namespace, loaded with initial.
func loadedBenchDataplane(b *testing.B, initial []calc.Update) *Dataplane {
	ns := netnstest.New(b, "bench")
	dp := newBenchDataplane(b, ns.Path(), nil)
	b.Cleanup(dp.close)
	dp.load(b, initial)
	return dp
}

// BenchmarkPartialChange: on the loaded calc bench shape, one datastore change at a time,
// applied and then undone: a policy's rule (its ports) and one more remote endpoint (an IP set
// member in the sets that select it).
func BenchmarkPartialChange(b *testing.B) {
	netnstest.Require(b, "nft", "sysctl")
	g := calc.New("host1", zerolog.Nop())
	g.OnMessage(syncer.Message{Snapshot: true, Status: syncer.InSync, Updates: benchSnapshot(calcBenchShape)})
	dp := loadedBenchDataplane(b, g.Flush())
	pol := benchPolicy("pol-0007", 7)
	polKey := resPrefix + "globalnetworkpolicies/pol-0007"
	i := calcBenchShape.local + calcBenchShape.remote + 1
	ctr := fmt.Sprintf("c%05d", i)
	name := api.WorkloadEndpointName("host2", "cni", ctr, "eth0")
	wepKey := resPrefix + "workloadendpoints/ns1/" + name
	for _, c := range []struct {
		name     string
		do, undo syncer.Update
	}{
		{"policy-rule", syncer.Update{ID: datastore.IDOf(polKey), Value: withPort(pol, 8443)}, syncer.Update{ID: datastore.IDOf(polKey), Value: pol}},
		{"ipset-member", syncer.Update{ID: datastore.IDOf(wepKey), Value: benchWEP(i, "host2", "ns1", ctr, name)}, syncer.Update{ID: datastore.IDOf(wepKey)}},
	} {
		b.Run(c.name, func(b *testing.B) {
			var do, undo phases
			for b.Loop() {
				do.add(timedLoad(b, dp, flushWith(g, c.do)))
				undo.add(timedLoad(b, dp, flushWith(g, c.undo)))
			}
			b.ReportMetric(float64(do.ops), "ops")
			do.report(b, "do")
			undo.report(b, "undo")
		})
	}
}

// withPort is a copy of p whose first ingress rule allows port too.
func withPort(p *api.GlobalNetworkPolicy, port uint16) *api.GlobalNetworkPolicy {
	c := *p
	c.Spec.Ingress = slices.Clone(p.Spec.Ingress)
	c.Spec.Ingress[0].Destination.Ports = append(slices.Clone(c.Spec.Ingress[0].Destination.Ports), api.SinglePort(port))
	return &c
}

// phases sums where the time of partial applies went.
type phases struct {
	n, ops                             int
	total, plan, encode, commit, build time.Duration
}

func (p *phases) add(st apply.Stats, total time.Duration) {
	p.n, p.ops = p.n+1, st.Ops
	p.total += total
	p.plan += st.PlanTime
	p.encode += st.EncodeTime
	p.commit += st.CommitTime - st.EncodeTime
	p.build += total - st.PlanTime - st.CommitTime
}

func (p *phases) ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(p.n) }

// report gives the means: total, the dataplane's build, the planner, encoding, and the
// kernel's part of the commit.
func (p *phases) report(b *testing.B, prefix string) {
	b.ReportMetric(p.ms(p.total), prefix+"-ms")
	b.ReportMetric(p.ms(p.build), prefix+"-build-ms")
	b.ReportMetric(p.ms(p.plan), prefix+"-plan-ms")
	b.ReportMetric(p.ms(p.encode), prefix+"-encode-ms")
	b.ReportMetric(p.ms(p.commit), prefix+"-kernel-ms")
}

// timedLoad loads updates into dp and returns the statistics and the total time.
func timedLoad(b *testing.B, dp *Dataplane, ups []calc.Update) (apply.Stats, time.Duration) {
	start := time.Now()
	st := dp.load(b, ups)
	return st, time.Since(start)
}

func timed(fn func()) time.Duration {
	start := time.Now()
	fn()
	return time.Since(start)
}

// nftScripts loads the initial state into a second namespace with `nft -f`, and writes the
// same add and delete transactions the Dataplane makes as `nft -f` scripts, for comparison.
func nftScripts(b *testing.B, initial, addUps, delUps []calc.Update) (*netnstest.NS, string, string) {
	fake := fake.New()
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
	full := write("full.nft", fake.Dump())
	dp.load(b, addUps)
	add := write("add.nft", batchScript(fake.LastBatch()))
	dp.load(b, delUps)
	del := write("del.nft", batchScript(fake.LastBatch()))
	ns := netnstest.New(b, "bench")
	ns.Exec(b, "nft", "-f", full)
	return ns, add, del
}

// flushWith feeds one update to the graph and returns its output.
func flushWith(g *calc.Graph, u syncer.Update) []calc.Update {
	g.OnMessage(syncer.Message{Updates: []syncer.Update{u}})
	return g.Flush()
}
