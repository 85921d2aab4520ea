package policydiff

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/internal/backoff"
	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/flowlog"
	"github.com/calico-host/calico-host/pkg/nft/sim"
	"github.com/calico-host/calico-host/pkg/syncer"
	"github.com/calico-host/calico-host/pkg/trace"
)

// TestTraceAgreesWithPackets checks calicoctl trace's pipeline (package trace: calc, the ruleset
// builder and the packet simulator over the datastore) against real packets: on random
// scenarios run through the real felix, for every probe the trace's verdict on felix's host
// equals what the kernel did, and the rules the trace names (tier, policy, rule index, action)
// equal the reference evaluator's decisions for that packet. Felix's flow logs are on: for each
// such probe whose flow key no other probe of its scenario shares, the flow log line of each
// local end (reporter Src, Dst) carries the trace's hits of that direction, enforced and
// pending (kind, tier, policy, rule index, action, trigger).
//
//	POLICYDIFF_TRACE_SCENARIOS=20 go test ./test/policydiff -run TestTraceAgreesWithPackets -args -seed 7
func TestTraceAgreesWithPackets(t *testing.T) {
	rn, ctx := startHarnessWith(t, traceFlowFlush)
	scenarios := int(envUint("POLICYDIFF_TRACE_SCENARIOS", 8))
	start := time.Now()
	var probes, delivered, checked, flows int
	for i := *flagFirst; i < *flagFirst+scenarios; i++ {
		sc, err := newScenario(*flagSeed, i, *flagProbes)
		if err != nil {
			t.Fatalf("scenario %d: %v", i, err)
		}
		quiet := time.Now()
		if err := rn.hs.flushConntrack(); err != nil { // the connections before end now
			t.Fatal(err)
		}
		if err := backoff.Sleep(ctx, flowQuiet); err != nil {
			t.Fatal(err)
		}
		out, err := rn.Run(ctx, sc)
		if err != nil {
			t.Fatal(err)
		}
		tr := trace.New(snapshotOf(t, rn.hs, sc.U), zerolog.Nop())
		fw := newFlowWants(sc.Probes)
		for _, o := range out {
			probes++
			if o.Got {
				delivered++
			}
			if o.Mismatch() {
				continue // felix and the evaluator disagree: TestDiff's failure, not the trace's
			}
			checked++
			tt, msg := compareTrace(tr, o)
			if msg != "" {
				t.Errorf("seed %d scenario %d: %s: %s\nevaluator:\n  %v\nuniverse:\n%s", *flagSeed, i, o.Packet, msg,
					o.Trace, sc.U.YAML())
				continue
			}
			fw.add(o.Probe, tt)
		}
		flows += len(fw.wants)
		for _, d := range fw.check(ctx, rn.hs.h.FlowLogFile(), quiet.Add(flowQuiet-traceFlowFlush)) {
			t.Errorf("seed %d scenario %d: %s", *flagSeed, i, d)
		}
		if t.Failed() {
			t.Logf("universe:\n%s", sc.U.YAML())
			return
		}
	}
	t.Logf("seed %d: %d scenarios, %d probes (%d delivered), %d checked: the trace agreed with the kernel and the evaluator on all, "+
		"and with the %d flow log lines of the probes whose flow key is their own, in %s",
		*flagSeed, scenarios, probes, delivered, checked, flows, time.Since(start).Round(time.Millisecond))
}

// snapshotOf is what felix's syncer reads after the harness wrote the universe: the base
// objects and the universe's, encoded and decoded as stored.
func snapshotOf(t *testing.T, hs *harness, u *Universe) []syncer.Update {
	t.Helper()
	ready := true
	base := []api.Resource{
		&api.ClusterInformation{TypeMeta: api.TypeMeta{Kind: "ClusterInformation", APIVersion: api.APIVersion},
			ObjectMeta: api.ObjectMeta{Name: "default"}, Spec: api.ClusterInformationSpec{DatastoreReady: &ready}},
		&api.Node{TypeMeta: api.TypeMeta{Kind: "Node", APIVersion: api.APIVersion}, ObjectMeta: api.ObjectMeta{Name: localNode},
			Spec: api.NodeSpec{BGP: &api.NodeBGPSpec{IPv4Address: hs.h.Addr.String() + "/24"}}},
	}
	var out []syncer.Update
	for i, r := range append(base, u.Objects()...) {
		key, val, err := encode(r)
		if err != nil {
			t.Fatal(err)
		}
		id := datastore.IDOf(key)
		v, err := syncer.FailClosedDecoder(id, val, int64(i+1))
		if err != nil {
			t.Fatalf("decoding %s: %v", key, err)
		}
		out = append(out, syncer.Update{ID: id, Value: v, Revision: int64(i + 1)})
	}
	return out
}

// compareTrace traces the probe and says how it differs from the kernel's fate and the
// evaluator's decisions ("" when it does not).
func compareTrace(tr *trace.Tracer, o outcome) (*trace.Trace, string) {
	p := o.Packet
	req := trace.Request{Src: p.Src.String(), Dst: p.Dst.String(), Proto: p.Proto, Port: p.DstPort, SrcPort: p.SrcPort,
		ICMPType: p.ICMPType, ICMPCode: p.ICMPCode}
	t, err := tr.Trace(req)
	if err != nil {
		return nil, err.Error()
	}
	hop := hopOn(t.Enforced.Hops)
	if hop == nil {
		return t, fmt.Sprintf("no hop on %s: %+v", localNode, t.Enforced.Hops)
	}
	if got := hop.Fate == sim.FateSent; got != o.Got {
		return t, fmt.Sprintf("kernel delivered %v, trace says %v (%s)\n%s", o.Got, hop.Fate, hop.OIF, hop.Result)
	}
	got, want := traceDecisions(hop), evaluatorDecisions(o.Decisions)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		return t, fmt.Sprintf("trace names %q, evaluator %q\n%s", got, want, hop.Result)
	}
	return t, ""
}

// traceKinds are the evaluator's names of the kinds the trace names.
var traceKinds = map[flowlog.PolicyKind]string{
	flowlog.KindGlobalNetworkPolicy: "GlobalNetworkPolicy", flowlog.KindCalicoNetworkPolicy: "NetworkPolicy",
	flowlog.KindProfile: "Profile", flowlog.KindEndOfTier: "EndOfTier",
}

func traceDecisions(h *trace.Hop) []string {
	var out []string
	for _, r := range slices.Concat(h.Egress, h.Ingress) {
		d := Decision{Tier: r.Tier, Kind: traceKinds[r.Kind], Namespace: r.Namespace, Name: r.Name, Rule: r.Index,
			Action: r.Action.String()}
		if r.Kind == flowlog.KindProfile && r.Name == NoProfileMatched {
			d.Rule = -1
		}
		out = append(out, d.String())
	}
	return out
}

func evaluatorDecisions(ds []Decision) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.String()
	}
	return out
}
