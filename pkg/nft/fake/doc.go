// Package fake is an in-memory nft.Backend for tests. A commit applies the
// batch to a copy of the tables and keeps the copy only if every operation
// succeeded, as the kernel does; it refuses what the kernel refuses
// (dangling references, deleting objects in use, jump loops, jumps to base
// chains, wrong element lengths, overlapping intervals, over-long names,
// rules that cannot be encoded) with the kernel's error numbers, attributed
// to the operations as the kernel attributes them, and it can be told to
// refuse chosen objects. Rules are kept in canonical form (as they read back
// from the kernel), so a dump of the fake equals a dump of the kernel
// after the same batches. Like the kernel, it gives each set a handle and
// keeps a ruleset generation that every commit (and Tamper) changes.
//
// The files:
//
//	fake.go     Backend: its tables, sets' handles, the generation; Commit, Read, Tamper,
//	            refusing chosen objects
//	tx.go       tx: one batch applied to copy-on-write copies of the tables, each operation
//	            checked as the kernel checks it
//	objects.go  the checks that need the other objects: references, objects in use, jump
//	            loops, overlapping intervals
package fake
