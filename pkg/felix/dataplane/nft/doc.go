// Package nft is felix's generic nftables layer. It knows nothing about
// Calico policy: a renderer turns felix's desired state into a *Ruleset and
// hands it to Applier.Apply.
//
// # Model
//
// A Ruleset is the whole content of one table of family inet (DefaultTable,
// "calico"): chains (base chains attached to a hook, and regular chains),
// named sets (plain, interval, or concatenated types) and verdict maps. A
// Rule is an ordered list of primitives built by this package's
// constructors — matches such as IIFName, SAddrInSet, DPort, CTStateIn,
// MarkMatch, FibNoRoute; statements such as Counter, Accept, Jump, OrMark,
// Log, Masquerade, DNAT, IIFNameVmap — and an optional comment. Every
// primitive prints itself exactly as `nft list` prints it (String) and
// encodes itself as google/nftables expressions, adding the protocol
// dependencies nft adds implicitly (meta nfproto before an ip match in an
// inet table, meta l4proto before a tcp port match).
//
// # Applying
//
// Applier.Apply diffs the desired Ruleset against what it last wrote and
// commits one transaction: new sets and maps, new (empty) chains, element
// deltas, flushes of changed chains, replacements of objects whose type
// changed, the rules of changed chains, then deletions of what is no longer
// wanted, in that order, so the kernel never sees a dangling reference. A
// changed chain is always rewritten whole. Unchanged chains and elements are
// not touched. Every rule carries a hash comment (`cali:<hash>;`) chained
// over its chain's name and the rules before it, so a full sync can compare
// the kernel's chains with the desired ones without decoding expressions.
// A full sync (first Apply, after a failed commit, after RequestFullSync)
// reads the kernel and repairs drift in the same single transaction; it
// never deletes the table, so the old rules stay in force until the new
// transaction commits.
//
// # Partial syncs of a tracked ruleset
//
// A renderer that keeps one Ruleset and edits it in place calls
// Ruleset.Track and reports every change (AddChain, AddSet, AddMap and the
// Delete methods do; edits in place are reported with TouchChain, TouchSet
// and TouchMap). When the same Applier applies that Ruleset again, it plans
// only the reported objects: a partial sync costs what changed, not the
// size of the table. Set element deltas come from a merge of the sorted old
// and new element lists; only the changed elements are parsed, and an
// interval set re-merges only the intervals they touch. The Applier keeps
// one mirror of the kernel and edits it in place once a transaction
// commits. Untracked rulesets, other rulesets and full syncs are compared
// whole.
//
// # Kernel cost
//
// The kernel re-validates the whole table (every chain reachable from a
// base chain, through jumps and verdict maps, without memoisation) in any
// transaction that adds a rule with an expression that has a validate hook
// (verdicts, meta and mark matches and statements, ...) or a verdict map
// element that jumps or goes to a chain. Counters-only rules, set elements,
// accept/drop map elements and deletions do not trigger it. On the calc
// bench shape that validation costs about 5 ms per such transaction; see
// BenchmarkCommitKinds.
//
// # Namespaces
//
// NewNetlink keeps its own duplicate of NetlinkConfig.NetNS, so a caller
// closing its descriptor cannot redirect it. Tests call RefuseOwnNamespace.
//
// # Kernels
//
// NewNetlink programs the kernel through netlink (github.com/google/nftables,
// one Conn and one Flush per commit, optionally in another network
// namespace); NewFake keeps the table in memory, refuses what the kernel
// refuses, applies transactions atomically and dumps the table as sorted
// nft text for golden tests.
package nft
