package nft

import (
	"fmt"
	"slices"
	"strings"
)

// planChains decides, per desired chain looked at, whether it is new,
// replaced (its hook changed), rewritten (its rules changed) or left alone.
func (p *planner) planChains() error {
	for _, name := range p.chains {
		c := p.desired.Chains[name]
		if c == nil {
			continue
		}
		st := p.cur.chains[name]
		switch {
		case st == nil:
			p.emit(phAddChains, Op{Kind: OpAddChain, Name: name, Base: c.Base})
			if p.cur.read && p.cur.table {
				// A read that raced with another change may have missed
				// an existing chain: flush it rather than append to it.
				p.flush(name)
			}
			p.rewrite[name] = true
			p.stats.ChainsAdded++
		case !equalBase(st.base, c.Base):
			p.flush(name)
			p.emit(phRecreate, Op{Kind: OpDeleteChain, Name: name}, Op{Kind: OpAddChain, Name: name, Base: c.Base})
			p.changed[ref{kind: refChain, name: name}] = true
			p.rewriteChain(name)
		case st.known && rulesEqual(st.rules, c.Rules):
			p.kept = append(p.kept, name)
		case st.known:
			p.rewriteChain(name)
		default:
			p.compareHashes(name, c, st)
		}
	}
	return nil
}

// compareHashes handles a chain read from the kernel: it is unchanged when
// the hash of every rule matches.
func (p *planner) compareHashes(name string, c *Chain, st *chainState) {
	hashes := ruleHashes(name, c.Rules)
	if !slices.Equal(hashes, st.hashes) {
		p.rewriteChain(name)
		return
	}
	known := newChainState(c, hashes)
	p.edit(func(m *mirror) { m.putChain(name, known) })
	p.kept = append(p.kept, name)
}

// rewriteChain flushes an existing chain and schedules its rules.
func (p *planner) rewriteChain(name string) {
	if p.rewrite[name] {
		return
	}
	p.flush(name)
	p.rewrite[name] = true
	p.stats.ChainsRewritten++
}

// checkUsers looks at the chains that are not rewritten and refer to an
// object that is deleted or replaced: a reference that no longer resolves
// is an error in the desired ruleset; a replaced object forces the chain to
// be rewritten, since the kernel does not let a set in use be deleted. The
// users are the kept chains looked at and, from the mirror's index, the
// chains not looked at.
func (p *planner) checkUsers() error {
	if len(p.changed) == 0 {
		return nil
	}
	var errs []error
	check := func(name string) {
		if err := p.checkUser(name); err != nil {
			errs = append(errs, err)
		}
	}
	for _, name := range p.kept {
		check(name)
	}
	for rf := range p.changed {
		for name := range p.cur.users[rf] {
			check(name)
		}
	}
	if len(errs) > 0 {
		slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
		return errs[0]
	}
	return nil
}

// checkUser checks one chain that stays as it is against the changed objects.
func (p *planner) checkUser(name string) error {
	c := p.desired.Chains[name]
	if c == nil || p.rewrite[name] {
		return nil
	}
	for _, rf := range chainRefs(c.Rules) {
		if !p.changed[refKey(rf)] {
			continue
		}
		if err := p.desired.checkRef(rf); err != nil {
			return fmt.Errorf("chain %q: %w", name, err)
		}
		p.rewriteChain(name)
		return nil
	}
	return nil
}

// writeRules validates the chains being written and emits their rules.
func (p *planner) writeRules() error {
	n := 0
	for name := range p.rewrite {
		n += len(p.desired.Chains[name].Rules)
	}
	p.phases[phRules] = slices.Grow(p.phases[phRules], n)
	for _, name := range sortedKeys(p.rewrite) {
		c := p.desired.Chains[name]
		if err := p.desired.validateChain(name, c); err != nil {
			return err
		}
		st := newChainState(c, ruleHashes(name, c.Rules))
		for i, r := range st.rules {
			p.emit(phRules, Op{Kind: OpAddRule, Name: name, Rule: r, Hash: st.hashes[i]})
		}
		p.edit(func(m *mirror) { m.putChain(name, st) })
		p.stats.RulesWritten += len(c.Rules)
	}
	return nil
}
