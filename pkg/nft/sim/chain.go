package sim

import (
	"fmt"

	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/vm"
)

// jumpStackSize is NFT_JUMP_STACK_SIZE: the kernel refuses rulesets that
// nest jumps deeper (nft_chain_validate), so meeting it is an error.
const jumpStackSize = 16

// maxChainEntries bounds a run: the kernel refuses rulesets with loops,
// so a packet entering chains this often means the tables are not ones
// the kernel would hold.
const maxChainEntries = 100000

// frame is a jump stack entry: where to go on when the called chain
// returns.
type frame struct {
	c    *chain
	next int
}

// doChain runs a base chain as nft_do_chain does and appends its steps:
// rules in order until one gives a verdict; jump pushes the next rule,
// goto does not; return, or the end of a chain, pops; the base chain's
// end applies its policy. It returns true when the packet is accepted.
func (st *state) doChain(base *chain, steps *[]Step) (bool, error) {
	var stack []frame
	c, i := base, 0
	for entries := 0; ; entries++ {
		if entries > maxChainEntries {
			return false, fmt.Errorf("chain %s: the packet loops through chains", base.name)
		}
		v, ri, err := st.runRules(c, i, steps)
		if err != nil {
			return false, err
		}
		switch v.Code {
		case vm.VerdictAccept:
			return true, nil
		case vm.VerdictDrop:
			return false, nil
		case vm.VerdictJump:
			if len(stack) >= jumpStackSize {
				return false, fmt.Errorf("chain %s rule %d: jumps nested deeper than %d", c.name, ri, jumpStackSize)
			}
			stack = append(stack, frame{c, ri + 1})
			c, i = c.t.chains[v.Chain], 0
			continue
		case vm.VerdictGoto:
			c, i = c.t.chains[v.Chain], 0
			continue
		case vm.VerdictContinue, vm.VerdictReturn:
		default:
			return false, fmt.Errorf("chain %s rule %d: verdict %s is not simulated", c.name, ri, v)
		}
		if n := len(stack); n > 0 {
			c, i, stack = stack[n-1].c, stack[n-1].next, stack[:n-1]
			continue
		}
		return st.policy(base, steps), nil
	}
}

// policy applies a base chain's policy.
func (st *state) policy(base *chain, steps *[]Step) bool {
	v := nft.Accept()
	if base.base.EffectivePolicy() == nft.PolicyDrop {
		v = nft.Drop()
	}
	*steps = append(*steps, Step{Kind: StepPolicy, Table: base.t.id, Chain: base.name, Rule: -1, Verdict: v, Mark: st.mark})
	return v.Kind == nft.VerdictAccept
}

// runRules runs the rules of c from index i until one gives a verdict
// other than continue; it records a step for every rule whose matches all
// held, and for the chain's end (an implicit return, verdict continue).
// It returns the verdict and the index of the rule that gave it (len of
// the rules at the end).
func (st *state) runRules(c *chain, i int, steps *[]Step) (vm.Verdict, int, error) {
	for ; i < len(c.rules); i++ {
		r := &c.rules[i]
		step := Step{Kind: StepRule, Table: c.t.id, Chain: c.name, Rule: i, Comment: r.comment, Text: r.text}
		m := machine{st: st, c: c, r: r, step: &step}
		v, err := m.run()
		if err != nil {
			return vm.Verdict{}, i, fmt.Errorf("table %s chain %s rule %d: %w", c.t.id, c.name, i, err)
		}
		if step.Counters > 0 {
			st.counted = append(st.counted, Count{Table: c.t.id, Chain: c.name, Rule: i, N: step.Counters})
		}
		if v.Code == verdictBreak {
			continue
		}
		if v.Code == vm.VerdictReturn {
			step.Kind = StepReturn
		}
		step.Verdict, step.Mark = verdictOf(v), st.mark
		*steps = append(*steps, step)
		if v.Code != vm.VerdictContinue {
			return v, i, nil
		}
	}
	*steps = append(*steps, Step{Kind: StepReturn, Table: c.t.id, Chain: c.name, Rule: -1, Verdict: nft.Continue(), Mark: st.mark})
	return vm.Verdict{Code: vm.VerdictContinue}, i, nil
}

// verdictOf is a kernel verdict in the model's terms.
func verdictOf(v vm.Verdict) nft.Verdict {
	out, ok := nft.VerdictFromVM(v)
	if !ok {
		return nft.Verdict{}
	}
	return out
}
