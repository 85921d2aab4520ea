package ipam

import (
	"encoding/binary"
	"fmt"
	"maps"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/calico-host/calico-host/pkg/api"
)

// block is a decoded allocation block with the etcd mod revision it was read at (0 = not stored).
type block struct {
	cidr netip.Prefix
	b    *api.AllocationBlock
	rev  int64
}

// hostAffinity is the block affinity string Project Calico writes for a host ("host:<name>").
func hostAffinity(host string) string { return "host:" + host }

// affinityHost returns the host named by a block's affinity ("" when unaffine or not a host).
func affinityHost(b *api.AllocationBlock) string {
	if b.Affinity == nil {
		return ""
	}
	h, ok := strings.CutPrefix(*b.Affinity, "host:")
	if !ok {
		return ""
	}
	return h
}

// newBlock returns an empty block affine to host, laid out as Project Calico's newBlock does:
// every ordinal free in order, sequence number starting at the current UnixNano.
func newBlock(cidr netip.Prefix, host string, now time.Time) *api.AllocationBlock {
	n := blockSize(cidr)
	aff := hostAffinity(host)
	b := &api.AllocationBlock{
		CIDR:                        cidr.String(),
		Affinity:                    &aff,
		AffinityClaimTime:           now.UTC().Format(time.RFC3339),
		Allocations:                 make([]*int, n),
		Unallocated:                 make([]int, n),
		Attributes:                  []api.AllocationAttribute{},
		SequenceNumber:              uint64(now.UnixNano()),
		SequenceNumberForAllocation: map[string]uint64{},
	}
	for i := range b.Unallocated {
		b.Unallocated[i] = i
	}
	return b
}

// blockSize is the number of addresses in a block (blocks are at most /64 wide in practice; the
// count is capped so a misconfigured pool cannot make us allocate gigantic slices).
func blockSize(cidr netip.Prefix) int {
	host := cidr.Addr().BitLen() - cidr.Bits()
	if host > 20 {
		host = 20
	}
	return 1 << host
}

// validBlock checks that a block read from etcd is internally usable.
func validBlock(cidr netip.Prefix, b *api.AllocationBlock) error {
	if n := blockSize(cidr); len(b.Allocations) != n {
		return fmt.Errorf("block %s has %d allocations, want %d", cidr, len(b.Allocations), n)
	}
	for i, a := range b.Allocations {
		if a != nil && (*a < 0 || *a >= len(b.Attributes)) {
			return fmt.Errorf("block %s: allocation %d points at missing attribute %d", cidr, i, *a)
		}
	}
	return nil
}

// ordinalAddr is the address at an ordinal of a block.
func ordinalAddr(cidr netip.Prefix, ord int) netip.Addr {
	return addOffset(cidr.Addr(), uint64(ord))
}

// addrOrdinal is the ordinal of an address inside a block.
func addrOrdinal(cidr netip.Prefix, a netip.Addr) (int, bool) {
	if !cidr.Contains(a) {
		return 0, false
	}
	return int(low64(a) - low64(cidr.Addr())), true
}

// addOffset adds an offset to an address, carrying into the high 64 bits.
func addOffset(a netip.Addr, off uint64) netip.Addr {
	b := a.As16()
	hi, lo := binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
	sum := lo + off
	if sum < lo {
		hi++
	}
	binary.BigEndian.PutUint64(b[:8], hi)
	binary.BigEndian.PutUint64(b[8:], sum)
	r := netip.AddrFrom16(b)
	if a.Is4() {
		return r.Unmap()
	}
	return r
}

func low64(a netip.Addr) uint64 {
	b := a.As16()
	return binary.BigEndian.Uint64(b[8:])
}

// freeCount is the number of addresses that can still be assigned.
func freeCount(b *api.AllocationBlock) int {
	n := 0
	for _, o := range b.Unallocated {
		if o >= 0 && o < len(b.Allocations) && b.Allocations[o] == nil {
			n++
		}
	}
	return n
}

// isEmpty reports whether no address of the block is allocated.
func isEmpty(b *api.AllocationBlock) bool {
	for _, a := range b.Allocations {
		if a != nil {
			return false
		}
	}
	return true
}

// attrHandle is the handle of an attribute ("" when it has none).
func attrHandle(a api.AllocationAttribute) string {
	if a.HandleID == nil {
		return ""
	}
	return *a.HandleID
}

// findOrAddAttribute returns the index of the attribute with this handle and attributes, adding it
// if missing (Project Calico shares one attribute between a handle's addresses in a block).
func findOrAddAttribute(b *api.AllocationBlock, handle string, attrs map[string]string) int {
	for i, a := range b.Attributes {
		if attrHandle(a) == handle && maps.Equal(a.ActiveOwnerAttrs, attrs) &&
			a.AlternateOwnerAttrs == nil && a.ReleasedAt == "" {
			return i
		}
	}
	a := api.AllocationAttribute{ActiveOwnerAttrs: maps.Clone(attrs)}
	if handle != "" {
		h := handle
		a.HandleID = &h
	}
	b.Attributes = append(b.Attributes, a)
	return len(b.Attributes) - 1
}

// allocate points ordinal at attribute idx and records its sequence number.
func allocate(b *api.AllocationBlock, ord, idx int) {
	i := idx
	b.Allocations[ord] = &i
	if b.SequenceNumberForAllocation == nil {
		b.SequenceNumberForAllocation = map[string]uint64{}
	}
	b.SequenceNumberForAllocation[strconv.Itoa(ord)] = b.SequenceNumber
}

// assignN takes up to n ordinals from the head of the unallocated list for handle. It returns the
// ordinals taken; the block's sequence number is bumped when anything changed.
func assignN(b *api.AllocationBlock, n int, handle string, attrs map[string]string) []int {
	var ords []int
	for len(ords) < n && len(b.Unallocated) > 0 {
		o := b.Unallocated[0]
		b.Unallocated = b.Unallocated[1:]
		if o < 0 || o >= len(b.Allocations) || b.Allocations[o] != nil {
			continue // a stale entry: drop it
		}
		ords = append(ords, o)
	}
	if len(ords) == 0 {
		return nil
	}
	idx := findOrAddAttribute(b, handle, attrs)
	for _, o := range ords {
		allocate(b, o, idx)
	}
	b.SequenceNumber++
	return ords
}

// assignOrdinal assigns one specific ordinal.
func assignOrdinal(b *api.AllocationBlock, ord int, handle string, attrs map[string]string) error {
	if b.Allocations[ord] != nil {
		return ErrAlreadyAssigned
	}
	kept := b.Unallocated[:0]
	for _, o := range b.Unallocated {
		if o != ord {
			kept = append(kept, o)
		}
	}
	b.Unallocated = kept
	allocate(b, ord, findOrAddAttribute(b, handle, attrs))
	b.SequenceNumber++
	return nil
}

// ordinalsOfHandle lists the allocated ordinals whose attribute carries handle.
func ordinalsOfHandle(b *api.AllocationBlock, handle string) []int {
	var out []int
	for o, a := range b.Allocations {
		if a != nil && *a < len(b.Attributes) && attrHandle(b.Attributes[*a]) == handle {
			out = append(out, o)
		}
	}
	return out
}

// release frees the given ordinals (those not allocated are ignored) and returns how many
// addresses each handle lost. Freed ordinals go to the tail of the unallocated list and
// attributes nothing refers to any more are removed, as Project Calico does with a zero cooldown.
func release(b *api.AllocationBlock, ords []int) map[string]int {
	byHandle := map[string]int{}
	changed := false
	for _, o := range ords {
		if o < 0 || o >= len(b.Allocations) || b.Allocations[o] == nil {
			continue
		}
		byHandle[attrHandle(b.Attributes[*b.Allocations[o]])]++
		b.Allocations[o] = nil
		b.Unallocated = append(b.Unallocated, o)
		delete(b.SequenceNumberForAllocation, strconv.Itoa(o))
		changed = true
	}
	if changed {
		compactAttributes(b)
		b.SequenceNumber++
	}
	return byHandle
}

// compactAttributes removes attributes no allocation refers to and renumbers the allocations.
func compactAttributes(b *api.AllocationBlock) {
	used := make([]bool, len(b.Attributes))
	for _, a := range b.Allocations {
		if a != nil {
			used[*a] = true
		}
	}
	newIdx := make([]int, len(b.Attributes))
	kept := make([]api.AllocationAttribute, 0, len(b.Attributes))
	for i, a := range b.Attributes {
		if used[i] {
			newIdx[i] = len(kept)
			kept = append(kept, a)
		}
	}
	b.Attributes = kept
	for o, a := range b.Allocations {
		if a != nil {
			n := newIdx[*a]
			b.Allocations[o] = &n
		}
	}
}
