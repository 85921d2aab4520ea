package ruleid

import (
	"fmt"

	"github.com/calico-host/calico-host/pkg/flowlog"
)

// Path is the rules one packet met in one direction, in the order NFLOG
// reported them: the passes of the tiers it left, the ends of tiers whose
// policies were all staged, then the verdict.
type Path []RuleID

// IsVerdict says whether the rule decides the packet: an allow or deny of
// an enforced policy or profile, a tier's default deny, or "no profile
// matched". Passes and staged policies' rules do not.
func (r RuleID) IsVerdict() bool {
	return !r.Kind.Staged() && (r.Action == flowlog.Allow || r.Action == flowlog.Deny)
}

// Verdict returns the path's deciding rule, if it got that far.
func (p Path) Verdict() (RuleID, bool) {
	if len(p) == 0 || !p[len(p)-1].IsVerdict() {
		return RuleID{}, false
	}
	return p[len(p)-1], true
}

// Latest returns the part of the path a flow reports: the rules after the last decision but
// one, up to the last. A packet crossing two policed chains in one direction (a workload's
// egress, then a host endpoint's forward policy) meets two decisions; the Assembler ends a path
// at each, and the collector keeps a direction's latest complete path, as Project Calico's
// collector replaces a rule trace that conflicts with the one it holds; rules after the last
// decision (a host endpoint's forward tiers that all passed) never complete a path. A decision
// is an allow or deny of any policy (staged ones decide in the pending evaluation). A path
// without one is returned whole.
func (p Path) Latest() Path {
	end := len(p) - 1
	for end >= 0 && !p[end].decides() {
		end--
	}
	if end < 0 {
		return p
	}
	start := end - 1
	for start >= 0 && !p[start].decides() {
		start--
	}
	return p[start+1 : end+1]
}

func (r RuleID) decides() bool { return r.Action == flowlog.Allow || r.Action == flowlog.Deny }

// Enforced returns the policy hits a flow reports for a complete path: every
// rule except an end of tier that passed (felix's bookkeeping for tiers with
// only staged policies), numbered from 0. An end of tier names the policy
// that triggered it: trigger returns the last policy of the tier that
// applied to the endpoint in this direction.
func (p Path) Enforced(trigger func(tier string) (Policy, bool)) ([]flowlog.PolicyHit, error) {
	if _, ok := p.Verdict(); !ok {
		return nil, fmt.Errorf("path %v has no verdict", p)
	}
	hits := make([]flowlog.PolicyHit, 0, len(p))
	for _, r := range p {
		if r.Kind == flowlog.KindEndOfTier && r.Action == flowlog.Pass {
			continue
		}
		var by Policy
		if r.Kind == flowlog.KindEndOfTier {
			var ok bool
			if by, ok = trigger(r.Tier); !ok {
				return nil, fmt.Errorf("end of tier %q: no policy of the tier applies", r.Tier)
			}
		}
		h, err := r.Hit(len(hits), by)
		if err != nil {
			return nil, err
		}
		hits = append(hits, h)
	}
	return hits, nil
}

type pathKey struct {
	tuple flowlog.Tuple
	dir   Direction
}

// Assembler gathers the NFLOG hits of packets into paths, by tuple and
// direction: the hits of one packet arrive in order on its direction's
// group, those of other connections may come between them. Not safe for
// concurrent use.
type Assembler struct {
	open map[pathKey]openPath
	max  int
	gen  uint64 // Expire calls so far
}

// openPath is an unfinished path and the Expire generation it began in.
type openPath struct {
	hits Path
	gen  uint64
}

// NewAssembler holds at most maxOpen unfinished paths (a packet's path
// stays unfinished when NFLOG lost its verdict, or when it had none: a
// host endpoint's forward tiers that all passed; Forget and Expire drop
// them); past that the hits of new paths are dropped.
func NewAssembler(maxOpen int) *Assembler {
	return &Assembler{open: map[pathKey]openPath{}, max: maxOpen}
}

// Add records that a packet of t met r. When r is the verdict it returns
// the packet's complete path.
func (a *Assembler) Add(t flowlog.Tuple, r RuleID) (Path, bool) {
	k := pathKey{t, r.Direction}
	p, open := a.open[k]
	if !open {
		p.gen = a.gen
	}
	p.hits = append(p.hits, r)
	if r.IsVerdict() {
		delete(a.open, k)
		return p.hits, true
	}
	if open || len(a.open) < a.max {
		a.open[k] = p
	}
	return nil, false
}

// Open returns the number of unfinished paths.
func (a *Assembler) Open() int { return len(a.open) }

// Forget drops the unfinished paths of t (its conntrack entry went).
func (a *Assembler) Forget(t flowlog.Tuple) {
	delete(a.open, pathKey{t, Ingress})
	delete(a.open, pathKey{t, Egress})
}

// Expire drops the paths that were already open at the previous call (the
// collector calls it at each flush): the hits of one packet arrive
// together, so such a path will not complete, and kept it would prefix
// the path of the next packet of its tuple (ICMP and bare IP protocols
// reuse tuples).
func (a *Assembler) Expire() {
	for k, p := range a.open {
		if p.gen < a.gen {
			delete(a.open, k)
		}
	}
	a.gen++
}
