package dataplane

import (
	"slices"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/rules"
	"github.com/calico-host/calico-host/pkg/nft"
)

// Policy groups and profiles. An endpoint chain jumps to a chain per policy group (consecutive
// policies of a tier with the same selector) and per profile. A group chain holds its policies'
// rules inline, rendered per IP version; a policy whose inline copies would cost more lines than
// a chain of its own (it is in many groups and has many rules: rules.InlineCheaper) is kept out
// of line, in its group-of-one chain, which its groups jump to. So the tables never hold more
// than one full copy of a policy's rules per group and never more lines for a policy than its
// own chain would cost.

// refEntry is a group or profile chain in the tables, with what refers to it: workload chains
// and the groups that keep one of their members out of line in it (counted), host endpoint
// chains (volatile: marked on every build).
type refEntry struct {
	ref      rules.Ref
	users    int
	hostRefd bool
	profile  *calc.Profile  // the value a profile chain was rendered from (nil: calc never sent it)
	sets     []rules.SetUse // calc IP sets the chain's rules look up
	outOf    []string       // group-of-one chains this group jumps to (out-of-line members)
	// protoChains are the protocol chains a group split into, per table (rules.GroupChains).
	protoChains [2][]string
}

// memberKey is a policy as a member of groups: its rules of one direction in one layer.
type memberKey struct {
	layer  rules.Layer
	egress bool
	id     calc.PolicyID
}

// memberEntry is a member's rendering (per version index), the groups holding it and whether
// they hold it inline.
type memberEntry struct {
	src      *calc.Policy // nil: calc never sent the policy (it matches nothing)
	rendered [2]rules.Rendered
	groups   map[string]bool // chains of the groups holding it, its group of one included
	multi    int             // how many of them have two or more members
	inline   bool
}

// grouper groups the policies of a tier by the selectors the model has for them, recording
// what it saw of each (see regroupIfSelectorsChanged).
func (b *rulesetBuilder) grouper(m *model) rules.Grouper {
	return rules.GroupBySelector(func(id calc.PolicyID) (string, bool) {
		p := m.policies[id]
		seen := groupedBy{known: p != nil}
		if p != nil {
			seen.selector = p.Selector
		}
		b.groupedBy[id] = seen
		return seen.selector, seen.known
	})
}

// groupedBy is what the grouper saw of a policy: its selector, or that it was unknown.
type groupedBy struct {
	selector string
	known    bool
}

// regroupIfSelectorsChanged makes every endpoint render again (the grouping of their tiers may
// change) when a policy they were grouped by changed its selector, appeared or went (rare). It
// looks only at the policies that changed.
func (b *rulesetBuilder) regroupIfSelectorsChanged(m *model) {
	changed := false
	for id := range m.changedPolicies {
		seen, ok := b.groupedBy[id]
		if !ok {
			continue
		}
		p := m.policies[id]
		changed = changed || seen.known != (p != nil) || p != nil && p.Selector != seen.selector
	}
	if !changed {
		return
	}
	clear(b.groupedBy)
	for id, e := range b.weps {
		e.stale = true // renders again
		m.changedWEPs[id] = true
	}
	m.volatileChanged = true // host endpoint chains too
}

// addRef counts a reference to a group or profile chain from a workload chain (host false) or
// marks one from a host endpoint chain, adding the chain when it becomes referenced.
func (b *rulesetBuilder) addRef(r rules.Ref, host bool) {
	name := r.Chain()
	e := b.refs[name]
	if e == nil {
		e = &refEntry{ref: r}
		b.refs[name] = e
		b.dirty[name] = true
		for _, id := range r.Group {
			b.joinGroup(memberKey{r.Layer, r.Egress, id}, name, len(r.Group) > 1)
		}
	} else if !slices.Equal(e.ref.Group, r.Group) && b.allKnown(r.Group) {
		b.repoint(name, e, r)
	}
	if host {
		e.hostRefd = true
	} else {
		e.users++
	}
}

// allKnown reports whether the model has every policy of ids.
func (b *rulesetBuilder) allKnown(ids []calc.PolicyID) bool {
	for _, id := range ids {
		if b.policies[id] == nil {
			return false
		}
	}
	return true
}

// repoint makes chain name, which e holds for other policies, hold those of r: a policy's
// chain is named without its tier (as Project Calico names it), so a policy that moved to
// another tier (calc removes its old ID and adds the new one) keeps its chain, which must now
// be rendered from the new ID (the old one matches nothing). It repoints only to policies the
// model has, so that an endpoint calc has not updated yet cannot point it back to the old ID.
func (b *rulesetBuilder) repoint(name string, e *refEntry, r rules.Ref) {
	for _, id := range e.ref.Group {
		b.leaveGroup(memberKey{e.ref.Layer, e.ref.Egress, id}, name, len(e.ref.Group) > 1)
	}
	e.ref.Group = r.Group
	for _, id := range r.Group {
		b.joinGroup(memberKey{r.Layer, r.Egress, id}, name, len(r.Group) > 1)
	}
	b.dirty[name] = true
}

// dropRef removes a counted reference; the chain goes (in finishRefs) when nothing refers to it.
func (b *rulesetBuilder) dropRef(name string) {
	if e := b.refs[name]; e != nil {
		e.users--
	}
}

// joinGroup records a policy as a member of group chain name.
func (b *rulesetBuilder) joinGroup(k memberKey, name string, multi bool) {
	me := b.members[k]
	if me == nil {
		me = &memberEntry{groups: map[string]bool{}, inline: true}
		b.members[k] = me
	}
	me.groups[name] = true
	if multi {
		me.multi++
	}
	b.placeDirty[k] = true
	if b.memberKeys[k.id] == nil {
		b.memberKeys[k.id] = map[memberKey]bool{}
	}
	b.memberKeys[k.id][k] = true
}

// leaveGroup removes a policy from group chain name; its other groups may now hold it inline.
func (b *rulesetBuilder) leaveGroup(k memberKey, name string, multi bool) {
	me := b.members[k]
	if me == nil {
		return
	}
	delete(me.groups, name)
	if multi {
		me.multi--
	}
	b.placeDirty[k] = true
	if len(me.groups) == 0 {
		delete(b.members, k)
		if delete(b.memberKeys[k.id], k); len(b.memberKeys[k.id]) == 0 {
			delete(b.memberKeys, k.id)
		}
	}
}

// finishRefs removes the chains nothing refers to any more, decides which members stay inline,
// and renders the group and profile chains that need it. Removing a group may leave a group of
// one unreferenced, so it repeats until nothing more goes.
func (b *rulesetBuilder) finishRefs(m *model) {
	for removed := true; removed; {
		removed = false
		for name, e := range b.refs {
			if e.users <= 0 && !e.hostRefd {
				b.removeRef(name, e)
				removed = true
			}
		}
		if !removed {
			removed = b.placeMembers(m)
		}
	}
	for name := range b.dirty {
		if e := b.refs[name]; e != nil {
			b.renderRef(name, e, m)
		}
	}
	clear(b.dirty)
}

func (b *rulesetBuilder) removeRef(name string, e *refEntry) {
	delete(b.refs, name)
	delete(b.dirty, name)
	b.deleteChain(name)
	for i, subs := range e.protoChains {
		for _, sub := range subs {
			if i < len(b.tables) {
				b.tables[i].DeleteChain(sub)
			}
		}
	}
	b.recheckAllSets = true // its sets' stand-ins may be unused now
	for _, id := range e.ref.Group {
		b.leaveGroup(memberKey{e.ref.Layer, e.ref.Egress, id}, name, len(e.ref.Group) > 1)
	}
	for _, one := range e.outOf {
		b.dropRef(one)
	}
}

// placeMembers renders the members that are new or whose policy changed, decides for each
// whether its groups hold it inline, marks the groups to render again, and updates the
// references groups hold to out-of-line members' chains. It looks only at the members of the
// policies that changed and those that joined or left a group. It reports whether a group
// dropped such a reference (the chain may now be unreferenced).
func (b *rulesetBuilder) placeMembers(m *model) bool {
	for id := range m.changedPolicies {
		for k := range b.memberKeys[id] {
			b.placeDirty[k] = true
		}
	}
	clear(m.changedPolicies)
	for k := range b.placeDirty {
		me := b.members[k]
		if me == nil {
			continue
		}
		if src := m.policies[k.id]; src != me.src || me.rendered[0].Rules == nil && me.src == nil {
			b.renderMember(k, me, src)
		}
		n := 0
		for i := range b.tables {
			n = max(n, len(me.rendered[i].Rules))
		}
		if inline := rules.InlineCheaper(n, me.multi); inline != me.inline {
			me.inline = inline
			for g := range me.groups {
				b.dirty[g] = true
			}
		}
	}
	clear(b.placeDirty)
	dropped := false
	for name := range b.dirty {
		if e := b.refs[name]; e != nil && len(e.ref.Group) > 1 {
			dropped = b.linkOutOfLine(name, e) || dropped
		}
	}
	return dropped
}

// linkOutOfLine makes group e refer to the chains of its out-of-line members.
func (b *rulesetBuilder) linkOutOfLine(name string, e *refEntry) bool {
	var out []string
	for _, id := range e.ref.Group {
		k := memberKey{e.ref.Layer, e.ref.Egress, id}
		if !b.members[k].inline {
			one := rules.Ref{Layer: k.layer, Egress: k.egress, Group: []calc.PolicyID{id}}
			b.addRef(one, false)
			out = append(out, one.Chain())
		}
	}
	dropped := false
	for _, old := range e.outOf {
		b.dropRef(old)
		dropped = dropped || !slices.Contains(out, old)
	}
	e.outOf = out
	return dropped
}

// renderMember renders a member's rules for every version and logs the rules that cannot be
// enforced. A policy calc never sent renders as no rules: it matches nothing.
func (b *rulesetBuilder) renderMember(k memberKey, me *memberEntry, src *calc.Policy) {
	me.src = src
	for g := range me.groups {
		b.dirty[g] = true
	}
	var rs []calc.Rule
	if src == nil {
		b.log.Warn().Str("policy", k.id.Tier+"/"+rules.PolicyName(k.id)).
			Msg("An endpoint refers to a policy that calc did not send; it matches nothing")
	} else {
		rs = pick(k.egress, src.InboundRules, src.OutboundRules)
	}
	for i, v := range b.cfg.Families() {
		me.rendered[i] = rules.PolicyRules(b.cfg, v, k.layer, rs)
		if me.rendered[i].Rules == nil {
			me.rendered[i].Rules = []nft.Rule{}
		}
	}
	b.logProblems("policy", k.id.Tier+"/"+rules.PolicyName(k.id), me.rendered)
}

// logProblems logs each rule that cannot be enforced once (it may be refused in both versions).
func (b *rulesetBuilder) logProblems(kind, name string, rendered [2]rules.Rendered) {
	seen := map[int]bool{}
	for _, r := range rendered {
		for _, p := range r.Problems {
			if !seen[p.Index] {
				seen[p.Index] = true
				b.log.Warn().Str(kind, name).Int("rule", p.Index).Str("ruleID", p.RuleID).Str("reason", p.Reason).
					Msg("A rule cannot be enforced: the chain drops every packet that reaches it (fail closed)")
			}
		}
	}
}

// renderRef renders a group or profile chain into every table.
func (b *rulesetBuilder) renderRef(name string, e *refEntry, m *model) {
	b.setsToCheck[name] = true
	if e.ref.Profile != "" {
		b.renderProfile(name, e, m)
		return
	}
	defer b.checkDroppedSets(slices.Clone(e.sets), e)
	e.sets = e.sets[:0]
	for i := range b.tables {
		members := make([]rules.Member, len(e.ref.Group))
		for j, id := range e.ref.Group {
			me := b.members[memberKey{e.ref.Layer, e.ref.Egress, id}]
			inline := me.inline || len(e.ref.Group) == 1
			members[j] = rules.Member{ID: id, Inline: inline, Rules: me.rendered[i].Rules, Protos: me.rendered[i].Protos}
			if inline {
				e.sets = appendNew(e.sets, me.rendered[i].Sets...)
			}
		}
		chains := rules.GroupChains(b.cfg, e.ref.Layer, e.ref.Egress, name, members)
		var subs []string
		for _, c := range chains {
			must(b.tables[i].PutChain(c))
			if c.Name != name {
				subs = append(subs, c.Name)
			}
		}
		for _, old := range e.protoChains[i] {
			if !slices.Contains(subs, old) {
				b.tables[i].DeleteChain(old)
			}
		}
		e.protoChains[i] = subs
	}
}

// renderProfile renders a profile chain. A profile calc never sent matches nothing.
func (b *rulesetBuilder) renderProfile(name string, e *refEntry, m *model) {
	src := m.profiles[e.ref.Profile]
	if src == nil {
		b.log.Warn().Str("chain", name).Msg("An endpoint refers to a profile that calc did not send; it matches nothing")
	}
	e.profile = src
	var rs []calc.Rule
	if src != nil {
		rs = pick(e.ref.Egress, src.InboundRules, src.OutboundRules)
	}
	var rendered [2]rules.Rendered
	defer b.checkDroppedSets(slices.Clone(e.sets), e)
	e.sets = e.sets[:0]
	for i, v := range b.cfg.Families() {
		rendered[i] = rules.PolicyRules(b.cfg, v, e.ref.Layer, rs)
		e.sets = appendNew(e.sets, rendered[i].Sets...)
		must(b.tables[i].PutChain(&nft.Chain{Name: name, Rules: rendered[i].Rules}))
	}
	b.logProblems("profile", e.ref.Profile, rendered)
}

// checkDroppedSets looks at every chain's sets in this build (addMissingSets) when a chain no
// longer looks up a set that was stood in for: the stand-in may be unused now.
func (b *rulesetBuilder) checkDroppedSets(old []rules.SetUse, e *refEntry) {
	for _, u := range old {
		if slices.Contains(e.sets, u) {
			continue
		}
		for i := range b.tables {
			if b.missing[b.setName(i, u.ID)] {
				b.recheckAllSets = true
				return
			}
		}
	}
}

// refreshProfiles notes the profile chains whose profile changed (group members are compared
// with the model in placeMembers); it looks only when the model says policies or profiles
// changed.
func (b *rulesetBuilder) refreshProfiles(m *model) {
	if !m.rulesChanged {
		return
	}
	m.rulesChanged = false
	for name, e := range b.refs {
		if e.ref.Profile != "" && m.profiles[e.ref.Profile] != e.profile {
			b.dirty[name] = true
		}
	}
}

func pick(egress bool, in, out []calc.Rule) []calc.Rule {
	if egress {
		return out
	}
	return in
}

// appendNew appends the elements of add not already in s.
func appendNew[T comparable](s []T, add ...T) []T {
	for _, x := range add {
		if !slices.Contains(s, x) {
			s = append(s, x)
		}
	}
	return s
}
