package nft

import (
	"context"
	"time"
)

// Kernel is the nftables backend of the Applier, scoped to one inet table
// and working at transaction granularity. NewNetlink programs the real
// kernel; NewFake keeps the table in memory.
type Kernel interface {
	// Read returns what our table currently holds.
	Read(ctx context.Context) (*KernelState, error)
	// Commit applies all operations of tx atomically: all or none.
	Commit(ctx context.Context, tx *Transaction) (CommitInfo, error)
}

// CommitInfo describes what a Commit sent.
type CommitInfo struct {
	Messages   int           // netlink messages in the batch (0 for the fake)
	Bytes      int           // netlink bytes in the batch (0 for the fake)
	EncodeTime time.Duration // of the commit, spent encoding the batch (0 for the fake)
}

// KernelState is the content of our table as read back from the kernel.
// Rules are identified only by the hashes in their comments; elements are
// in canonical nft text.
type KernelState struct {
	TableExists bool
	Chains      map[string]*KernelChain
	Sets        map[string]*KernelSet
	Maps        map[string]*KernelMap
}

// KernelChain is one chain of our table.
type KernelChain struct {
	Base    *BaseChain
	Hashes  []string // one per rule, "" for a rule without our hash comment
	Handles []uint64 // the kernel's rule handles, same order (0 in the fake)
}

// KernelSet is one named set of our table.
type KernelSet struct {
	Type     string
	Interval bool
	Elements []string
}

// KernelMap is one verdict map of our table.
type KernelMap struct {
	KeyType  string
	Elements map[string]Verdict
}

func newKernelState() *KernelState {
	return &KernelState{
		Chains: map[string]*KernelChain{},
		Sets:   map[string]*KernelSet{},
		Maps:   map[string]*KernelMap{},
	}
}
