package nft

import (
	"fmt"
	"strconv"
	"strings"
)

// OpKind is the kind of one transaction operation.
type OpKind uint8

// Operations, each one netlink message (element operations may be split
// into several messages, still inside the one batch).
const (
	OpAddTable OpKind = iota + 1
	OpDeleteTable
	OpAddChain
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
)

var opNames = map[OpKind]string{
	OpAddTable: "add table", OpDeleteTable: "delete table", OpAddChain: "add chain",
	OpFlushChain: "flush chain", OpDeleteChain: "delete chain", OpAddRule: "add rule",
	OpAddSet: "add set", OpDeleteSet: "delete set", OpAddElements: "add element",
	OpDeleteElements: "delete element", OpAddMap: "add map", OpDeleteMap: "delete map",
	OpAddMapElements: "add element", OpDeleteMapElements: "delete element",
}

func (k OpKind) String() string {
	if s, ok := opNames[k]; ok {
		return s
	}
	return "op(" + strconv.Itoa(int(k)) + ")"
}

// Op is one operation of a Transaction. Name is the chain, set or map it
// acts on; the other fields are used by the kinds that need them.
type Op struct {
	Kind     OpKind
	Name     string
	Base     *BaseChain   // OpAddChain: nil for a regular chain
	Rule     Rule         // OpAddRule
	Hash     string       // OpAddRule: the rule's identity hash
	Type     string       // OpAddSet (key type), OpAddMap (key type)
	Interval bool         // OpAddSet, and element ops on interval sets
	Elements []element    // set element ops
	MapElems []mapElement // map element ops
}

// Transaction is an ordered list of operations that the kernel applies
// atomically: all of them or none.
type Transaction struct {
	Ops []Op
}

// Len is the number of operations.
func (tx *Transaction) Len() int { return len(tx.Ops) }

// Count returns how many operations of kind k the transaction holds.
func (tx *Transaction) Count(k OpKind) int {
	n := 0
	for _, op := range tx.Ops {
		if op.Kind == k {
			n++
		}
	}
	return n
}

// Script renders the transaction as an `nft -f` script for table.
func (tx *Transaction) Script(table string) string {
	var b strings.Builder
	t := "inet " + quoteName(table)
	for _, op := range tx.Ops {
		b.WriteString(op.script(t))
		b.WriteByte('\n')
	}
	return b.String()
}

func (op Op) script(table string) string {
	head := op.Kind.String() + " " + table
	name := quoteName(op.Name)
	switch op.Kind {
	case OpAddTable, OpDeleteTable:
		return head
	case OpAddChain:
		if op.Base != nil {
			return fmt.Sprintf("%s %s { %s }", head, name, op.Base)
		}
		return head + " " + name
	case OpAddRule:
		return fmt.Sprintf("%s %s %s", head, name, ruleWithHash(op.Rule, op.Hash))
	case OpAddSet:
		return fmt.Sprintf("%s %s { type %s;%s }", head, name, op.Type, flagsText(op.Interval))
	case OpAddMap:
		return fmt.Sprintf("%s %s { type %s : verdict; }", head, name, op.Type)
	case OpAddElements, OpDeleteElements:
		return fmt.Sprintf("%s %s { %s }", head, name, strings.Join(elementTexts(op.Elements), ", "))
	case OpAddMapElements:
		return fmt.Sprintf("%s %s { %s }", head, name, strings.Join(mapElemTexts(op.MapElems, true), ", "))
	case OpDeleteMapElements:
		return fmt.Sprintf("%s %s { %s }", head, name, strings.Join(mapElemTexts(op.MapElems, false), ", "))
	}
	return head + " " + name
}

// brief describes an operation in one short line for error messages.
func (op Op) brief() string {
	s := op.Kind.String() + " " + quoteName(op.Name)
	switch {
	case op.Kind == OpAddRule:
		s += " " + op.Rule.String()
	case len(op.Elements) > 0:
		s += fmt.Sprintf(" (%d elements, first %s)", len(op.Elements), op.Elements[0].text)
	case len(op.MapElems) > 0:
		s += fmt.Sprintf(" (%d elements, first %s)", len(op.MapElems), op.MapElems[0].text)
	}
	return s
}

func flagsText(interval bool) string {
	if interval {
		return " flags interval;"
	}
	return ""
}

// ruleWithHash renders a rule with the comment the kernel stores for it.
func ruleWithHash(r Rule, hash string) string {
	body := Rule{Exprs: r.Exprs}.String()
	return body + " comment " + strconv.Quote(kernelComment(hash, r))
}

func elementTexts(elems []element) []string {
	out := make([]string, len(elems))
	for i, e := range elems {
		out[i] = e.text
	}
	return out
}

func mapElemTexts(elems []mapElement, withVerdict bool) []string {
	out := make([]string, len(elems))
	for i, e := range elems {
		out[i] = e.text
		if withVerdict {
			out[i] += " : " + e.verdict.String()
		}
	}
	return out
}
