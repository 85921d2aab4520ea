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

	"github.com/calico-host/calico-host/test/e2e/topo"
)

var (
	flagSeed      = flag.Uint64("seed", envUint("POLICYDIFF_SEED", 1), "random seed (env POLICYDIFF_SEED)")
	flagScenarios = flag.Int("scenarios", int(envUint("POLICYDIFF_SCENARIOS", 40)), "scenarios to run (env POLICYDIFF_SCENARIOS)")
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
		if os.Geteuid() != 0 || testing.Short() {
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

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (network namespaces, nftables)")
	}
	if testing.Short() {
		t.Skip("dataplane test skipped with -short")
	}
}

// startHarness brings up felix and the namespaces for one test.
func startHarness(t *testing.T) (*runner, context.Context) {
	needRoot(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	start := time.Now()
	hs, err := newHarness(ctx, bin, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hs.Close)
	t.Logf("harness up in %s", time.Since(start).Round(time.Millisecond))
	return &runner{hs: hs}, ctx
}

// TestDiff runs random scenarios through the real felix and compares every packet's fate with
// the reference evaluator.
func TestDiff(t *testing.T) {
	rn, ctx := startHarness(t)
	start := time.Now()
	var packets, delivered, failures int
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
		for _, o := range out {
			packets++
			if o.Got {
				delivered++
			}
			if o.Mismatch() {
				failures++
				t.Logf("MISMATCH scenario %d: %s %s->%s want %v got %v (%s)", i, o.Packet, o.From, o.To, o.Want, o.Got, explain(sc, prev, o))
				if failures <= 5 {
					t.Error(mismatchReport(sc, o) + "\nfelix log tail:\n" + rn.hs.felixLog())
				}
			}
		}
		if os.Getenv("POLICYDIFF_DEBUG") != "" {
			debugMismatches(t, ctx, rn, sc, out)
		}
		prev = sc
	}
	t.Logf("seed %d: %d scenarios, %d packets (%d delivered, %d dropped), %d mismatches, in %s",
		*flagSeed, *flagScenarios, packets, delivered, packets-delivered, failures, time.Since(start).Round(time.Millisecond))
	if failures > 5 {
		t.Errorf("%d mismatches in all (the first 5 are shown)", failures)
	}
}

// explain says which known cause, if any, accounts for a mismatch: a known divergence of our
// felix, or the previous scenario's objects still being in force.
func explain(sc, prev *scenario, o outcome) string {
	alt := *sc.Ev
	alt.Variant = knownVariant
	var why []string
	if alt.Evaluate(o.Packet).Delivered == o.Got {
		why = append(why, "explained by a known divergence")
	}
	if prev != nil && prev.Ev.Evaluate(o.Packet).Delivered == o.Got {
		why = append(why, "the previous scenario gives the same verdict")
	}
	if len(why) == 0 {
		return "unexplained"
	}
	return strings.Join(why, "; ")
}

// mismatchReport is everything needed to reproduce one disagreement.
func mismatchReport(sc *scenario, o outcome) string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d scenario %d (replay: go test ./test/policydiff -run TestDiff -args -seed %d -first %d -scenarios 1)\n",
		sc.Seed, sc.Index, sc.Seed, sc.Index)
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
	sleep(ctx, 3*time.Second)
	report("after 3 s")
	dump, _ := rn.hs.h.Exec(ctx, "nft", "list", "ruleset")
	file := fmt.Sprintf("/tmp/policydiff-nft-%d-%d.txt", sc.Seed, sc.Index)
	os.WriteFile(file, []byte(dump), 0o644)
	t.Logf("DEBUG nft ruleset in %s", file)
	rn.hs.h.Felix.Stop()
	if err := rn.hs.h.StartFelix(ctx); err != nil {
		t.Fatal(err)
	}
	sleep(ctx, 2*time.Second)
	report("after a felix restart")
}
