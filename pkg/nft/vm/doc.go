// Package vm is the nf_tables virtual machine's instruction set: the kernel
// expressions a rule is made of (payload and meta loads, cmp, bitwise,
// lookup, immediate, nat, ...), as typed Go values that marshal to and from
// their netlink encoding exactly. It knows nothing of nft syntax or of
// dependencies between matches; package nft lowers its typed matches and
// statements to these instructions and raises them back.
//
// The files:
//
//	vm.go     Register, the Expr interface, Marshal and Unmarshal of a rule's expression list,
//	          Unknown (an expression this package does not model, kept as bytes)
//	exprs.go  loads, comparisons and data: Verdict, Payload, Meta, Cmp, Bitwise, Range, Lookup,
//	          Immediate, Byteorder
//	stmts.go  Counter, Log, Reject, NAT, Masq, Notrack, Ct, Fib
package vm
