package nft

import (
	"fmt"

	"github.com/google/nftables"
	"golang.org/x/sys/unix"
)

// batch turns operations into google/nftables calls on one Conn.
type batch struct {
	conn     *nftables.Conn
	table    *nftables.Table
	messages int   // messages queued so far
	opEnds   []int // messages queued after each operation
	// splices are the expressions to put into rule messages before sending, by message index
	// (1-based: the index in the batch after its begin marker).
	splices map[int][]splice
}

func (b *batch) chain(name string) *nftables.Chain {
	return &nftables.Chain{Name: name, Table: b.table}
}

func (b *batch) set(name string) *nftables.Set {
	return &nftables.Set{Name: name, Table: b.table}
}

func (b *batch) queue(op Op) error {
	b.messages++
	switch op.Kind {
	case OpAddTable:
		b.conn.AddTable(b.table)
	case OpDeleteTable:
		b.conn.DelTable(b.table)
	case OpAddChain:
		b.conn.AddChain(b.nftChain(op.Name, op.Base))
	case OpFlushChain:
		b.conn.FlushChain(b.chain(op.Name))
	case OpDeleteChain:
		b.conn.DelChain(b.chain(op.Name))
	case OpAddRule:
		return b.addRule(op)
	case OpAddSet, OpAddMap:
		return b.addSet(op)
	case OpDeleteSet, OpDeleteMap:
		b.conn.DelSet(b.set(op.Name))
	case OpAddElements, OpDeleteElements, OpAddMapElements, OpDeleteMapElements:
		b.messages--
		return b.elements(op)
	default:
		return fmt.Errorf("unknown operation %d", op.Kind)
	}
	return nil
}

var hookNums = map[Hook]nftables.ChainHook{
	HookPrerouting: unix.NF_INET_PRE_ROUTING, HookInput: unix.NF_INET_LOCAL_IN,
	HookForward: unix.NF_INET_FORWARD, HookOutput: unix.NF_INET_LOCAL_OUT,
	HookPostrouting: unix.NF_INET_POST_ROUTING,
}

func (b *batch) nftChain(name string, base *BaseChain) *nftables.Chain {
	c := b.chain(name)
	if base == nil {
		return c
	}
	policy := nftables.ChainPolicyAccept
	if base.policy() == PolicyDrop {
		policy = nftables.ChainPolicyDrop
	}
	c.Type = nftables.ChainType(base.Type)
	c.Hooknum = nftables.ChainHookRef(hookNums[base.Hook])
	c.Priority = nftables.ChainPriorityRef(nftables.ChainPriority(base.Priority))
	c.Policy = &policy
	return c
}

func (b *batch) addRule(op Op) error {
	enc := newEncoder(func(s *nftables.Set, elems []nftables.SetElement) error {
		s.Table = b.table
		b.messages += 2
		return b.conn.AddSet(s, elems)
	})
	for _, x := range op.Rule.Exprs {
		x.encode(enc)
	}
	if enc.err != nil {
		return enc.err
	}
	b.conn.AddRule(&nftables.Rule{
		Table:    b.table,
		Chain:    b.chain(op.Name),
		Exprs:    enc.exprs,
		UserData: ruleUserData(kernelComment(op.Hash, op.Rule)),
	})
	if len(enc.splices) > 0 { // the rule is the last message queued (anonymous sets go first)
		if b.splices == nil {
			b.splices = map[int][]splice{}
		}
		b.splices[b.messages] = enc.splices
	}
	return nil
}

func (b *batch) addSet(op Op) error {
	t, err := parseSetType(op.Type)
	if err != nil {
		return err
	}
	s := &nftables.Set{
		Table:         b.table,
		Name:          op.Name,
		KeyType:       t.nftType(),
		Interval:      op.Interval,
		Concatenation: t.concat(),
		KeyByteOrder:  t.byteOrder(),
	}
	if op.Kind == OpAddMap {
		s.IsMap, s.DataType = true, nftables.TypeVerdict
	}
	return b.conn.AddSet(s, nil)
}

// maxElemBytes bounds the element list of one message: it is one netlink
// attribute, whose length is 16 bits.
const maxElemBytes = 32 << 10

// elements sends element operations in as many messages as needed, all in
// the same batch.
func (b *batch) elements(op Op) error {
	var elems []nftables.SetElement
	size := 0
	flush := func() error {
		if len(elems) == 0 {
			return nil
		}
		b.messages++
		var err error
		if op.Kind == OpAddElements || op.Kind == OpAddMapElements {
			err = b.conn.SetAddElements(b.set(op.Name), elems)
		} else {
			err = b.conn.SetDeleteElements(b.set(op.Name), elems)
		}
		elems, size = nil, 0
		return err
	}
	for _, e := range nftElements(op) {
		if size > maxElemBytes {
			if err := flush(); err != nil {
				return err
			}
		}
		elems = append(elems, e...)
		for _, x := range e {
			size += 48 + len(x.Key) + len(x.KeyEnd)
			if x.VerdictData != nil {
				size += 24 + len(x.VerdictData.Chain)
			}
		}
	}
	return flush()
}

// nftElements converts an operation's elements; each entry holds the
// kernel elements of one of ours (an interval's start and end stay together).
func nftElements(op Op) [][]nftables.SetElement {
	var out [][]nftables.SetElement
	for _, e := range op.Elements {
		out = append(out, setElements([]element{e}, op.Interval))
	}
	for _, e := range op.MapElems {
		el := nftables.SetElement{Key: e.key}
		if op.Kind == OpAddMapElements {
			el.VerdictData = e.verdict.nft()
		}
		out = append(out, []nftables.SetElement{el})
	}
	return out
}
