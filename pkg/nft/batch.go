package nft

import (
	"context"
	"strconv"
	"time"
)

// Backend holds tables: the kernel (package kernel) or an in-memory fake
// (package fake). The Applier reads tables from it and commits batches.
type Backend interface {
	// Read returns the content of the tables that exist among ids, decoded
	// into the typed model. Objects it cannot decode come back in a form
	// that equals no desired object (an Undecoded rule, a set with an
	// invalid type), so that a sync replaces them.
	Read(ctx context.Context, ids []TableID, opts ReadOptions) ([]*Table, error)
	// Commit applies the batch atomically: all of it or nothing. A batch
	// that is refused, by the backend's encoder or by the kernel, returns a
	// *CommitError naming the objects at fault; nothing of it was applied.
	Commit(ctx context.Context, b *Batch) (CommitInfo, error)
	// Generation is the ruleset generation: a number every committed
	// batch changes, whoever commits it (the kernel's is per network
	// namespace). While it stays the same, nothing changed.
	Generation(ctx context.Context) (uint32, error)
}

// ReadOptions narrows a Read.
type ReadOptions struct {
	// SkipElements, when set, names the sets whose elements are not read:
	// they come back with Unread set and no elements. Reading a set back
	// costs what the kernel's dump costs (see Limits in the package doc).
	SkipElements func(table TableID, set string) bool
	// SetsOnly reads the sets' declarations alone (their handles, say):
	// no elements, no chains, rules or maps.
	SetsOnly bool
}

// CommitInfo describes a commit.
type CommitInfo struct {
	Messages   int           // netlink messages sent (0 for the fake)
	Bytes      int           // bytes sent
	EncodeTime time.Duration // building the messages
	// Generation is the ruleset generation this commit made, when no
	// other commit came between it and the generation before it, so that
	// the backend holds exactly what the committer knows; 0 when unknown.
	Generation uint32
}

// OpKind is what one operation of a batch does.
type OpKind uint8

// Operations. A backend may send one operation as several messages (a long
// element list), always inside the one batch.
const (
	OpAddTable OpKind = iota + 1
	OpDeleteTable
	OpAddChain // create a chain, or change a base chain's policy
	OpFlushChain
	OpDeleteChain
	OpAddRule
	OpAddSet
	OpDeleteSet
	OpAddElements
	OpDeleteElements
	OpAddMap
	OpDeleteMap
	OpAddMapElements
	OpDeleteMapElements
	OpFlushSet // remove every element of a set
)

var opNames = [...]string{
	OpAddTable: "add table", OpDeleteTable: "delete table", OpAddChain: "add chain",
	OpFlushChain: "flush chain", OpDeleteChain: "delete chain", OpAddRule: "add rule",
	OpAddSet: "add set", OpDeleteSet: "delete set", OpAddElements: "add element",
	OpDeleteElements: "delete element", OpAddMap: "add map", OpDeleteMap: "delete map",
	OpAddMapElements: "add element", OpDeleteMapElements: "delete element", OpFlushSet: "flush set",
}

func (k OpKind) String() string {
	if int(k) < len(opNames) && opNames[k] != "" {
		return opNames[k]
	}
	return "op(" + strconv.Itoa(int(k)) + ")"
}

// Op is one operation. Name is the chain, set or map it acts on; the other
// fields are used by the kinds that need them.
type Op struct {
	Kind        OpKind
	Table       TableID
	Name        string
	Base        *BaseChain   // OpAddChain: nil for a regular chain
	Rule        *Rule        // OpAddRule (the desired rule itself, not a copy)
	Index       int          // OpAddRule: the rule's position in its chain
	Type        DataType     // set and map operations: the key type
	Interval    bool         // OpAddSet and set element operations
	Elements    []Element    // set element operations
	MapElements []MapElement // OpAddMapElements
	Keys        []Key        // OpDeleteMapElements
}

// Object is what the operation acts on, for error reports.
func (op *Op) Object() Object {
	o := Object{Table: op.Table, Name: op.Name, Rule: -1}
	switch op.Kind {
	case OpAddTable, OpDeleteTable:
		o.Kind, o.Name = ObjectTable, ""
	case OpAddChain, OpFlushChain, OpDeleteChain:
		o.Kind = ObjectChain
	case OpAddRule:
		o.Kind, o.Rule = ObjectRule, op.Index
	case OpAddSet, OpDeleteSet, OpAddElements, OpDeleteElements, OpFlushSet:
		o.Kind = ObjectSet
	default:
		o.Kind = ObjectMap
	}
	return o
}

// Batch is an ordered list of operations on one or more tables, committed
// as one transaction.
type Batch struct {
	Ops []Op
}

// Count returns how many operations of kind k the batch holds.
func (b *Batch) Count(k OpKind) int {
	n := 0
	for i := range b.Ops {
		if b.Ops[i].Kind == k {
			n++
		}
	}
	return n
}
