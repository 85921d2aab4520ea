package ipam

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"sort"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
)

// CheckReport is a consistency report of IPAM blocks against handles and affinities (for
// `calicoctl ipam check`). Every list is sorted; an empty report is a consistent datastore.
type CheckReport struct {
	Blocks       int // blocks read
	Handles      int // handles read
	Affinities   int // affinities read
	AllocatedIPs int // addresses allocated in blocks

	// LeakedIPs are allocated addresses whose allocation has no handle or names a handle that does
	// not exist: nothing will ever release them by handle.
	LeakedIPs []LeakedIP
	// HandleMismatches are handles whose per-block count differs from what the blocks hold
	// (Actual 0: a handle without allocation).
	HandleMismatches []HandleMismatch
	// BlocksWithoutAffinity are blocks affine to a host that has no affinity key for them.
	BlocksWithoutAffinity []BlockRef
	// AffinitiesWithoutBlock are confirmed affinities whose block does not exist.
	AffinitiesWithoutBlock []BlockRef
	// PendingAffinities are affinities left pending or pendingDeletion (an interrupted claim or release).
	PendingAffinities []BlockRef
	// CorruptBlocks are blocks whose allocations and free list disagree, or that could not be decoded.
	CorruptBlocks []CorruptBlock

	// Allocations are every allocated address of the blocks read, by block and ordinal (for
	// `calicoctl ipam check --show-all-ips`; not part of the written report).
	Allocations []Allocation `json:"-"`
}

// Allocation is one allocated address of a block.
type Allocation struct {
	IP       netip.Addr
	Block    string
	Affinity string // the block's affinity ("host:<node>"), "" when none
	Attr     api.AllocationAttribute
}

// LeakedIP is an allocated address nothing can release by handle.
type LeakedIP struct {
	IP     netip.Addr
	Block  string
	Handle string // "" when the allocation has no handle
}

// HandleMismatch is a handle whose stored count for a block is not what the block holds.
type HandleMismatch struct {
	Handle   string
	Block    string
	Recorded int // the handle's count for the block
	Actual   int // the block's allocations carrying the handle
}

// BlockRef names a block and a host.
type BlockRef struct {
	Host  string
	Block string
	State string `json:",omitempty"`
}

// CorruptBlock is a block that is not internally consistent.
type CorruptBlock struct {
	Block  string
	Reason string
}

// Problems counts the findings (pending affinities included).
func (r *CheckReport) Problems() int {
	return len(r.LeakedIPs) + len(r.HandleMismatches) + len(r.BlocksWithoutAffinity) +
		len(r.AffinitiesWithoutBlock) + len(r.PendingAffinities) + len(r.CorruptBlocks)
}

// Check reads every block, handle and affinity and reports inconsistencies between them.
func (c *Client) Check(ctx context.Context) (*CheckReport, error) {
	r := &CheckReport{}
	blocks, err := c.checkBlocks(ctx, r)
	if err != nil {
		return nil, err
	}
	handles, err := c.allHandles(ctx, r)
	if err != nil {
		return nil, err
	}
	actual := map[string]map[string]int{} // handle -> block -> count
	for _, b := range blocks {
		r.AllocatedIPs += checkAllocations(b, handles, actual, r)
	}
	checkHandleCounts(handles, actual, r)
	if err := c.checkAffinities(ctx, blocks, r); err != nil {
		return nil, err
	}
	sortReport(r)
	return r, nil
}

// checkBlocks lists all blocks of both families, noting undecodable and inconsistent ones.
func (c *Client) checkBlocks(ctx context.Context, r *CheckReport) ([]*block, error) {
	kvs, _, err := c.ds.ListKV(ctx, datastore.BlockPrefix, 0)
	if err != nil {
		return nil, fmt.Errorf("listing blocks: %w", err)
	}
	var out []*block
	for i := range kvs {
		s, ok := datastore.ParseBlockKey(kvs[i].Key)
		if !ok {
			continue
		}
		r.Blocks++
		cidr, err := netip.ParsePrefix(s)
		if err != nil {
			r.CorruptBlocks = append(r.CorruptBlocks, CorruptBlock{Block: s, Reason: err.Error()})
			continue
		}
		b, err := decodeBlock(cidr, &kvs[i])
		if err != nil {
			r.CorruptBlocks = append(r.CorruptBlocks, CorruptBlock{Block: s, Reason: err.Error()})
			continue
		}
		if reason := freeListProblem(b.b); reason != "" {
			r.CorruptBlocks = append(r.CorruptBlocks, CorruptBlock{Block: s, Reason: reason})
		}
		out = append(out, b)
	}
	return out, nil
}

// freeListProblem checks that every ordinal is either allocated or listed free exactly once.
func freeListProblem(b *api.AllocationBlock) string {
	seen := make([]bool, len(b.Allocations))
	for _, o := range b.Unallocated {
		switch {
		case o < 0 || o >= len(b.Allocations):
			return fmt.Sprintf("free list has out-of-range ordinal %d", o)
		case seen[o]:
			return fmt.Sprintf("ordinal %d is listed free twice", o)
		case b.Allocations[o] != nil:
			return fmt.Sprintf("ordinal %d is both allocated and free", o)
		}
		seen[o] = true
	}
	for o, a := range b.Allocations {
		if a == nil && !seen[o] {
			return fmt.Sprintf("ordinal %d is neither allocated nor free", o)
		}
	}
	return ""
}

// allHandles reads every handle.
func (c *Client) allHandles(ctx context.Context, r *CheckReport) (map[string]api.IPAMHandle, error) {
	kvs, _, err := c.ds.ListKV(ctx, datastore.HandlePrefix, 0)
	if err != nil {
		return nil, fmt.Errorf("listing handles: %w", err)
	}
	out := map[string]api.IPAMHandle{}
	for _, kv := range kvs {
		var h api.IPAMHandle
		if err := json.Unmarshal(kv.Value, &h); err != nil {
			c.log.Warn().Err(err).Str("key", kv.Key).Msg("undecodable handle")
			continue
		}
		out[kv.Key[len(datastore.HandlePrefix):]] = h
		r.Handles++
	}
	return out, nil
}

// checkAllocations counts a block's allocations per handle and records leaked addresses.
func checkAllocations(b *block, handles map[string]api.IPAMHandle, actual map[string]map[string]int, r *CheckReport) int {
	n := 0
	for o, a := range b.b.Allocations {
		if a == nil {
			continue
		}
		n++
		var attr api.AllocationAttribute
		if *a >= 0 && *a < len(b.b.Attributes) {
			attr = b.b.Attributes[*a]
		}
		affinity := ""
		if b.b.Affinity != nil {
			affinity = *b.b.Affinity
		}
		r.Allocations = append(r.Allocations, Allocation{IP: ordinalAddr(b.cidr, o), Block: b.cidr.String(), Affinity: affinity, Attr: attr})
		id := attrHandle(attr)
		if _, ok := handles[id]; !ok || id == "" {
			r.LeakedIPs = append(r.LeakedIPs, LeakedIP{IP: ordinalAddr(b.cidr, o), Block: b.cidr.String(), Handle: id})
		}
		if id != "" {
			if actual[id] == nil {
				actual[id] = map[string]int{}
			}
			actual[id][b.cidr.String()]++
		}
	}
	return n
}

// checkHandleCounts compares each handle's recorded counts with the blocks.
func checkHandleCounts(handles map[string]api.IPAMHandle, actual map[string]map[string]int, r *CheckReport) {
	for id, h := range handles {
		for blk, n := range h.Block {
			if got := actual[id][blk]; got != n {
				r.HandleMismatches = append(r.HandleMismatches, HandleMismatch{Handle: id, Block: blk, Recorded: n, Actual: got})
			}
		}
		for blk, got := range actual[id] {
			if _, ok := h.Block[blk]; !ok {
				r.HandleMismatches = append(r.HandleMismatches, HandleMismatch{Handle: id, Block: blk, Actual: got})
			}
		}
	}
}

// checkAffinities matches affinities against the blocks' affinity fields.
func (c *Client) checkAffinities(ctx context.Context, blocks []*block, r *CheckReport) error {
	affs, err := c.listAffinities(ctx, "", 0)
	if err != nil {
		return err
	}
	r.Affinities = len(affs)
	byBlock := map[netip.Prefix]*block{}
	for _, b := range blocks {
		byBlock[b.cidr] = b
	}
	claimed := map[BlockRef]bool{}
	for _, a := range affs {
		ref := BlockRef{Host: a.host, Block: a.cidr.String()}
		claimed[ref] = true
		if a.state != api.AffinityConfirmed {
			r.PendingAffinities = append(r.PendingAffinities, BlockRef{Host: a.host, Block: a.cidr.String(), State: a.state})
			continue
		}
		if _, ok := byBlock[a.cidr]; !ok {
			r.AffinitiesWithoutBlock = append(r.AffinitiesWithoutBlock, ref)
		}
	}
	for _, b := range blocks {
		host := affinityHost(b.b)
		if host == "" {
			continue
		}
		if ref := (BlockRef{Host: host, Block: b.cidr.String()}); !claimed[ref] {
			r.BlocksWithoutAffinity = append(r.BlocksWithoutAffinity, ref)
		}
	}
	return nil
}

func sortReport(r *CheckReport) {
	sort.Slice(r.LeakedIPs, func(i, j int) bool { return r.LeakedIPs[i].IP.Less(r.LeakedIPs[j].IP) })
	sort.Slice(r.HandleMismatches, func(i, j int) bool {
		a, b := r.HandleMismatches[i], r.HandleMismatches[j]
		return a.Handle < b.Handle || (a.Handle == b.Handle && a.Block < b.Block)
	})
	for _, l := range [][]BlockRef{r.BlocksWithoutAffinity, r.AffinitiesWithoutBlock, r.PendingAffinities} {
		sort.Slice(l, func(i, j int) bool { return l[i].Host+" "+l[i].Block < l[j].Host+" "+l[j].Block })
	}
	sort.Slice(r.CorruptBlocks, func(i, j int) bool { return r.CorruptBlocks[i].Block < r.CorruptBlocks[j].Block })
}
