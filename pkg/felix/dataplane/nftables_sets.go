package dataplane

import (
	"net/netip"
	"slices"

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
		for i := range b.tables {
			name := b.setName(i, id)
			b.tables[i].DeleteSet(name)
			delete(b.calcSets, name)
		}
		delete(b.rendered, id)
		delete(b.setNames, id)
		b.recheckAllSets = true // a rule may still look it up
	}
	for id, s := range m.ipsets {
		r, ok := b.rendered[id]
		if ok && r.set == s && r.version == s.version {
			continue
		}
		for i := range b.tables {
			b.putCalcSet(i, b.setName(i, id), id, s, ok && r.set == s)
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
	b.calcSets[name] = true
}

// setName is the name of calc IP set id in table i (names are cached: they are asked for on
// every change of the set).
func (b *rulesetBuilder) setName(i int, id string) string {
	names, ok := b.setNames[id]
	if !ok {
		for j, v := range b.cfg.Families() {
			names[j] = rules.SetName(v, id)
		}
		b.setNames[id] = names
	}
	return names[i]
}

// addMissingSets adds an empty set for each set a rule looks up that calc never sent, so that
// the tables stay consistent; it warns, since calc promised to send every set it refers to. It
// looks at the chains rendered in this build, or at all of them after a calc set or a chain
// went (then it also drops the stand-ins nothing uses any more).
func (b *rulesetBuilder) addMissingSets() {
	if b.recheckAllSets {
		for name := range b.missing {
			for _, t := range b.tables {
				t.DeleteSet(name)
			}
		}
		clear(b.missing)
		for _, e := range b.refs {
			b.addMissingSetsOf(e)
		}
	} else {
		for name := range b.setsToCheck {
			if e := b.refs[name]; e != nil {
				b.addMissingSetsOf(e)
			}
		}
	}
	b.recheckAllSets = false
	clear(b.setsToCheck)
}

func (b *rulesetBuilder) addMissingSetsOf(e *refEntry) {
	for _, u := range e.sets {
		typ := calc.IPSetNet
		if u.NamedPort {
			typ = calc.IPSetNamedPort
		}
		for i := range b.tables {
			name := b.setName(i, u.ID)
			if b.tables[i].Set(name) != nil {
				continue
			}
			b.log.Warn().Str("ipset", u.ID).Msg("A rule refers to an IP set that calc did not send; using an empty set")
			must(b.tables[i].PutSet(newIPSet(typ, nil).nftSet(i, u.ID)))
			b.missing[name] = true
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
	// The hosts' addresses: IPIP (IPv4) filters by them, NAT outgoing with IPPoolsAndHostIPs
	// leaves traffic to them alone.
	if st.IPIP && v == nft.IPv4 || b.cfg.NATExcludeHosts && slices.Contains(st.MasqFamilies, v) {
		out = append(out, rules.NetSet(v, rules.SetAllHosts, allHosts(m, v)))
	}
	return out
}

// allHosts are the addresses of version v of every host (Project Calico's all-hosts-net).
func allHosts(m *model, v nft.IPVersion) []netip.Prefix {
	var out []netip.Prefix
	for _, h := range m.hosts {
		a := h.IPv4Addr.Addr()
		if v == nft.IPv6 {
			a = h.IPv6Addr.Addr()
		}
		if a.IsValid() && versionOf(a) == v {
			out = append(out, hostPrefix(a))
		}
	}
	slices.SortFunc(out, func(a, b netip.Prefix) int { return a.Addr().Compare(b.Addr()) })
	return out
}
