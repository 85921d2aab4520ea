package ruleset

import (
	"slices"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/rules"
	"github.com/calico-host/calico-host/pkg/nft"
)

// calcSets are calc's IP sets in the tables, and the empty stand-ins of the sets a chain looks
// up that calc did not send.
type calcSets struct {
	cfg    *rules.Config
	log    zerolog.Logger
	tables tables

	names    map[string]bool           // set names made from calc IP sets (any table)
	rendered map[string]ipSetRev       // calc IP set ID -> the set its nft sets were made from
	setNames map[string][2]string      // calc IP set ID -> set name per table
	missing  map[string]bool           // empty stand-ins for sets calc did not send
	users    map[string][]rules.SetUse // the calc IP sets each group and profile chain looks up
	filled   map[string][2]bool        // calc IP set ID -> whether it has members, per table
	// toCheck: chains rendered since addMissing (their sets must exist); recheckAll: a calc
	// set or a chain went, look at every chain.
	toCheck    map[string]bool
	recheckAll bool
}

func newCalcSets(cfg *rules.Config, t tables, log zerolog.Logger) *calcSets {
	return &calcSets{
		cfg: cfg, log: log, tables: t,
		names: map[string]bool{}, rendered: map[string]ipSetRev{}, setNames: map[string][2]string{},
		missing: map[string]bool{}, users: map[string][]rules.SetUse{}, toCheck: map[string]bool{},
		filled: map[string][2]bool{},
	}
}

// ipSetRev identifies what a calc IP set's nft sets were made from.
type ipSetRev struct {
	set     *IPSet
	version uint64
}

// sync puts calc's IP sets in the tables (each version's members in its table) and
// removes those calc removed. A set that calc changed costs its delta (Table.UpdateSet), unless
// it must be put whole (see IPSet.takeDelta).
func (c *calcSets) sync(in *Input) {
	for id := range c.rendered {
		if in.IPSets[id] != nil {
			continue
		}
		for i := range c.tables {
			name := c.setName(i, id)
			c.tables[i].DeleteSet(name)
			delete(c.names, name)
		}
		delete(c.rendered, id)
		delete(c.setNames, id)
		c.recheckAll = true // a rule may still look it up
	}
	for id, s := range in.IPSets {
		r, ok := c.rendered[id]
		if ok && r.set == s && r.version == s.version {
			continue
		}
		for i := range c.tables {
			c.putCalcSet(i, c.setName(i, id), id, s, ok && r.set == s)
		}
		c.rendered[id] = ipSetRev{set: s, version: s.version}
	}
}

// putCalcSet brings set name of table i up to date with s: its delta when the table holds the
// set as s was last taken (same), else the whole set.
func (c *calcSets) putCalcSet(i int, name, id string, s *IPSet, same bool) {
	add, del, whole := s.takeDelta(i)
	t := c.tables[i]
	if whole || !same || t.Set(name) == nil || c.missing[name] {
		must(t.PutSet(s.nftSet(i, id)))
		delete(c.missing, name)
	} else if len(add)+len(del) > 0 {
		must(t.UpdateSet(name, add, del))
	}
	c.names[name] = true
}

// setName is the name of calc IP set id in table i (names are cached: they are asked for on
// every change of the set).
func (c *calcSets) setName(i int, id string) string {
	names, ok := c.setNames[id]
	if !ok {
		for j, v := range c.cfg.Families() {
			names[j] = rules.SetName(v, id)
		}
		c.setNames[id] = names
	}
	return names[i]
}

// use records the calc IP sets chain name looks up (it was rendered): they must exist. A set
// it no longer looks up may leave a stand-in unused (addMissing then looks at every chain).
func (c *calcSets) use(name string, uses []rules.SetUse) {
	now := make(map[rules.SetUse]bool, len(uses))
	for _, u := range uses {
		now[u] = true
	}
	for _, u := range c.users[name] {
		if now[u] {
			continue
		}
		for i := range c.tables {
			if c.missing[c.setName(i, u.ID)] {
				c.recheckAll = true
			}
		}
	}
	c.users[name] = uses
	c.toCheck[name] = true
}

// release forgets a chain that went: its sets' stand-ins may be unused now.
func (c *calcSets) release(name string) {
	delete(c.users, name)
	c.recheckAll = true
}

// addMissing adds an empty set for each set a rule looks up that calc never sent, so that
// the tables stay consistent; it warns, since calc promised to send every set it refers to. It
// looks at the chains rendered since it last ran, or at all of them after a calc set or a
// chain went (then it also drops the stand-ins nothing uses any more).
func (c *calcSets) addMissing() {
	if c.recheckAll {
		for name := range c.missing {
			for _, t := range c.tables {
				t.DeleteSet(name)
			}
		}
		clear(c.missing)
		for _, uses := range c.users {
			c.addMissingOf(uses)
		}
	} else {
		for name := range c.toCheck {
			c.addMissingOf(c.users[name])
		}
	}
	c.recheckAll = false
	clear(c.toCheck)
}

func (c *calcSets) addMissingOf(uses []rules.SetUse) {
	for _, u := range uses {
		typ := calc.IPSetNet
		if u.NamedPort {
			typ = calc.IPSetNamedPort
		}
		for i := range c.tables {
			name := c.setName(i, u.ID)
			if c.tables[i].Set(name) != nil {
				continue
			}
			c.log.Warn().Str("ipset", u.ID).Msg("A rule refers to an IP set that calc did not send; using an empty set")
			must(c.tables[i].PutSet(NewIPSet(typ, nil).nftSet(i, u.ID)))
			c.missing[name] = true
		}
	}
}

// Rules that look up an empty calc IP set never match: the group and profile chains leave
// them out (a new connection then walks none of them; at scale most selectors of a host's
// policies may match nobody). A chain is rendered again, in the transaction that fills or
// empties the set, when a set it looks up gains its first member or loses its last one in a
// table (noteFilled, then groups render the chains usersOf names).

// noteFilled records which calc IP sets have members in each table and returns those that
// gained their first member or lost their last one in a table since the last build (a set
// calc did not send, or no longer sends, has none). It looks only at the sets that changed.
func (c *calcSets) noteFilled(in *Input) map[string]bool {
	flipped := map[string]bool{}
	for id := range c.filled {
		if in.IPSets[id] == nil {
			delete(c.filled, id)
			flipped[id] = true
		}
	}
	for id, s := range in.IPSets {
		if r, ok := c.rendered[id]; ok && r.set == s && r.version == s.version {
			continue
		}
		var now [2]bool
		for i := range c.tables {
			now[i] = len(s.perV[i].count) > 0
		}
		if now != c.filled[id] {
			flipped[id] = true
		}
		if now == ([2]bool{}) {
			delete(c.filled, id)
		} else {
			c.filled[id] = now
		}
	}
	return flipped
}

// usersOf names the group and profile chains that look up one of the calc IP sets ids.
func (c *calcSets) usersOf(ids map[string]bool) []string {
	var out []string
	for name, uses := range c.users {
		if slices.ContainsFunc(uses, func(u rules.SetUse) bool { return ids[u.ID] }) {
			out = append(out, name)
		}
	}
	return out
}

// withoutEmpty leaves out of r, rendered for table i, the rules that need a member of a calc IP
// set that has none in that table (see noteFilled); r's slices are returned as they are when
// it keeps every rule, and are never modified.
func (c *calcSets) withoutEmpty(i int, r rules.Rendered) ([]nft.Rule, []uint8) {
	var empty []string // a member looks up few sets
	for _, u := range r.Sets {
		if !c.filled[u.ID][i] {
			empty = append(empty, c.setName(i, u.ID))
		}
	}
	if empty == nil {
		return r.Rules, r.Protos
	}
	in := func(set string) bool { return slices.Contains(empty, set) }
	rs, protos := make([]nft.Rule, 0, len(r.Rules)), []uint8(nil)
	for j, x := range r.Rules {
		if x.NeedsMember(in) {
			continue
		}
		rs = append(rs, x)
		if r.Protos != nil {
			protos = append(protos, r.Protos[j])
		}
	}
	return rs, protos
}

// isCalcSet reports whether set name of a table is made from a calc IP set.
func (c *calcSets) isCalcSet(name string) bool { return c.names[name] }

// describeSet names a calc IP set by its set name (for the quarantine).
func (c *calcSets) describeSet(name string) (label, what string) {
	if !c.names[name] {
		return "", ""
	}
	for id, names := range c.setNames {
		if names[0] == name || names[1] == name {
			return "set", "IP set " + id + " (" + name + ")"
		}
	}
	return "", ""
}
