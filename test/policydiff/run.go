package policydiff

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/calico-host/calico-host/internal/backoff"
	"github.com/calico-host/calico-host/pkg/api"
)

// scenario is one random universe and the probes sent through it.
type scenario struct {
	Seed   uint64
	Index  int
	U      *Universe
	Ev     *Evaluator
	Probes []Probe
}

// newScenario draws scenario idx of a seed: the same pair always gives the same scenario.
func newScenario(seed uint64, idx, probes int) (*scenario, error) {
	g := &gen{r: rand.New(rand.NewPCG(seed, uint64(idx)))}
	u := g.Universe()
	(&gen{r: rand.New(rand.NewPCG(seed, uint64(idx)^hostStream))}).hosts(u)
	addHarnessObjects(u, idx, g.chance(0.75))
	return newScenarioFrom(seed, idx, u, g, probes)
}

func newScenarioFrom(seed uint64, idx int, u *Universe, g *gen, probes int) (*scenario, error) {
	ev, err := NewEvaluator(u)
	if err != nil {
		return nil, err
	}
	sc := &scenario{Seed: seed, Index: idx, U: u, Ev: ev}
	pg := &probeGen{gen: g, seen: map[string]bool{}, sport: 30000}
	for range probes {
		sc.add(pg.probe())
	}
	return sc, nil
}

// add evaluates a probe and appends it.
func (sc *scenario) add(p Probe) {
	v := sc.Ev.Evaluate(p.Packet)
	p.Want, p.Trace, p.Decisions = v.Delivered, v.Trace, v.Decisions
	sc.Probes = append(sc.Probes, p)
}

// Objects returns every object of the universe, in a stable order.
func (u *Universe) Objects() []api.Resource {
	var out []api.Resource
	for _, o := range u.Tiers {
		out = append(out, o)
	}
	for _, o := range u.GNPs {
		out = append(out, o)
	}
	for _, o := range u.NPs {
		out = append(out, o)
	}
	for _, o := range u.Profiles {
		out = append(out, o)
	}
	for _, o := range u.GNSs {
		out = append(out, o)
	}
	for _, o := range u.NSs {
		out = append(out, o)
	}
	for _, o := range u.WEPs {
		out = append(out, o)
	}
	for _, o := range u.HEPs {
		out = append(out, o)
	}
	return out
}

// YAML renders the universe as a calicoctl-style multi-document YAML.
func (u *Universe) YAML() string {
	var docs []string
	for _, o := range u.Objects() {
		b, err := yaml.Marshal(o)
		if err != nil {
			docs = append(docs, "# "+err.Error())
			continue
		}
		docs = append(docs, string(b))
	}
	return strings.Join(docs, "---\n")
}

// outcome is a probe with what the kernel did.
type outcome struct {
	Probe
	Got bool
}

// Mismatch reports whether the dataplane disagreed with the evaluator.
func (o outcome) Mismatch() bool { return o.Got != o.Want }

// runner drives scenarios through a harness.
type runner struct {
	hs    *harness
	log   *eventLog // nil unless POLICYDIFF_DEBUG
	tag   uint32
	sport uint16
}

func (rn *runner) nextTag() uint32 {
	rn.tag++
	return rn.tag
}

// nextSport gives a control packet a fresh source port (20000-29999).
func (rn *runner) nextSport() uint16 {
	rn.sport = 20000 + (rn.sport+1)%10000
	return rn.sport
}

type sent struct {
	p   Probe
	tag uint32
}

func (rn *runner) send(p Probe) (sent, error) {
	tag := rn.nextTag()
	return sent{p: p, tag: tag}, rn.hs.tx[p.From].Send(buildPacket(p.Packet, tag))
}

func (rn *runner) arrived(s sent) bool { return rn.hs.rx.Arrived(s.p.To, s.p.Packet, s.tag) }

// Run applies a scenario, waits until felix has programmed it, sends its probes and reports
// what arrived.
func (rn *runner) Run(ctx context.Context, sc *scenario) ([]outcome, error) {
	objs, sentinel := splitSentinel(sc.U.Objects())
	if err := rn.hs.apply(ctx, objs, sentinel); err != nil {
		return nil, err
	}
	rn.log.Printf("scenario %d written", sc.Index)
	if err := rn.waitSentinel(ctx, sc); err != nil {
		return nil, err
	}
	rn.log.Printf("scenario %d sentinel arrived", sc.Index)
	if err := rn.hs.flushConntrack(); err != nil {
		return nil, err
	}
	rn.log.Printf("scenario %d conntrack flushed, sending probes", sc.Index)
	var probes []sent
	for _, p := range sc.Probes {
		s, err := rn.send(p)
		if err != nil {
			return nil, fmt.Errorf("sending %s: %w", p.Packet, err)
		}
		probes = append(probes, s)
	}
	rn.log.Printf("scenario %d probes sent", sc.Index)
	controls, err := rn.sendControls(sc)
	if err != nil {
		return nil, err
	}
	rn.log.Printf("scenario %d controls sent", sc.Index)
	rn.waitArrivals(ctx, append(probes, controls...), 15*time.Second)
	// Everything sent before the controls had its chance: give stragglers a short window more.
	if err := backoff.Sleep(ctx, 300*time.Millisecond); err != nil {
		return nil, err
	}
	return rn.collect(ctx, probes)
}

// splitSentinel takes the sentinel policy out of a scenario's objects.
func splitSentinel(objs []api.Resource) (rest []api.Resource, sentinel api.Resource) {
	for _, o := range objs {
		if p, ok := o.(*api.GlobalNetworkPolicy); ok && p.Name == controlTier+".sentinel" {
			sentinel = o
			continue
		}
		rest = append(rest, o)
	}
	return rest, sentinel
}

// sentinelProbe is a UDP packet from sentinel 0 to sentinel 1 on a port.
func (rn *runner) sentinelProbe(fam int, port uint16) Probe {
	s := sentinelSlots()
	return Probe{Packet: Packet{Src: s[0].addr(fam), Dst: s[1].addr(fam), Proto: protoUDP, SrcPort: rn.nextSport(), DstPort: port},
		From: s[0].Name, To: s[1].Name, Want: true}
}

// waitSentinel sends the scenario's sentinel packet until one arrives (60 s at most).
func (rn *runner) waitSentinel(ctx context.Context, sc *scenario) error {
	deadline := time.Now().Add(60 * time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		s, err := rn.send(rn.sentinelProbe(4+2*(i%2), sentinelPort(sc.Index)))
		if err != nil {
			return err
		}
		for range 10 {
			if err := backoff.Sleep(ctx, 20*time.Millisecond); err != nil {
				return err
			}
			if rn.arrived(s) {
				return nil
			}
		}
	}
	return fmt.Errorf("scenario %d: felix did not let the sentinel packet through within 60 s\nfelix log:\n%s", sc.Index, rn.hs.felixLog())
}

// sendControls sends, for every path and family the probes used, a UDP packet to the control
// port that the evaluator says is delivered, and one between the sentinels.
func (rn *runner) sendControls(sc *scenario) ([]sent, error) {
	seen := map[string]bool{}
	var out []sent
	for _, p := range sc.Probes {
		key := fmt.Sprint(p.From, p.To, p.Family())
		if seen[key] {
			continue
		}
		seen[key] = true
		c := Probe{Packet: Packet{Src: p.Src, Dst: p.Dst, Proto: protoUDP, SrcPort: rn.nextSport(), DstPort: controlPort}, From: p.From, To: p.To}
		if c.Want = sc.Ev.Evaluate(c.Packet).Delivered; !c.Want {
			continue
		}
		s, err := rn.send(c)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	s, err := rn.send(rn.sentinelProbe(4, controlPort))
	return append(out, s), err
}

// waitArrivals waits until every packet the evaluator delivers has arrived, or the timeout.
func (rn *runner) waitArrivals(ctx context.Context, list []sent, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		missing := false
		for _, s := range list {
			if s.p.Want && !rn.arrived(s) {
				missing = true
				break
			}
		}
		if !missing {
			return
		}
		backoff.Sleep(ctx, 20*time.Millisecond)
	}
}

// collect turns the arrivals into outcomes. A probe that should have arrived but did not is
// sent once more (same tuple, new tag) before it counts as dropped.
func (rn *runner) collect(ctx context.Context, probes []sent) ([]outcome, error) {
	var out []outcome
	var retry []int
	for _, s := range probes {
		o := outcome{Probe: s.p, Got: rn.arrived(s)}
		if o.Want && !o.Got {
			retry = append(retry, len(out))
		}
		out = append(out, o)
	}
	if len(retry) == 0 {
		return out, nil
	}
	var again []sent
	for _, i := range retry {
		s, err := rn.send(out[i].Probe)
		if err != nil {
			return nil, err
		}
		again = append(again, s)
	}
	rn.waitArrivals(ctx, again, 5*time.Second)
	for k, i := range retry {
		out[i].Got = rn.arrived(again[k])
	}
	return out, nil
}

// Recheck sends the given probes again (fresh tags, conntrack flushed) without changing the
// datastore, and reports what arrives: it tells a stale or wrong dataplane from a timing issue.
func (rn *runner) Recheck(ctx context.Context, probes []Probe) ([]outcome, error) {
	if err := rn.hs.flushConntrack(); err != nil {
		return nil, err
	}
	var list []sent
	for _, p := range probes {
		s, err := rn.send(p)
		if err != nil {
			return nil, err
		}
		list = append(list, s)
	}
	rn.waitArrivals(ctx, list, 5*time.Second)
	if err := backoff.Sleep(ctx, 500*time.Millisecond); err != nil {
		return nil, err
	}
	var out []outcome
	for _, s := range list {
		out = append(out, outcome{Probe: s.p, Got: rn.arrived(s)})
	}
	return out, nil
}
