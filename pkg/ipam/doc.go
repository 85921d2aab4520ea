// Package ipam is Project Calico's block IPAM over etcd: per-host block affinities, allocation
// blocks, handles and the IPAM configuration, in the exact keys and JSON Project Calico writes, so
// either implementation reads and extends the other's state. Every write is an etcd
// compare-and-swap; a write that touches a block and a handle does both in one transaction.
// Its users are the calico-ipam plugin (pkg/cni), calico-startup (tunnel addresses) and
// calicoctl (ipam commands, node removal, pool splits).
//
// The files:
//
//	ipam.go       Client, New, the IPAM configuration, retries after compare-and-swap conflicts
//	store.go      the typed keys (block, affinity, handle) and commit: one compare-and-swap
//	              transaction over several keys
//	block.go      block: a decoded allocation block, its ordinals, attributes and affinity
//	pools.go      the enabled pools that serve a host, and hostView: what an assignment reads
//	              first, in one request
//	assign.go     AutoAssign and AssignToHandle: own blocks, then new blocks, then (without
//	              strict affinity) other hosts' blocks; a failed call releases what it took
//	ownblocks.go  the common case: every family from the host's first block in one transaction
//	assign_ip.go  AssignIP: one given address
//	claim.go      claiming a block for a host, in Project Calico's order (pending affinity,
//	              block, confirmed affinity)
//	release.go    releasing by handle or address; releasing a host's affinities
//	query.go      addresses and attributes by handle or address
//	host.go       RemoveIPAMHost and RemoveHost: a host's affinities and IPAM tree
//	check.go      Check: blocks against handles and affinities (calicoctl ipam check)
//	split.go      SplitPool: one pool into several, in one transaction, under the datastore lock
package ipam
