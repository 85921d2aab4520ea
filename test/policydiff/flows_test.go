package policydiff

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/calico-host/calico-host/internal/backoff"
	"github.com/calico-host/calico-host/pkg/flowlog"
	"github.com/calico-host/calico-host/pkg/flowlog/ruleid"
	"github.com/calico-host/calico-host/pkg/trace"
)

// How TestTraceAgreesWithPackets compares the trace with felix's flow log: felix flushes every
// traceFlowFlush; before a scenario's probes the harness flushes conntrack and is quiet for
// flowQuiet, so that the connections of the scenario before are reported over in intervals
// that end before the quiet time does. The probes reuse tuples from one scenario to the next
// (their ports are drawn from a few): a line that counted no packet is a probe's only if a
// connection started in it and none completed (a former connection that ends shows as one that
// starts and completes when its endpoints' names changed; a probe conntrack did not hold, such
// as a TCP SYN the workload reset, counts no packet and completes only after 10 s).
const (
	traceFlowFlush = time.Second
	flowQuiet      = 3 * traceFlowFlush
)

// flowKey is what names a probe's flow line: the reporter, both ends (a local workload by its
// workload name, any other end as "*": the flow names it by what it finds at the address, a
// network set, a remote workload or a network), the protocol and the destination port.
type flowKey struct {
	reporter flowlog.Reporter
	src, dst string
	proto    string
	port     uint16
}

func (k flowKey) String() string {
	return fmt.Sprintf("%v %s>%s %s/%d", k.reporter, k.src, k.dst, k.proto, k.port)
}

// localNames are the flow names of the local workloads (topology.go's slots: workload "pdiff<slot>").
var localNames = func() map[string]bool {
	out := map[string]bool{}
	for _, s := range localSlots() {
		out["pdiff"+s.Name] = true
	}
	return out
}()

func endName(name string) string {
	if localNames[name] {
		return name
	}
	return "*"
}

// probeFlowKeys are the keys of a probe's flow lines: reporter Src when it leaves a local
// workload, Dst when it reaches one.
func probeFlowKeys(p Probe) map[flowlog.Reporter]flowKey {
	k := flowKey{src: endName("pdiff" + p.From), dst: endName("pdiff" + p.To), proto: flowlog.ProtoName(p.Proto), port: p.DstPort}
	switch p.Proto {
	case flowlog.ProtoICMP, flowlog.ProtoICMPv6:
		_, k.port = flowlog.ICMPPorts(0, p.ICMPType, p.ICMPCode)
	case flowlog.ProtoTCP, flowlog.ProtoUDP, protoSCTP:
	default:
		k.port = 0
	}
	out := map[flowlog.Reporter]flowKey{}
	if k.src != "*" {
		k.reporter = flowlog.Src
		out[flowlog.Src] = k
	}
	if k.dst != "*" {
		k.reporter = flowlog.Dst
		out[flowlog.Dst] = k
	}
	return out
}

func lineKey(f flowlog.Flow) flowKey {
	return flowKey{reporter: f.Reporter, src: endName(f.SourceName), dst: endName(f.DestName), proto: f.Proto, port: f.DestPort}
}

// flowWant is what a probe's flow line must say: the trace's hits for the reporter's direction,
// enforced and pending.
type flowWant struct {
	probe             Probe
	enforced, pending []flowlog.PolicyHit
	path              ruleid.Path // the trace's whole path of the direction, for messages
}

// flowWants collects, for the probes checked against the trace, the flow lines they must
// produce: one per reporter whose direction the trace's hits end with a decision, for the keys
// only one probe of the scenario has (a flow aggregates the connections of its key).
type flowWants struct {
	uses  map[flowKey]int
	wants map[flowKey]flowWant
}

func newFlowWants(probes []Probe) *flowWants {
	w := &flowWants{uses: map[flowKey]int{}, wants: map[flowKey]flowWant{}}
	for _, p := range probes {
		for _, k := range probeFlowKeys(p) {
			w.uses[k]++
		}
	}
	return w
}

// add records what probe p's lines must carry, from its trace t.
func (w *flowWants) add(p Probe, t *trace.Trace) {
	enf, pend := hopOn(t.Enforced.Hops), hopOn(t.Pending.Hops)
	if enf == nil || pend == nil {
		return
	}
	for r, k := range probeFlowKeys(p) {
		want := flowWant{probe: p, enforced: enf.IngressHits, pending: pend.IngressHits, path: enf.Ingress}
		if r == flowlog.Src {
			want.enforced, want.pending, want.path = enf.EgressHits, pend.EgressHits, enf.Egress
		}
		if w.uses[k] == 1 && decided(want.enforced) {
			w.wants[k] = want
		}
	}
}

// decided says whether hits end with a decision: a path without one (a last tier that passed
// with no profile after it) never completes in the collector, and no flow reports it.
func decided(hits []flowlog.PolicyHit) bool {
	if len(hits) == 0 {
		return false
	}
	a := hits[len(hits)-1].Action
	return a == flowlog.Allow || a == flowlog.Deny
}

func hopOn(hops []trace.Hop) *trace.Hop {
	for i := range hops {
		if hops[i].Host == localNode {
			return &hops[i]
		}
	}
	return nil
}

// check waits until the flow log holds a line for every wanted key, among the connections
// started in intervals from since on, and compares each with the trace. It returns the
// differences.
func (w *flowWants) check(ctx context.Context, file string, since time.Time) []string {
	deadline := time.Now().Add(5*traceFlowFlush + 5*time.Second)
	for {
		got := readFlowLines(file, since)
		var missing []string
		for k, want := range w.wants {
			if len(got[k]) == 0 {
				missing = append(missing, fmt.Sprintf("%s (%s; trace %s)", k, want.probe.Packet, describeHits(want.enforced)))
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) || backoff.Sleep(ctx, 200*time.Millisecond) != nil {
			slices.Sort(missing)
			return append(w.compare(got), prefixAll("no flow line for ", missing)...)
		}
	}
}

func (w *flowWants) compare(got map[flowKey][]flowlog.Flow) []string {
	var out []string
	for k, want := range w.wants {
		for _, f := range got[k] {
			we, wp := describeHits(want.enforced), describeHits(want.pending)
			if ge, gp := describeHits(f.Policies.Enforced), describeHits(f.Policies.Pending); ge != we || gp != wp {
				out = append(out, fmt.Sprintf("%s (%s): flow log enforced %s pending %s; trace %s pending %s (path %v)",
					k, want.probe.Packet, ge, gp, we, wp, want.path))
			}
		}
	}
	slices.Sort(out)
	return out
}

func prefixAll(prefix string, list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = prefix + s
	}
	return out
}

// describeHits names each hit as a flow log carries it.
func describeHits(hits []flowlog.PolicyHit) string {
	var parts []string
	for _, h := range hits {
		s := fmt.Sprintf("%v %s %s/%s rule %d %v (policy %d)", h.Kind, h.Tier, h.Namespace, h.Name, h.RuleIndex, h.Action, h.PolicyIndex)
		if h.Trigger != nil {
			s += fmt.Sprintf(" trigger %v %s/%s", h.Trigger.Kind, h.Trigger.Namespace, h.Trigger.Name)
		}
		parts = append(parts, s)
	}
	return "[" + strings.Join(parts, "; ") + "]"
}

// readFlowLines reads felix's flow log: the lines of intervals that started at since or later
// and that are a probe's (see flowQuiet), by key.
func readFlowLines(file string, since time.Time) map[flowKey][]flowlog.Flow {
	out := map[flowKey][]flowlog.Flow{}
	f, err := os.Open(file)
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var fl flowlog.Flow
		if json.Unmarshal(sc.Bytes(), &fl) != nil || fl.StartTime.Before(since) || !probeLine(fl) {
			continue
		}
		out[lineKey(fl)] = append(out[lineKey(fl)], fl)
	}
	return out
}

func probeLine(f flowlog.Flow) bool {
	return f.PacketsIn+f.PacketsOut > 0 || (f.NumConnectionsStarted > 0 && f.NumConnectionsCompleted == 0)
}
