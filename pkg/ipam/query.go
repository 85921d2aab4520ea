package ipam

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"

	"github.com/calico-host/calico-host/pkg/datastore"
)

// ErrNotAssigned: the address is not allocated.
var ErrNotAssigned = errors.New("address is not assigned")

// IPsByHandle lists the addresses a handle holds. A handle that does not exist holds none (an
// empty list and no error).
func (c *Client) IPsByHandle(ctx context.Context, handleID string) ([]netip.Addr, error) {
	ps, err := c.PrefixesByHandle(ctx, handleID)
	if err != nil || len(ps) == 0 {
		return nil, err
	}
	out := make([]netip.Addr, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.Addr())
	}
	return out, nil
}

// PrefixesByHandle lists the addresses a handle holds, each with the mask of its block.
func (c *Client) PrefixesByHandle(ctx context.Context, handleID string) ([]netip.Prefix, error) {
	h, err := c.getHandle(ctx, handleID)
	if err != nil {
		return nil, fmt.Errorf("reading handle %s: %w", handleID, err)
	}
	return c.prefixesOf(ctx, h)
}

// prefixesOf lists the addresses handle h holds, each with the mask of its block.
func (c *Client) prefixesOf(ctx context.Context, h *handle) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range sortedKeys(h.h.Block) {
		cidr, err := netip.ParsePrefix(s)
		if err != nil {
			continue
		}
		b, err := c.getBlock(ctx, cidr)
		if datastore.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, o := range ordinalsOfHandle(b.b, h.id) {
			out = append(out, netip.PrefixFrom(ordinalAddr(cidr, o), cidr.Bits()))
		}
	}
	return out, nil
}

// GetAssignmentAttributes returns the secondary attributes and the handle of an allocated
// address; an unallocated address is ErrNotAssigned.
func (c *Client) GetAssignmentAttributes(ctx context.Context, ip netip.Addr) (map[string]string, string, error) {
	ip = ip.Unmap()
	byBlock, none, err := c.groupByBlock(ctx, []netip.Addr{ip})
	if err != nil {
		return nil, "", err
	}
	if len(none) > 0 {
		return nil, "", fmt.Errorf("%s: %w", ip, ErrNotAssigned)
	}
	for cidr := range byBlock {
		b, err := c.getBlock(ctx, cidr)
		if datastore.IsNotFound(err) {
			break
		}
		if err != nil {
			return nil, "", err
		}
		o, _ := addrOrdinal(cidr, ip)
		if idx := b.b.Allocations[o]; idx != nil {
			a := b.b.Attributes[*idx]
			return maps.Clone(a.ActiveOwnerAttrs), attrHandle(a), nil
		}
	}
	return nil, "", fmt.Errorf("%s: %w", ip, ErrNotAssigned)
}
