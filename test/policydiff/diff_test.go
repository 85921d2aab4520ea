package policydiff

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/calico-host/calico-host/internal/backoff"
	"github.com/calico-host/calico-host/pkg/netnstest"
	"github.com/calico-host/calico-host/test/e2e/topo"
)

var (
	flagSeed      = flag.Uint64("seed", envUint("POLICYDIFF_SEED", 1), "random seed (env POLICYDIFF_SEED)")
	flagScenarios = flag.Int("scenarios", int(envUint("POLICYDIFF_SCENARIOS", 60)), "scenarios to run (env POLICYDIFF_SCENARIOS)")
	flagProbes    = flag.Int("probes", int(envUint("POLICYDIFF_PROBES", 60)), "packets per scenario (env POLICYDIFF_PROBES)")
	flagFirst     = flag.Int("first", 0, "index of the first scenario (to replay one: -first N -scenarios 1)")
)

func envUint(name string, def uint64) uint64 {
	if v, err := strconv.ParseUint(os.Getenv(name), 10, 64); err == nil {
		return v
	}
	return def
}

// bin holds calico-felix and devetcd, built by TestMain (root only).
var bin string

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(func() int {
		if !netnstest.Privileged() || testing.Short() {
			return m.Run() // the dataplane tests skip
		}
		topo.HandleSignals()
		topo.SweepLeftovers("ccdiff")
		defer topo.CloseAll()
		bin = os.Getenv("E2E_BIN")
		if bin == "" {
			dir, err := os.MkdirTemp("", "policydiff-bin-")
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			defer os.RemoveAll(dir)
			topo.AtExit(func() { os.RemoveAll(dir) })
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			if err := buildBinaries(ctx, dir); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			bin = dir
		}
		return m.Run()
	}())
}

// startHarness brings up felix and the namespaces for one test.
func startHarness(t *testing.T) (*runner, context.Context) { return startHarnessWith(t, 0) }

// startHarnessWith is startHarness with felix's flow logs on when flowFlush is set.
func startHarnessWith(t *testing.T, flowFlush time.Duration) (*runner, context.Context) {
	netnstest.RequireLong(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	start := time.Now()
	hs, err := newHarness(ctx, bin, t.Logf, flowFlush)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hs.Close)
	t.Logf("harness up in %s", time.Since(start).Round(time.Millisecond))
	rn := &runner{hs: hs}
	if os.Getenv("POLICYDIFF_DEBUG") != "" {
		if rn.log, err = newEventLog(ctx, hs.h.NS.Name, "/tmp/policydiff-events.log"); err != nil {
			t.Fatal(err)
		}
	}
	return rn, ctx
}

// TestDiff runs random scenarios through the real felix and compares every packet's fate with
// the reference evaluator. Every mismatch fails the test; a scenario's mismatches are probed
// again 2 s later, to tell a dataplane that was not yet in force (TRANSIENT, still a failure)
// from one that is wrong, and the first persistent one is shrunk.
func TestDiff(t *testing.T) {
	rn, ctx := startHarness(t)
	start := time.Now()
	var st diffStats
	var prev *scenario
	for i := *flagFirst; i < *flagFirst+*flagScenarios; i++ {
		sc, err := newScenario(*flagSeed, i, *flagProbes)
		if err != nil {
			t.Fatalf("scenario %d: %v", i, err)
		}
		out, err := rn.Run(ctx, sc)
		if err != nil {
			t.Fatal(err)
		}
		st.judge(t, ctx, rn, sc, prev, out)
		if os.Getenv("POLICYDIFF_DEBUG") != "" {
			debugMismatches(t, ctx, rn, sc, out)
		}
		prev = sc
	}
	t.Logf("seed %d: %d scenarios, %d packets (%d delivered, %d dropped), %d mismatches (%d transient), in %s",
		*flagSeed, *flagScenarios, st.packets, st.delivered, st.packets-st.delivered, st.mismatches, st.transient,
		time.Since(start).Round(time.Millisecond))
}

type diffStats struct {
	packets, delivered, mismatches, transient, reported int
	shrunk                                              bool
}

// judge counts a scenario's outcomes and reports its mismatches.
func (st *diffStats) judge(t *testing.T, ctx context.Context, rn *runner, sc, prev *scenario, out []outcome) {
	var bad []outcome
	for _, o := range out {
		st.packets++
		if o.Got {
			st.delivered++
		}
		if o.Mismatch() {
			st.mismatches++
			rn.log.Printf("MISMATCH scenario %d: %s %s->%s want %v got %v", sc.Index, o.Packet, o.From, o.To, o.Want, o.Got)
			bad = append(bad, o)
		}
	}
	if len(bad) > 0 {
		st.report(t, ctx, rn, sc, prev, bad)
	}
}

// report probes a scenario's mismatches again 2 s later and fails the test with a report (and
// a shrunk universe for the first persistent one).
func (st *diffStats) report(t *testing.T, ctx context.Context, rn *runner, sc, prev *scenario, bad []outcome) {
	if os.Getenv("POLICYDIFF_DEBUG") != "" {
		rn.hs.dumpState(ctx, t, fmt.Sprintf("%d-%d-at-mismatch", sc.Seed, sc.Index))
	}
	var probes []Probe
	for _, o := range bad {
		probes = append(probes, o.Probe)
	}
	backoff.Sleep(ctx, 2*time.Second)
	again, err := rn.Recheck(ctx, probes)
	if err != nil {
		t.Fatal(err)
	}
	for k, o := range bad {
		why := "persistent: still wrong 2 s later"
		if !again[k].Mismatch() {
			st.transient++
			why = "TRANSIENT: right 2 s later"
		}
		if prev != nil && prev.Ev.Evaluate(o.Packet).Delivered == o.Got {
			why += "; the previous scenario gives the same verdict"
		}
		t.Errorf("MISMATCH scenario %d: %s %s->%s want %v got %v (%s)", sc.Index, o.Packet, o.From, o.To, o.Want, o.Got, why)
		if st.reported++; st.reported > 3 {
			continue
		}
		msg := mismatchReport(sc, o) + "\nfelix log tail:\n" + rn.hs.felixLog()
		if !st.shrunk && again[k].Mismatch() {
			st.shrunk = true
			msg += shrinkReport(ctx, rn, sc, o)
		}
		t.Log(msg)
	}
}

// mismatchReport is everything needed to reproduce one disagreement.
func mismatchReport(sc *scenario, o outcome) string {
	var b strings.Builder
	if sc.Seed != 0 {
		fmt.Fprintf(&b, "seed %d scenario %d (replay: go test ./test/policydiff -run TestDiff -args -seed %d -first %d -scenarios 1)\n",
			sc.Seed, sc.Index, sc.Seed, sc.Index)
	}
	fmt.Fprintf(&b, "packet %s from %s to %s: evaluator says delivered=%v, kernel delivered=%v\n", o.Packet, o.From, o.To, o.Want, o.Got)
	fmt.Fprintf(&b, "evaluator trace:\n  %s\n", strings.Join(o.Trace, "\n  "))
	fmt.Fprintf(&b, "objects:\n%s", sc.U.YAML())
	return b.String()
}

// debugMismatches (POLICYDIFF_DEBUG=1) probes a scenario's mismatches again after 3 s, dumps
// the host's nftables ruleset, restarts felix and probes them once more.
func debugMismatches(t *testing.T, ctx context.Context, rn *runner, sc *scenario, out []outcome) {
	var bad []Probe
	for _, o := range out {
		if o.Mismatch() {
			bad = append(bad, o.Probe)
		}
	}
	if len(bad) == 0 {
		return
	}
	report := func(when string) {
		again, err := rn.Recheck(ctx, bad)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, o := range again {
			if o.Mismatch() {
				n++
			}
		}
		t.Logf("DEBUG scenario %d %s: %d of %d mismatches remain", sc.Index, when, n, len(bad))
	}
	backoff.Sleep(ctx, 3*time.Second)
	report("after 3 s")
	dump, _ := rn.hs.h.Exec(ctx, "nft", "list", "ruleset")
	file := fmt.Sprintf("/tmp/policydiff-nft-%d-%d.txt", sc.Seed, sc.Index)
	os.WriteFile(file, []byte(dump), 0o644)
	t.Logf("DEBUG nft ruleset in %s", file)
	rn.hs.h.Felix.Stop()
	if err := rn.hs.h.StartFelix(ctx); err != nil {
		t.Fatal(err)
	}
	backoff.Sleep(ctx, 2*time.Second)
	report("after a felix restart")
}

// shrinkReport shrinks the universe of a persistent mismatch and renders the result.
func shrinkReport(ctx context.Context, rn *runner, sc *scenario, o outcome) string {
	small, runs, err := rn.Shrink(ctx, sc.U.clone(), o.Probe, 300)
	if err != nil {
		return fmt.Sprintf("\nshrinking failed after %d runs: %v", runs, err)
	}
	ev, err := NewEvaluator(small)
	if err != nil {
		return "\nshrinking: " + err.Error()
	}
	v := ev.Evaluate(o.Packet)
	return fmt.Sprintf("\nSHRUNK in %d dataplane runs: packet %s from %s to %s, evaluator delivered=%v, felix the opposite\nevaluator trace:\n  %s\nobjects:\n%s",
		runs, o.Packet, o.From, o.To, v.Delivered, strings.Join(v.Trace, "\n  "), small.YAML())
}
