package trace

import (
	"cmp"
	"slices"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/flowlog"
	"github.com/calico-host/calico-host/pkg/flowlog/ruleid"
	"github.com/calico-host/calico-host/pkg/nft/sim"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// PendingEvaluator gives flow logs their pending traces on one host: what the host's tables
// would decide for a connection if the staged policies were enforced (package flowlog's
// collector.Pending is its Evaluate). It is the trace's pipeline over the pending model, built
// once per datastore snapshot: felix builds a new one when policies change. Safe for use by one
// goroutine at a time.
type PendingEvaluator struct {
	snap *snapshot
	host *hostModel
}

// NewPending builds the pending model of host from a datastore snapshot.
func NewPending(ups []syncer.Update, host string, log zerolog.Logger) (*PendingEvaluator, error) {
	snap := indexSnapshot(ups)
	h, err := buildHost(ups, snap, host, Pending, log)
	if err != nil {
		return nil, err
	}
	return &PendingEvaluator{snap: snap, host: h}, nil
}

// Evaluate returns the pending policy hits of connection t in direction dir, evaluated for the
// local workload endpoint that applies that direction (the destination for ingress, the source
// for egress); ok is false when that end is not a local workload endpoint (as in felix, which
// evaluates staged policies for local workloads only) or no rule decided.
func (p *PendingEvaluator) Evaluate(t flowlog.Tuple, dir ruleid.Direction) (hits []flowlog.PolicyHit, ok bool) {
	src, dst := p.snap.placeOf(t.Src), p.snap.placeOf(t.Dst)
	local := dst
	if dir == ruleid.Egress {
		local = src
	}
	if local.Host != p.host.name || !local.Workload() || !t.Valid() {
		return nil, false
	}
	res, err := p.host.run(src, dst, tupleSpec(t))
	if err != nil {
		return nil, false
	}
	path := pathOf(res, p.host.off.RuleIDs)[dir]
	if len(path) == 0 {
		return nil, false
	}
	hits, err = hitsOf(path, p.host.trigger(local, dir))
	return hits, err == nil
}

// tupleSpec is the first packet of t (for ICMP, its ports carry the echo identifier and
// type<<8|code: flowlog.ICMPPorts).
func tupleSpec(t flowlog.Tuple) sim.IPSpec {
	s := sim.IPSpec{Proto: t.Proto, SPort: t.SrcPort, DPort: t.DstPort, ID: 1}
	if t.Proto == flowlog.ProtoICMP || t.Proto == flowlog.ProtoICMPv6 {
		s.ICMPID, s.ICMPType, s.ICMPCode = t.SrcPort, uint8(t.DstPort>>8), uint8(t.DstPort)
	}
	return s
}

// PendingSource keeps what felix's syncer delivered (the datastore's resources) and builds the
// pending evaluator of one host from it on demand, again only after something changed. Felix
// feeds it the syncer's messages on its calc loop and hands Evaluator().Evaluate to the
// collector; a rebuild costs a calc run and a ruleset build for the host, so the caller paces
// them (felix re-evaluates every 0.8 × FlowLogsFlushInterval). Not safe for concurrent use.
type PendingSource struct {
	host  string
	log   zerolog.Logger
	held  map[string]syncer.Update
	dirty bool
	cur   *PendingEvaluator
}

// NewPendingSource returns an empty source for host.
func NewPendingSource(host string, log zerolog.Logger) *PendingSource {
	return &PendingSource{host: host, log: log, held: map[string]syncer.Update{}}
}

// OnMessage records a syncer message: a snapshot replaces everything held.
func (s *PendingSource) OnMessage(m syncer.Message) {
	if m.Snapshot {
		clear(s.held)
		s.dirty = true
	}
	for _, u := range m.Updates {
		k := u.ID.Key()
		if u.Value == nil {
			delete(s.held, k)
		} else {
			s.held[k] = u
		}
		s.dirty = true
	}
}

// Evaluator returns the pending evaluator of what is held, built again when a message changed
// it since the last call.
func (s *PendingSource) Evaluator() (*PendingEvaluator, error) {
	if !s.dirty && s.cur != nil {
		return s.cur, nil
	}
	ups := make([]syncer.Update, 0, len(s.held))
	for _, u := range s.held {
		ups = append(ups, u)
	}
	slices.SortFunc(ups, func(a, b syncer.Update) int { return cmp.Compare(a.ID.Key(), b.ID.Key()) })
	p, err := NewPending(ups, s.host, s.log)
	if err != nil {
		return nil, err
	}
	s.cur, s.dirty = p, false
	return p, nil
}
