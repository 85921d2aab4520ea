package ruleset

import (
	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/rules"
	"github.com/calico-host/calico-host/pkg/flowlog/ruleid"
)

// attribution owns the NFLOG prefixes of the tables (flow logs on; see rules.LogTo): which rule
// each prefix names, claimed by the owners whose chains carry it (policy members, profile
// chains; the end-of-tier and no-profile drops for good), and the ruleid.Table published with
// each build. A prefix names one rule at a time: a second rule with the same prefix (a policy
// whose tier changed, still held in the old tier by a group not yet rendered again) is rendered
// without its log statement, with a log line; it is rendered again with it once the prefix is
// free. With flow logs off it claims nothing and the tables are as without it.
type attribution struct {
	on  bool
	log zerolog.Logger

	claims  map[string]*claim // by prefix
	owned   map[any][]string  // the prefixes each owner claimed
	waiting map[string][]any  // owners refused a prefix, by prefix
	retry   []any             // owners whose refused prefix became free: render them again
	tiers   map[string]bool   // tiers whose end-of-tier drops are claimed
	table   *ruleid.Table     // the table of the last build; nil when a claim changed since
	// unattributed are, per owner, its verdict rules rendered without their log statement
	// (unnameable or clashing); refused is their sum.
	unattributed map[any]int
	refused      int
}

type claim struct {
	id     ruleid.RuleID
	owners int
}

func newAttribution(on bool, log zerolog.Logger) *attribution {
	a := &attribution{on: on, log: log, claims: map[string]*claim{}, owned: map[any][]string{},
		waiting: map[string][]any{}, tiers: map[string]bool{}, unattributed: map[any]int{}}
	if on {
		a.claimFixed(rules.NoProfileRuleIDs())
	}
	return a
}

// policy claims the prefixes of one direction of a policy for owner and returns where each calc
// rule logs (nil with flow logs off).
func (a *attribution) policy(owner any, id calc.PolicyID, egress bool, rs []calc.Rule) []rules.LogTo {
	if !a.on {
		return nil
	}
	ids, err := rules.PolicyRuleIDs(id, egress, rs)
	if err != nil {
		a.log.Warn().Str("policy", id.Tier+"/"+rules.PolicyName(id)).Err(err).
			Msg("Flow logs cannot name this policy's rules: they are enforced but not attributed")
	}
	a.tier(id.Tier)
	return a.claimAll(owner, ids, unnamed(err, rs))
}

// profile is policy for a profile.
func (a *attribution) profile(owner any, name string, egress bool, rs []calc.Rule) []rules.LogTo {
	if !a.on {
		return nil
	}
	ids, err := rules.ProfileRuleIDs(name, egress, rs)
	if err != nil {
		a.log.Warn().Str("profile", name).Err(err).
			Msg("Flow logs cannot name this profile's rules: they are enforced but not attributed")
	}
	return a.claimAll(owner, ids, unnamed(err, rs))
}

// unnamed is how many verdict rules of rs are left unattributed by err (all or none).
func unnamed(err error, rs []calc.Rule) int {
	if err == nil {
		return 0
	}
	n := 0
	for i := range rs {
		if rs[i].Action != calc.RuleLog {
			n++
		}
	}
	return n
}

// claimAll replaces owner's claims with ids (zero IDs claim nothing); unnamed of its verdict
// rules could not be named at all.
func (a *attribution) claimAll(owner any, ids []ruleid.RuleID, unnamed int) []rules.LogTo {
	a.release(owner)
	a.setUnattributed(owner, unnamed)
	out := make([]rules.LogTo, len(ids))
	var mine []string
	for i, r := range ids {
		if r == (ruleid.RuleID{}) {
			continue
		}
		p := r.Prefix()
		c := a.claims[p]
		switch {
		case c == nil:
			a.claims[p], a.table = &claim{id: r}, nil
			c = a.claims[p]
		case c.id != r:
			a.refuse(owner, p, r, c.id)
			continue
		}
		c.owners++
		mine = append(mine, p)
		out[i] = rules.LogToFor(r, p)
	}
	a.owned[owner] = mine
	return out
}

func (a *attribution) refuse(owner any, p string, r, have ruleid.RuleID) {
	a.setUnattributed(owner, a.unattributed[owner]+1)
	a.waiting[p] = append(a.waiting[p], owner)
	a.log.Warn().Str("prefix", p).Stringer("rule", r).Stringer("holder", have).
		Msg("Flow log prefix taken by another rule: this rule is enforced but not attributed until it is free")
}

// release drops owner's claims; a prefix no one claims any more leaves the table, and the
// owners refused it are to render again (retry).
func (a *attribution) release(owner any) {
	for _, p := range a.owned[owner] {
		c := a.claims[p]
		if c.owners--; c.owners > 0 {
			continue
		}
		delete(a.claims, p)
		a.table = nil
		a.retry = append(a.retry, a.waiting[p]...)
		delete(a.waiting, p)
	}
	delete(a.owned, owner)
	a.setUnattributed(owner, 0)
}

// setUnattributed records owner's count of verdict rules without their log statement.
func (a *attribution) setUnattributed(owner any, n int) {
	a.refused += n - a.unattributed[owner]
	if n == 0 {
		delete(a.unattributed, owner)
		return
	}
	a.unattributed[owner] = n
}

// tier claims the end-of-tier drops of tier for good (a handful per tier; a stale one names
// a rule no chain has any more, which no packet reports).
func (a *attribution) tier(name string) {
	if a.tiers[name] {
		return
	}
	a.tiers[name] = true
	ids, err := rules.EndpointRuleIDs(name)
	if err != nil {
		a.log.Warn().Str("tier", name).Err(err).Msg("Flow logs cannot name this tier: its end-of-tier drop is not attributed")
		return
	}
	a.claimFixed(ids)
}

func (a *attribution) claimFixed(ids []ruleid.RuleID) {
	for _, r := range ids {
		if a.claims[r.Prefix()] == nil {
			a.claims[r.Prefix()], a.table = &claim{id: r, owners: 1}, nil
		}
	}
}

// takeRetry returns the owners to render again and forgets them.
func (a *attribution) takeRetry() []any {
	out := a.retry
	a.retry = nil
	return out
}

// Table returns the prefix table of the tables as they are (a new one after any change; nil
// with flow logs off). The caller may hand it to other goroutines: it is never modified.
func (a *attribution) Table() *ruleid.Table {
	if !a.on {
		return nil
	}
	if a.table == nil {
		t := ruleid.NewTable()
		for _, c := range a.claims {
			if _, err := t.Add(c.id); err != nil { // cannot happen: one rule per prefix
				a.log.Error().Err(err).Msg("Flow log prefix table")
			}
		}
		a.table = t
	}
	return a.table
}
