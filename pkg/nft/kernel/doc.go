// Package kernel is the nft.Backend that programs nf_tables through
// netlink. It owns the whole encoding (on github.com/mdlayher/netlink for
// sockets only): every Commit is one batch, sent in one sendmsg with
// consecutive sequence numbers, so that the kernel's error for a message
// names the operation, and the object, it came from. Long element lists
// are split into several messages of the same batch (an attribute holds at
// most 64 KiB) and the socket buffer is sized for the whole batch.
// RawRules reads rules without the typed model; LogGroupCounters sums from
// them the counters of the rules that log to an NFLOG group (flow logs'
// per-policy metrics).
//
// The files:
//
//	kernel.go      Config, Backend (one socket per network namespace), New
//	netns.go       RefuseOwnNamespace: tests never program the namespace the process runs in
//	encode.go      encoder: a batch into one buffer of netlink messages, one sequence number each
//	elements.go    set and map elements, split over messages when an attribute would overflow
//	commit.go      Commit: one transaction; the kernel's errors attributed to operations and
//	               objects (nft.CommitError); the ruleset generation before and after
//	detail.go      the element an error points at (extended acknowledgements)
//	raw.go         RawRules: rules as instructions (handles, counters), without the typed model
//	counters.go    LogGroupCounters: the counters of the rules that log to an NFLOG group
//	dump.go        netlink dumps with a large receive buffer
//	read.go        Read: tables dumped and raised into the model, repeated when the generation
//	               moves; Generation
//	read_sets.go   sets and maps read back, and anonymous sets for the rules that use them
package kernel
