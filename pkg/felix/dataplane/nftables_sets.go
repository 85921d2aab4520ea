package dataplane

import (
	"net/netip"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/rules"
	"github.com/calico-host/calico-host/pkg/nft"
)

// syncCalcSets puts calc's IP sets in the tables (each version's members in its table) and
// removes those calc removed. A set that calc changed costs its delta (Table.UpdateSet), unless
// it must be put whole (see ipSet.takeDelta).
func (b *rulesetBuilder) syncCalcSets(m *model) {
	for id := range b.rendered {
		if m.ipsets[id] != nil {
			continue
		}
		for i, v := range b.cfg.Families() {
			name := rules.SetName(v, id)
			b.tables[i].DeleteSet(name)
			delete(b.calcSets, name)
		}
		delete(b.rendered, id)
		b.refsDirt = true
	}
	for id, s := range m.ipsets {
		r, ok := b.rendered[id]
		if ok && r.set == s && r.version == s.version {
			continue
		}
		for i, v := range b.cfg.Families() {
			b.putCalcSet(i, rules.SetName(v, id), id, s, ok && r.set == s)
		}
		b.rendered[id] = ipSetRev{set: s, version: s.version}
	}
}

// putCalcSet brings set name of table i up to date with s: its delta when the table holds the
// set as s was last taken (same), else the whole set.
func (b *rulesetBuilder) putCalcSet(i int, name, id string, s *ipSet, same bool) {
	add, del, whole := s.takeDelta(i)
	t := b.tables[i]
	if whole || !same || t.Set(name) == nil || b.missing[name] {
		must(t.PutSet(s.nftSet(i, id)))
		delete(b.missing, name)
	} else if len(add)+len(del) > 0 {
		must(t.UpdateSet(name, add, del))
	}
	if !b.calcSets[name] {
		b.calcSets[name] = true
		b.refsDirt = true
	}
}

// addMissingSets adds an empty set for each set a rule looks up that calc never sent, so that
// the tables stay consistent; it warns, since calc promised to send every set it refers to. It
// only looks again when the referenced chains or calc's sets changed.
func (b *rulesetBuilder) addMissingSets() {
	if !b.refsDirt {
		return
	}
	b.refsDirt = false
	for name := range b.missing {
		if !b.calcSets[name] {
			for _, t := range b.tables {
				t.DeleteSet(name)
			}
		}
	}
	clear(b.missing)
	for _, e := range b.refs {
		for _, id := range e.sets {
			for i, v := range b.cfg.Families() {
				name := rules.SetName(v, id)
				if b.tables[i].Set(name) != nil && !b.missing[name] {
					continue
				}
				if !b.missing[name] {
					b.log.Warn().Str("ipset", id).Msg("A rule refers to an IP set that calc did not send; using an empty set")
				}
				must(b.tables[i].PutSet(newIPSet(calc.IPSetNet, nil).nftSet(i, id)))
				b.missing[name] = true
			}
		}
	}
}

// internalSets are the pool sets NAT outgoing uses and the VTEP underlay set the VXLAN rules
// use, in the table of version v when it needs them.
func (b *rulesetBuilder) internalSets(m *model, st *rules.Static, v nft.IPVersion) []*nft.Set {
	var out []*nft.Set
	for _, mv := range st.MasqFamilies {
		if mv != v {
			continue
		}
		var all, masq []netip.Prefix
		for _, p := range m.pools {
			all = append(all, p.CIDR)
			if p.NATOutgoing {
				masq = append(masq, p.CIDR)
			}
		}
		out = append(out, rules.NetSet(v, rules.SetAllPools, all), rules.NetSet(v, rules.SetMasqPools, masq))
	}
	for _, d := range st.VXLAN {
		if d.Version != v {
			continue
		}
		var hosts []netip.Prefix
		for _, vt := range m.vteps {
			if a := vt.ParentDeviceAddr; a.IsValid() {
				hosts = append(hosts, hostPrefix(a))
			}
		}
		out = append(out, rules.NetSet(v, rules.SetAllVXLAN, hosts))
		break
	}
	return out
}
