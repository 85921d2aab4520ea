package trace

import (
	"errors"
	"fmt"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/ruleset"
	"github.com/calico-host/calico-host/pkg/flowlog"
	"github.com/calico-host/calico-host/pkg/flowlog/ruleid"
	"github.com/calico-host/calico-host/pkg/nft/sim"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// Request is what to trace: the first packet of a connection from Src to Dst (an endpoint,
// host or node name, or an address), of protocol Proto (flowlog.ProtoTCP, ...) to port Port
// (ignored for ICMP), from source port SrcPort (0: 40000); an ICMP packet is of type ICMPType
// and code ICMPCode (0 and 0: an echo request).
type Request struct {
	Src, Dst           string
	Proto              uint8
	Port, SrcPort      uint16
	ICMPType, ICMPCode uint8
}

// Trace is the verdicts of a request, enforced and pending.
type Trace struct {
	Src, Dst Place
	Proto    uint8
	Port     uint16
	Enforced Verdict
	Pending  Verdict
	req      Request
}

// Verdict is what the hosts on the way do to the packet in one scope.
type Verdict struct {
	Scope   Scope
	Hops    []Hop
	Allowed bool // no host dropped it
}

// Hop is the packet's way through one host: the rules that decided it in each policy
// direction (the source's egress policy on its host, the destination's ingress policy on
// its host; host endpoints' where they apply), and its fate there. Every host on the way has
// a hop, also after one that dropped the packet.
type Hop struct {
	Host string
	// Unreached: an earlier host dropped the packet; this hop says what this host would do
	// with it.
	Unreached bool
	Fate      sim.Fate
	OIF       string
	Egress    ruleid.Path
	Ingress   ruleid.Path
	// Hits are the policy hits of each direction, as a flow log reports them.
	EgressHits, IngressHits []flowlog.PolicyHit
	// Warnings say what on this host makes the trace differ from what a user may expect
	// (an endpoint felix does not police).
	Warnings []string
	Result   *sim.Result // every step, for a detailed print
}

// Run traces req over a datastore snapshot (every key's update, as a syncer's snapshot holds
// them): for each host on the way, calc computes that host's model (enforced, and with staged
// policies enforced for the pending verdict), the ruleset builder renders its tables and the
// simulator runs the packet through them.
func Run(ups []syncer.Update, req Request, log zerolog.Logger) (*Trace, error) {
	return New(ups, log).Trace(req)
}

// Tracer traces requests over one datastore snapshot, building each host's models once. Not
// safe for concurrent use.
type Tracer struct {
	ups    []syncer.Update
	snap   *snapshot
	log    zerolog.Logger
	models map[modelKey]*hostModel
}

type modelKey struct {
	host  string
	scope Scope
}

// New returns a Tracer of the snapshot.
func New(ups []syncer.Update, log zerolog.Logger) *Tracer {
	return &Tracer{ups: ups, snap: indexSnapshot(ups), log: log, models: map[modelKey]*hostModel{}}
}

// Trace traces one request (see Run).
func (tr *Tracer) Trace(req Request) (*Trace, error) {
	v6 := family(req.Src, req.Dst)
	src, err := tr.snap.place(req.Src, v6)
	if err != nil {
		return nil, fmt.Errorf("source: %w", err)
	}
	dst, err := tr.snap.place(req.Dst, src.Addr.Is6())
	if err != nil {
		return nil, fmt.Errorf("destination: %w", err)
	}
	if src.Host == "" && dst.Host == "" {
		return nil, errors.New("neither end is on a host of the datastore")
	}
	t := &Trace{Src: src, Dst: dst, Proto: req.Proto, Port: req.Port, req: req}
	for _, scope := range []Scope{Enforced, Pending} {
		v, err := tr.verdict(t, scope)
		if err != nil {
			return nil, fmt.Errorf("%v: %w", scope, err)
		}
		*t.verdictOf(scope) = v
	}
	return t, nil
}

// model returns the model of host in scope, built on first use.
func (tr *Tracer) model(host string, scope Scope) (*hostModel, error) {
	k := modelKey{host, scope}
	if h, ok := tr.models[k]; ok {
		return h, nil
	}
	h, err := buildHost(tr.ups, tr.snap, host, scope, tr.log)
	if err == nil {
		tr.models[k] = h
	}
	return h, err
}

func (t *Trace) verdictOf(s Scope) *Verdict {
	if s == Pending {
		return &t.Pending
	}
	return &t.Enforced
}

// hosts are the hosts the packet crosses, in order.
func (t *Trace) hosts() []string {
	var out []string
	for _, h := range []string{t.Src.Host, t.Dst.Host} {
		if h != "" && (len(out) == 0 || out[0] != h) {
			out = append(out, h)
		}
	}
	return out
}

func (tr *Tracer) verdict(t *Trace, scope Scope) (Verdict, error) {
	v := Verdict{Scope: scope, Allowed: true}
	for _, host := range t.hosts() {
		h, err := tr.model(host, scope)
		if err != nil {
			return v, err
		}
		hop, err := h.hop(t)
		if err != nil {
			return v, err
		}
		hop.Unreached = !v.Allowed
		v.Hops = append(v.Hops, hop)
		if hop.Fate != sim.FateDelivered && hop.Fate != sim.FateSent {
			v.Allowed = false
		}
	}
	return v, nil
}

// hop runs the packet through host h and reads its path.
func (h *hostModel) hop(t *Trace) (Hop, error) {
	res, err := h.run(t.Src, t.Dst, firstPacket(t.req))
	if err != nil {
		return Hop{}, fmt.Errorf("host %s: %w", h.name, err)
	}
	paths := pathOf(res, h.off.RuleIDs)
	hop := Hop{Host: h.name, Fate: res.Fate, OIF: res.OIF, Egress: paths[ruleid.Egress],
		Ingress: paths[ruleid.Ingress], Result: res}
	for _, p := range []Place{t.Src, t.Dst} {
		if w, ok := h.unpoliced(p); ok {
			hop.Warnings = append(hop.Warnings, w)
		}
	}
	// Hits are flow-log attribution: an end of tier whose trigger is not known (a host
	// endpoint's forward chain) leaves them out rather than fail the trace.
	hop.EgressHits, _ = hitsOf(hop.Egress, h.trigger(t.Src, ruleid.Egress))
	hop.IngressHits, _ = hitsOf(hop.Ingress, h.trigger(t.Dst, ruleid.Ingress))
	return hop, nil
}

// hitsOf returns the policy hits of a path as a flow reports them: its latest part (the last
// chain that decided, ruleid.Path.Latest), numbered from 0, pending rules included; an end of
// tier that passed is left out (felix's bookkeeping).
func hitsOf(p ruleid.Path, trigger func(string) (ruleid.Policy, bool)) ([]flowlog.PolicyHit, error) {
	var out []flowlog.PolicyHit
	for _, r := range p.Latest() {
		if r.Kind == flowlog.KindEndOfTier && r.Action == flowlog.Pass {
			continue
		}
		by, _ := trigger(r.Tier)
		h, err := r.Hit(len(out), by)
		if err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, nil
}

// trigger returns the policy an end of tier names for the endpoint at place p on this host in
// direction d: for the enforced verdict the last policy of the tier that applies to it (felix's
// TierDefaultActionRuleID, flow logs' enforced trace), for the pending one the first (Project
// Calico's app-policy checker names the first policy that did not match).
func (h *hostModel) trigger(p Place, d ruleid.Direction) func(string) (ruleid.Policy, bool) {
	tiers := h.tiersOf(p)
	return func(tier string) (ruleid.Policy, bool) {
		for _, t := range tiers {
			pols := t.IngressPolicies
			if d == ruleid.Egress {
				pols = t.EgressPolicies
			}
			if t.Name != tier || len(pols) == 0 {
				continue
			}
			if h.scope == Pending {
				return ruleset.RulePolicy(pols[0]), true
			}
			return ruleset.RulePolicy(pols[len(pols)-1]), true
		}
		return ruleid.Policy{}, false
	}
}

// tiersOf returns the tiers of the endpoint at p on this host: a workload's, else the host
// endpoints' (the first that has tiers).
func (h *hostModel) tiersOf(p Place) []calc.TierInfo {
	if p.Host != h.name {
		return nil
	}
	for _, ep := range h.off.Endpoints {
		if p.Workload() && ep.Name == p.Iface {
			return ep.Tiers
		}
	}
	for _, ep := range h.off.HostEndpoints {
		if !p.Workload() && len(ep.Tiers) > 0 {
			return ep.Tiers
		}
	}
	return nil
}
