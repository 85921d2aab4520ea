package dataplane

import (
	"net/netip"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/nft"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/rules"
)

// ipSetRev identifies what a calc IP set's nft sets were made from: the model's set and the
// version of its members.
type ipSetRev struct {
	set     *ipSet
	version uint64
}

// syncCalcSets puts calc's IP sets (per configured family) in the ruleset and removes those
// calc removed. Only the sets that calc replaced or changed since the last build are made
// again; their element lists are the model's own sorted slices.
func (b *rulesetBuilder) syncCalcSets(m *model) {
	nfam := len(b.cfg.Families())
	for id := range b.rendered {
		if m.ipsets[id] != nil {
			continue
		}
		for i := range nfam {
			name := rules.SetName(families[i], id)
			b.rs.DeleteSet(name)
			delete(b.calcSets, name)
		}
		delete(b.rendered, id)
		b.refsDirt = true
	}
	for id, s := range m.ipsets {
		if r, ok := b.rendered[id]; ok && r.set == s && r.version == s.version {
			continue
		}
		for i := range nfam {
			set := s.nftSet(i, id)
			b.rs.AddSet(set)
			if !b.calcSets[set.Name] {
				b.calcSets[set.Name] = true
				b.refsDirt = true
			}
		}
		b.rendered[id] = ipSetRev{set: s, version: s.version}
	}
}

// addMissingSets adds an empty set for each set a rule looks up that calc never sent, so that
// the table stays consistent; it warns, since calc promised to send every set it refers to.
// It only looks again when the referenced chains or calc's sets changed.
func (b *rulesetBuilder) addMissingSets() {
	if !b.refsDirt {
		return
	}
	b.refsDirt = false
	for name := range b.missing {
		if !b.calcSets[name] {
			b.rs.DeleteSet(name)
		}
	}
	clear(b.missing)
	for _, e := range b.refs {
		for _, id := range e.rc.SetIDs {
			for i := range b.cfg.Families() {
				name := rules.SetName(families[i], id)
				if _, ok := b.rs.Sets[name]; ok {
					continue
				}
				b.log.Warn().Str("ipset", id).Msg("A rule refers to an IP set that calc did not send; using an empty set")
				b.rs.AddSet(newIPSet(calc.IPSetNet, nil).nftSet(i, id))
				b.missing[name] = true
			}
		}
	}
}

// internalSets are the pool sets NAT outgoing uses and the VTEP underlay sets the VXLAN rules
// use, for the families that need them.
func (b *rulesetBuilder) internalSets(m *model, st *rules.Static) []*nft.Set {
	var out []*nft.Set
	for _, f := range st.MasqFamilies {
		var all, masq []netip.Prefix
		for _, p := range m.pools {
			all = append(all, p.CIDR)
			if p.NATOutgoing {
				masq = append(masq, p.CIDR)
			}
		}
		out = append(out, rules.NetSet(f, rules.SetAllPools, all), rules.NetSet(f, rules.SetMasqPools, masq))
	}
	for _, d := range st.VXLAN {
		var hosts []netip.Prefix
		for _, v := range m.vteps {
			if a := v.ParentDeviceAddr; a.IsValid() {
				hosts = append(hosts, hostPrefix(a))
			}
		}
		out = append(out, rules.NetSet(d.Family, rules.SetAllVXLAN, hosts))
	}
	return out
}
