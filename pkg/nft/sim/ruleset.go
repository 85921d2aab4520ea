package sim

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/vm"
)

// Ruleset is a set of tables compiled for simulation: every rule lowered
// to the kernel's instructions, every set indexed, every base chain placed
// in its hook. It is read only once built, so one Ruleset may run many
// packets, concurrently.
type Ruleset struct {
	hooks map[hookKey][]stage
	// natFamilies are the families with a nat chain: the kernel then runs
	// its NAT core in the four NAT hooks of the family (nf_nat_register_fn
	// registers them together), chains or not.
	natFamilies map[uint8]bool
}

// table is a compiled table.
type table struct {
	id     nft.TableID
	chains map[string]*chain
	bases  []*chain       // base chains, by name
	sets   map[string]set // sets and verdict maps, by name
}

// chain is a compiled chain.
type chain struct {
	t     *table
	name  string
	base  *nft.BaseChain
	rules []rule
}

// rule is a compiled rule: its instructions and the anonymous sets they
// refer to by SetID.
type rule struct {
	exprs   []vm.Expr
	anon    []set
	comment string
	text    string
}

// Compile lowers and indexes tables for Run. Tables of family ip, ip6,
// inet and arp are simulated; a bridge or netdev table, or a base chain on
// the ingress or egress hook, is refused, as is a rule that does not lower
// (what the kernel would refuse). Base chains of one hook with the same
// priority run in the order of their tables in the arguments (the kernel
// runs them in the order they were registered); two in one table are
// refused.
func Compile(tables ...*nft.Table) (*Ruleset, error) {
	rs := &Ruleset{hooks: map[hookKey][]stage{}, natFamilies: map[uint8]bool{}}
	for order, nt := range tables {
		t, err := compileTable(nt)
		if err != nil {
			return nil, fmt.Errorf("table %s: %w", nt.ID(), err)
		}
		if err := rs.place(t, order); err != nil {
			return nil, fmt.Errorf("table %s: %w", nt.ID(), err)
		}
	}
	for _, p := range []uint8{unix.NFPROTO_IPV4, unix.NFPROTO_IPV6} { // conntrack and the NAT core run without chains too
		for _, h := range []nft.Hook{nft.HookPrerouting, nft.HookInput, nft.HookOutput, nft.HookPostrouting} {
			if k := (hookKey{p, h}); rs.hooks[k] == nil {
				rs.hooks[k] = []stage{}
			}
		}
	}
	for k, stages := range rs.hooks {
		sorted, err := sortStages(k, stages, rs.natFamilies[k.nfproto])
		if err != nil {
			return nil, err
		}
		rs.hooks[k] = sorted
	}
	return rs, nil
}

func compileTable(nt *nft.Table) (*table, error) {
	switch nt.Family {
	case nft.FamilyIP, nft.FamilyIP6, nft.FamilyInet, nft.FamilyARP:
	default:
		return nil, fmt.Errorf("tables of family %s are not simulated", nt.Family)
	}
	t := &table{id: nt.ID(), chains: map[string]*chain{}, sets: map[string]set{}}
	for _, name := range nt.SetNames() {
		s := nt.Set(name)
		idx, err := newSet(s.Type, s.Interval, s.Elements)
		if err != nil {
			return nil, fmt.Errorf("set %s: %w", name, err)
		}
		t.sets[name] = idx
	}
	for _, name := range nt.MapNames() {
		m, err := newVerdictMap(nt.Map(name))
		if err != nil {
			return nil, err
		}
		t.sets[name] = m
	}
	for _, name := range nt.ChainNames() {
		c, err := compileChain(t, nt.Family, nt.Chain(name))
		if err != nil {
			return nil, err
		}
		t.chains[name] = c
		if c.base != nil {
			t.bases = append(t.bases, c)
		}
	}
	return t, nil
}

func compileChain(t *table, f nft.Family, nc *nft.Chain) (*chain, error) {
	c := &chain{t: t, name: nc.Name, base: nc.Base}
	for i, r := range nc.Rules {
		l, err := nft.LowerRule(f, r)
		if err != nil {
			return nil, fmt.Errorf("chain %s rule %d: %w", nc.Name, i, err)
		}
		cr := rule{exprs: l.Exprs, comment: r.Comment, text: r.Text(f)}
		for j, a := range l.Anon {
			s, err := newSet(a.Type, a.Interval, a.Elements)
			if err != nil {
				return nil, fmt.Errorf("chain %s rule %d anonymous set %d: %w", nc.Name, i, j, err)
			}
			cr.anon = append(cr.anon, s)
		}
		c.rules = append(c.rules, cr)
	}
	return c, nil
}

// hookKey is a hook of a netfilter family: NFPROTO_IPV4, _IPV6 or _ARP.
type hookKey struct {
	nfproto uint8
	hook    nft.Hook
}

// nfprotos are the packet families whose hooks a table's base chains
// attach to.
func nfprotos(f nft.Family) []uint8 {
	switch f {
	case nft.FamilyIP:
		return []uint8{unix.NFPROTO_IPV4}
	case nft.FamilyIP6:
		return []uint8{unix.NFPROTO_IPV6}
	case nft.FamilyInet:
		return []uint8{unix.NFPROTO_IPV4, unix.NFPROTO_IPV6}
	case nft.FamilyARP:
		return []uint8{unix.NFPROTO_ARP}
	}
	return nil
}

// place adds the table's base chains to their hooks.
func (rs *Ruleset) place(t *table, order int) error {
	for _, c := range t.bases {
		switch c.base.Hook {
		case nft.HookPrerouting, nft.HookInput, nft.HookForward, nft.HookOutput, nft.HookPostrouting:
		default:
			return fmt.Errorf("base chain %s: hook %s is not simulated", c.name, c.base.Hook)
		}
		if c.base.Type == nft.ChainNAT && c.base.Priority <= prioConntrack {
			return fmt.Errorf("nat chain %s at priority %d, not above conntrack's: the kernel refuses it", c.name, c.base.Priority)
		}
		for _, p := range nfprotos(t.id.Family) {
			k := hookKey{p, c.base.Hook}
			if c.base.Type == nft.ChainNAT {
				rs.natFamilies[p] = true
			}
			rs.hooks[k] = append(rs.hooks[k], stage{kind: stageChain, prio: c.base.Priority, order: order, chains: []*chain{c}})
		}
	}
	return nil
}
