package ruleset

import (
	"slices"
	"strings"

	"github.com/rs/zerolog"

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

// groups are the policy group and profile chains: in the tables exactly while some endpoint
// chain jumps to them (reference counts), each group rendered again when one of its policies
// changes.
type groups struct {
	cfg    *rules.Config
	log    zerolog.Logger
	tables tables
	sets   *calcSets // told which calc IP sets each chain looks up
	attr   *attribution

	refs       map[string]*refEntry                 // group and profile chains, by name
	members    map[memberKey]*memberEntry           // policies as members of groups
	memberKeys map[calc.PolicyID]map[memberKey]bool // the members of each policy
	placeDirty map[memberKey]bool                   // members that joined or left a group since placeMembers
	groupedBy  map[calc.PolicyID]groupedBy          // what the endpoints were grouped by
	dirty      map[string]bool                      // group chains to render again
	policies   map[calc.PolicyID]*calc.Policy       // the model's, during a build (see repoint)
	ids        *ruleIDs                             // nil unless StampRuleIDs
}

func newGroups(cfg *rules.Config, t tables, log zerolog.Logger, sets *calcSets, attr *attribution) *groups {
	return &groups{
		cfg: cfg, log: log, tables: t, sets: sets, attr: attr,
		refs: map[string]*refEntry{}, members: map[memberKey]*memberEntry{},
		memberKeys: map[calc.PolicyID]map[memberKey]bool{}, placeDirty: map[memberKey]bool{},
		groupedBy: map[calc.PolicyID]groupedBy{}, dirty: map[string]bool{},
	}
}

// refEntry is a group or profile chain in the tables, with what refers to it: workload chains
// and the groups that keep one of their members out of line in it (counted), host endpoint
// chains (volatile: marked on every build).
type refEntry struct {
	ref      rules.Ref
	users    int
	hostRefd bool
	profile  *calc.Profile // the value a profile chain was rendered from (nil: calc never sent it)
	outOf    []string      // group-of-one chains this group jumps to (out-of-line members)
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
func (g *groups) grouper(in *Input) rules.Grouper {
	return rules.GroupBySelector(func(id calc.PolicyID) (string, bool) {
		p := in.Policies[id]
		seen := groupedBy{known: p != nil}
		if p != nil {
			seen.selector = p.Selector
		}
		g.groupedBy[id] = seen
		return seen.selector, seen.known
	})
}

// groupedBy is what the grouper saw of a policy: its selector, or that it was unknown.
type groupedBy struct {
	selector string
	known    bool
}

// regroup reports whether every endpoint must render again (the grouping of their tiers may
// change): a policy they were grouped by changed its selector, appeared or went (rare). It
// looks only at the policies that changed. It also notes the model's policies for this build.
func (g *groups) regroup(in *Input) bool {
	g.policies = in.Policies
	changed := false
	for id := range in.Changed.Policies {
		seen, ok := g.groupedBy[id]
		if !ok {
			continue
		}
		p := in.Policies[id]
		changed = changed || seen.known != (p != nil) || p != nil && p.Selector != seen.selector
	}
	if changed {
		clear(g.groupedBy)
	}
	return changed
}

// addRef counts a reference to a group or profile chain from a workload chain (host false) or
// marks one from a host endpoint chain, adding the chain when it becomes referenced.
func (g *groups) addRef(r rules.Ref, host bool) {
	name := r.Chain()
	e := g.refs[name]
	if e == nil {
		e = &refEntry{ref: r}
		g.refs[name] = e
		g.dirty[name] = true
		for _, id := range r.Group {
			g.joinGroup(memberKey{r.Layer, r.Egress, id}, name, len(r.Group) > 1)
		}
	} else if !slices.Equal(e.ref.Group, r.Group) && g.allKnown(r.Group) {
		g.repoint(name, e, r)
	}
	if host {
		e.hostRefd = true
	} else {
		e.users++
	}
}

// allKnown reports whether the model has every policy of ids.
func (g *groups) allKnown(ids []calc.PolicyID) bool {
	for _, id := range ids {
		if g.policies[id] == nil {
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
func (g *groups) repoint(name string, e *refEntry, r rules.Ref) {
	for _, id := range e.ref.Group {
		g.leaveGroup(memberKey{e.ref.Layer, e.ref.Egress, id}, name, len(e.ref.Group) > 1)
	}
	e.ref.Group = r.Group
	for _, id := range r.Group {
		g.joinGroup(memberKey{r.Layer, r.Egress, id}, name, len(r.Group) > 1)
	}
	g.dirty[name] = true
}

// dropRef removes a counted reference; the chain goes (in finishRefs) when nothing refers to it.
func (g *groups) dropRef(name string) {
	if e := g.refs[name]; e != nil {
		e.users--
	}
}

// joinGroup records a policy as a member of group chain name.
func (g *groups) joinGroup(k memberKey, name string, multi bool) {
	me := g.members[k]
	if me == nil {
		me = &memberEntry{groups: map[string]bool{}, inline: true}
		g.members[k] = me
	}
	me.groups[name] = true
	if multi {
		me.multi++
	}
	g.placeDirty[k] = true
	if g.memberKeys[k.id] == nil {
		g.memberKeys[k.id] = map[memberKey]bool{}
	}
	g.memberKeys[k.id][k] = true
}

// leaveGroup removes a policy from group chain name; its other groups may now hold it inline.
func (g *groups) leaveGroup(k memberKey, name string, multi bool) {
	me := g.members[k]
	if me == nil {
		return
	}
	delete(me.groups, name)
	if multi {
		me.multi--
	}
	g.placeDirty[k] = true
	if len(me.groups) == 0 {
		delete(g.members, k)
		g.attr.release(k)
		if delete(g.memberKeys[k.id], k); len(g.memberKeys[k.id]) == 0 {
			delete(g.memberKeys, k.id)
		}
	}
}

// clearHostRefs forgets the references from host endpoint chains (they are all made again by
// every build of the static part).
func (g *groups) clearHostRefs() {
	for _, e := range g.refs {
		e.hostRefd = false
	}
}

// finish removes the chains nothing refers to any more, decides which members stay inline,
// and renders the group and profile chains that need it. Removing a group may leave a group of
// one unreferenced, so it repeats until nothing more goes.
func (g *groups) finish(in *Input) {
	for removed := true; removed; {
		removed = false
		for name, e := range g.refs {
			if e.users <= 0 && !e.hostRefd {
				g.removeRef(name, e)
				removed = true
			}
		}
		if !removed {
			removed = g.placeMembers(in)
		}
	}
	g.retryRefused(in)
	for name := range g.dirty {
		if e := g.refs[name]; e != nil {
			g.renderRef(name, e, in)
		}
	}
	clear(g.dirty)
}

// renderUsers marks the group and profile chains that look up one of the calc IP sets ids to
// render again (the sets gained their first member or lost their last one).
func (g *groups) renderUsers(ids map[string]bool) {
	if len(ids) == 0 {
		return
	}
	for _, name := range g.sets.usersOf(ids) {
		g.dirty[name] = true
	}
}

func (g *groups) removeRef(name string, e *refEntry) {
	delete(g.refs, name)
	delete(g.dirty, name)
	g.tables.deleteChain(name)
	for i, subs := range e.protoChains {
		for _, sub := range subs {
			if i < len(g.tables) {
				g.tables[i].DeleteChain(sub)
			}
		}
	}
	g.sets.release(name)
	g.attr.release(name)
	for _, id := range e.ref.Group {
		g.leaveGroup(memberKey{e.ref.Layer, e.ref.Egress, id}, name, len(e.ref.Group) > 1)
	}
	for _, one := range e.outOf {
		g.dropRef(one)
	}
}

// markChanged makes placeMembers look at the members of the policies that changed.
func (g *groups) markChanged(in *Input) {
	for id := range in.Changed.Policies {
		for k := range g.memberKeys[id] {
			g.placeDirty[k] = true
		}
	}
}

// placeMembers renders the members that are new or whose policy changed, decides for each
// whether its groups hold it inline, marks the groups to render again, and updates the
// references groups hold to out-of-line members' chains. It looks only at the members of the
// policies that changed and those that joined or left a group. It reports whether a group
// dropped such a reference (the chain may now be unreferenced).
func (g *groups) placeMembers(in *Input) bool {
	for k := range g.placeDirty {
		me := g.members[k]
		if me == nil {
			continue
		}
		if src := in.Policies[k.id]; src != me.src || me.rendered[0].Rules == nil && me.src == nil {
			g.renderMember(k, me, src)
		}
		n := 0
		for i := range g.tables {
			n = max(n, len(me.rendered[i].Rules))
		}
		if inline := rules.InlineCheaper(n, me.multi); inline != me.inline {
			me.inline = inline
			for name := range me.groups {
				g.dirty[name] = true
			}
		}
	}
	clear(g.placeDirty)
	dropped := false
	for name := range g.dirty {
		if e := g.refs[name]; e != nil && len(e.ref.Group) > 1 {
			dropped = g.linkOutOfLine(name, e) || dropped
		}
	}
	return dropped
}

// linkOutOfLine makes group e refer to the chains of its out-of-line members.
func (g *groups) linkOutOfLine(name string, e *refEntry) bool {
	var out []string
	for _, id := range e.ref.Group {
		k := memberKey{e.ref.Layer, e.ref.Egress, id}
		if !g.members[k].inline {
			one := rules.Ref{Layer: k.layer, Egress: k.egress, Group: []calc.PolicyID{id}}
			g.addRef(one, false)
			out = append(out, one.Chain())
		}
	}
	dropped := false
	for _, old := range e.outOf {
		g.dropRef(old)
		dropped = dropped || !slices.Contains(out, old)
	}
	e.outOf = out
	return dropped
}

// renderMember renders a member's rules for every version and logs the rules that cannot be
// enforced. A policy calc never sent renders as no rules: it matches nothing.
func (g *groups) renderMember(k memberKey, me *memberEntry, src *calc.Policy) {
	me.src = src
	for name := range me.groups {
		g.dirty[name] = true
	}
	var rs []calc.Rule
	if src == nil {
		g.log.Warn().Str("policy", k.id.Tier+"/"+rules.PolicyName(k.id)).
			Msg("An endpoint refers to a policy that calc did not send; it matches nothing")
	} else {
		rs = pick(k.egress, src.InboundRules, src.OutboundRules)
	}
	var logs []rules.LogTo
	if k.layer == rules.Filter {
		logs = g.attr.policy(k, k.id, k.egress, rs)
	}
	for i, v := range g.cfg.Families() {
		me.rendered[i] = rules.AttributedRules(g.cfg, v, k.layer, rs, logs)
		if g.ids != nil {
			g.ids.stampPolicy(k.id, k.egress, rs, &me.rendered[i])
		}
		if me.rendered[i].Rules == nil {
			me.rendered[i].Rules = []nft.Rule{}
		}
	}
	g.logProblems("policy", k.id.Tier+"/"+rules.PolicyName(k.id), me.rendered)
}

// logProblems logs each rule that cannot be enforced once (it may be refused in both versions).
func (g *groups) logProblems(kind, name string, rendered [2]rules.Rendered) {
	seen := map[int]bool{}
	for _, r := range rendered {
		for _, p := range r.Problems {
			if !seen[p.Index] {
				seen[p.Index] = true
				g.log.Warn().Str(kind, name).Int("rule", p.Index).Str("ruleID", p.RuleID).Str("reason", p.Reason).
					Msg("A rule cannot be enforced: the chain drops every packet that reaches it (fail closed)")
			}
		}
	}
}

// renderRef renders a group or profile chain into every table.
func (g *groups) renderRef(name string, e *refEntry, in *Input) {
	if e.ref.Profile != "" {
		g.renderProfile(name, e, in)
		return
	}
	var uses []rules.SetUse
	seen := map[rules.SetUse]bool{}
	for i := range g.tables {
		members := make([]rules.Member, len(e.ref.Group))
		for j, id := range e.ref.Group {
			me := g.members[memberKey{e.ref.Layer, e.ref.Egress, id}]
			inline := me.inline || len(e.ref.Group) == 1
			members[j] = rules.Member{ID: id, Inline: inline}
			if inline {
				members[j].Rules, members[j].Protos = g.sets.withoutEmpty(i, me.rendered[i])
				uses = appendNew(uses, seen, me.rendered[i].Sets...)
			}
		}
		chains := rules.GroupChains(g.cfg, e.ref.Layer, e.ref.Egress, name, members)
		var subs []string
		for _, c := range chains {
			must(g.tables[i].PutChain(c))
			if c.Name != name {
				subs = append(subs, c.Name)
			}
		}
		for _, old := range e.protoChains[i] {
			if !slices.Contains(subs, old) {
				g.tables[i].DeleteChain(old)
			}
		}
		e.protoChains[i] = subs
	}
	g.sets.use(name, uses)
}

// renderProfile renders a profile chain. A profile calc never sent matches nothing.
func (g *groups) renderProfile(name string, e *refEntry, in *Input) {
	src := in.Profiles[e.ref.Profile]
	if src == nil {
		g.log.Warn().Str("chain", name).Msg("An endpoint refers to a profile that calc did not send; it matches nothing")
	}
	e.profile = src
	var rs []calc.Rule
	if src != nil {
		rs = pick(e.ref.Egress, src.InboundRules, src.OutboundRules)
	}
	var logs []rules.LogTo
	if e.ref.Layer == rules.Filter {
		logs = g.attr.profile(name, e.ref.Profile, e.ref.Egress, rs)
	}
	var rendered [2]rules.Rendered
	var uses []rules.SetUse
	seen := map[rules.SetUse]bool{}
	for i, v := range g.cfg.Families() {
		rendered[i] = rules.AttributedRules(g.cfg, v, e.ref.Layer, rs, logs)
		if g.ids != nil {
			g.ids.stampProfile(e.ref.Profile, e.ref.Egress, rs, &rendered[i])
		}
		uses = appendNew(uses, seen, rendered[i].Sets...)
		rs, _ := g.sets.withoutEmpty(i, rendered[i])
		must(g.tables[i].PutChain(&nft.Chain{Name: name, Rules: rs}))
	}
	g.sets.use(name, uses)
	g.logProblems("profile", e.ref.Profile, rendered)
}

// retryRefused renders again, once per build, the members and profile chains that were refused
// a flow log prefix which is now free (see attribution).
func (g *groups) retryRefused(in *Input) {
	for _, owner := range g.attr.takeRetry() {
		switch o := owner.(type) {
		case memberKey:
			if me := g.members[o]; me != nil {
				g.renderMember(o, me, in.Policies[o.id])
			}
		case string:
			if g.refs[o] != nil {
				g.dirty[o] = true
			}
		}
	}
}

// refreshProfiles notes the profile chains whose profile changed (group members are compared
// with the model in placeMembers); it looks only when the model says policies or profiles
// changed.
func (g *groups) refreshProfiles(in *Input) {
	if !in.Changed.Rules {
		return
	}
	for name, e := range g.refs {
		if e.ref.Profile != "" && in.Profiles[e.ref.Profile] != e.profile {
			g.dirty[name] = true
		}
	}
}

func pick(egress bool, in, out []calc.Rule) []calc.Rule {
	if egress {
		return out
	}
	return in
}

// appendNew appends the elements of add not already in s, which seen holds (a group of many
// policies looks up many sets: no quadratic search).
func appendNew[T comparable](s []T, seen map[T]bool, add ...T) []T {
	for _, x := range add {
		if !seen[x] {
			seen[x] = true
			s = append(s, x)
		}
	}
	return s
}

// refOf finds the group or profile entry a chain belongs to (its own chain or one of the
// protocol chains it split into).
func (g *groups) refOf(name string) *refEntry {
	if e := g.refs[name]; e != nil {
		return e
	}
	for _, e := range g.refs {
		if slices.Contains(e.protoChains[0], name) || slices.Contains(e.protoChains[1], name) {
			return e
		}
	}
	return nil
}

// describeChain names the policies or profile a group or profile chain (or one of its
// protocol chains) is rendered from (for the quarantine).
func (g *groups) describeChain(name string) (label, what string) {
	e := g.refOf(name)
	if e == nil {
		return "", ""
	}
	r := e.ref
	if r.Profile != "" {
		return "profile", "Profile " + r.Profile
	}
	names := make([]string, len(r.Group))
	for i, id := range r.Group {
		names[i] = policyKind(id) + " " + policyObjectName(id)
	}
	return "policy", strings.Join(names, ", ")
}

// policyKind is the resource kind of a policy ID.
func policyKind(id calc.PolicyID) string {
	if id.Kind == "np" {
		return "NetworkPolicy"
	}
	return "GlobalNetworkPolicy"
}

func policyObjectName(id calc.PolicyID) string {
	if id.Namespace != "" {
		return id.Namespace + "/" + id.Name
	}
	return id.Name
}
