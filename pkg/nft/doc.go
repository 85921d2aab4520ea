// Package nft is a generic nftables library with one typed model. It knows
// nothing of Calico: a renderer describes the tables it wants, and an
// Applier (package apply) makes the kernel (package kernel) or an in-memory
// fake (package fake) hold exactly that.
//
// The packages:
//
//   - nft: the model (tables, chains, rules, sets, maps), the expressions
//     and their lowering to and raising from kernel instructions, dumps in
//     nft syntax, the batch vocabulary (Batch, Op) and its errors
//     (CommitError), and the Backend interface.
//   - nft/vm: the kernel's instructions (payload, meta, cmp, lookup, nat,
//     ...) and their netlink encoding; nothing of nft syntax.
//   - nft/apply: the Applier: planning (partial and full syncs) and the
//     mirror of what a backend holds.
//   - nft/kernel: the netlink backend (own encoding on mdlayher/netlink).
//   - nft/fake: the in-memory backend for tests.
//
// The files of package nft:
//
//	family.go      Family, TableID, IPVersion, chain types and hooks
//	table.go       Chain, Table (chains, sets, maps; Put/Delete), Journal: what changed
//	validate.go    references between a table's objects, users of an object, Validate
//	expr.go        Expr, Match, Ref, Rule: the expression vocabulary
//	field.go       Field: what a rule compares or looks up (addresses, ports, marks, names)
//	match.go       the match types, in canonical form; match_ctor.go: their constructors
//	stmt.go        statements and Verdict
//	datatype.go    DataType: key types of sets and maps, concatenations
//	element.go     Key and Element: the kernel's bytes, built from typed values
//	set.go         Set and Map, element and map diffs
//	boxes.go       a concatenated interval set's boxes made disjoint
//	lower.go       LowerRule: expressions -> kernel instructions (package vm), anonymous sets
//	raise.go       RaiseRule and Canonical: kernel instructions -> expressions;
//	               raise_load.go: field loads and their comparisons
//	text.go        Dump: tables as `nft list` prints them
//	names.go       protocol names, ValidName, MaxNameLen
//	batch.go       Backend, ReadOptions, CommitInfo, Batch, Op
//	errors.go      Object, ObjectError, CommitError and Causes
//
// # Model
//
// A Table (any family: ip, ip6, inet, arp, bridge, netdev) holds chains,
// sets and verdict maps:
//
//   - Chain{Name, Base, Rules}: a base chain (Base: type, hook, priority,
//     policy) or a regular chain reached by jump, goto or a verdict map.
//   - Rule{Exprs, Comment}: expressions built by constructors: matches
//     (SAddr, DPort, InSet, InList, L4Proto, IIFName, CTStateIn,
//     MarkMasked, FibAddrType, ICMPType, ARPOp, EtherSAddr, ..., negated by
//     Not) and statements (Counter, Log, LogGroup, Reject, Notrack, SetMarkBits,
//     SNAT, DNATToPort, MasqueradeToPorts, Vmap, and the verdicts Accept,
//     Drop, Return, Jump, Goto).
//   - Set{Name, Type, Interval, Elements}: Type is a DataType (TypeIPv4Addr,
//     TypeInetService, Concat(...)); elements are built from typed values
//     (AddrElem, PrefixElem, PortRangeElem, IfnameElem, IfnamePrefixElem,
//     ConcatElem) and stored as the kernel's bytes. An interval set's (and
//     a list's) elements are normalized as the kernel takes them: ranges
//     merged, and a concatenation's boxes (one range per field) made
//     disjoint, exactly (boxes.go).
//   - Map{Name, Type, Elements map[Key]Verdict}: a verdict map.
//
// Values are typed end to end and text appears only in dumps: every
// expression is a small comparable value that lowers to kernel instructions
// (package vm), raises back from them (RaiseRule) and prints as `nft list`
// prints it (Rule.Text, Table.Dump). Keys and elements are compact strings
// of kernel bytes, so a million elements cost a million small strings.
//
// # Changes
//
// Tables record which objects were put or deleted (Table.Journal). An
// Applier applying the same Table again plans only those objects: a partial
// sync costs what changed. Objects handed to a Table are owned by it and
// never copied; change them by putting new ones (UpdateSet and UpdateMap
// copy for you).
//
// # Applying
//
// apply.Applier.Apply diffs the desired tables against what it knows the
// backend holds (a mirror of pointers to the objects it last wrote) and
// commits one batch for all its tables: one netlink transaction. Changed
// chains are flushed and refilled inside it; set and map elements change
// one by one; objects are created before anything refers to them and
// deleted after their users are gone. A full sync (the first Apply, after a
// failure it cannot account for, or on request) reads the tables back into
// this model, compares and repairs the drift in that same single batch; it
// never deletes a table it keeps, so the rules stay in force throughout.
// It reads nothing when the ruleset generation (Backend.Generation) has not
// moved since the mirror was known exact, and it never reads a big set's
// elements back: it trusts what it wrote while the set is the same one (its
// handle), for a bounded number of full syncs, and otherwise writes the set
// whole (a flush and every element, in the batch).
//
// # Failures
//
// When a batch is refused, nothing of it is applied and the error is a
// *CommitError listing the refused objects (table, chain, set or map, rule
// index) with the kernel's reasons, so that a caller can replace those
// objects and apply again. The Applier's mirror stays what the backend
// holds, so the retry is again a partial sync:
//
//	_, err := applier.Apply(ctx, tables...)
//	var ce *nft.CommitError
//	if errors.As(err, &ce) {
//		for _, o := range ce.Causes() { // rules' chains, sets, maps
//			// replace o (say, with a chain that drops) in its table
//		}
//		_, err = applier.Apply(ctx, tables...)
//	}
//
// The kernel goes on through a refused batch and reports every operation
// it refuses, but some refusals follow from others: an operation referring
// to an object that could not be created fails (ENOENT), and a rule that
// makes the table invalid (a jump loop, EMLINK) makes every rule added
// after it fail as well. Causes leaves those out, so that replacing the
// causes of one refusal, however many, is enough for the retry to go
// through (or to show the next cause first).
//
// # Limits
//
// Reading a set back costs what the kernel's dump costs: the rbtree and
// hash backends restart their walk for every 32 KiB message, so reading a
// set of a million interval elements takes minutes (nft list is slower
// still); applying it, or writing it whole, takes seconds, and partial
// syncs of it milliseconds. Hence full syncs do not read big sets back. The fake does not check which statements a hook allows
// (nat outside nat chains, say) nor the kernel's limit of 16 nested jumps.
package nft
