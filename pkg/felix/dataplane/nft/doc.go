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
// # Kernels
//
// NewNetlink programs the kernel through netlink (github.com/google/nftables,
// one Conn and one Flush per commit, optionally in another network
// namespace); NewFake keeps the table in memory, refuses what the kernel
// refuses, applies transactions atomically and dumps the table as sorted
// nft text for golden tests.
package nft
