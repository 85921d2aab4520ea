package ipam

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net/netip"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
)

// AutoAssignArgs asks for addresses from the pools that serve a host.
type AutoAssignArgs struct {
	Num4, Num6 int
	// HandleID names the allocation ("<network>.<containerID>" for CNI); empty = no handle.
	HandleID string
	// Attrs are stored as the allocation's "secondary" attributes (node, timestamp, namespace, pod...).
	Attrs    map[string]string
	Hostname string
	// IPv4Pools, IPv6Pools: pool names or CIDRs; empty = every enabled pool selecting this node.
	IPv4Pools, IPv6Pools []string
	// IntendedUse is api.UseWorkload (default) or api.UseTunnel.
	IntendedUse string
	// MaxBlocksPerHost: 0 = from the IPAM config (default 20); the stricter of the two applies.
	MaxBlocksPerHost int
}

// request is one family's share of an AutoAssign call.
type request struct {
	fam       int
	num       int
	pools     []string
	host      string
	handle    string
	attrs     map[string]string
	use       string
	cfg       api.IPAMConfig
	maxBlocks int
	view      *hostView
	held      *handleRef // nil without a handle
}

// AutoAssign assigns Num4 IPv4 and Num6 IPv6 addresses to the host: from the host's own blocks
// first, then from newly claimed blocks up to the per-host limit, then (without strict affinity)
// from other hosts' blocks. It returns /32 and /128 prefixes. On error nothing stays assigned:
// whatever the call took is released again.
func (c *Client) AutoAssign(ctx context.Context, a AutoAssignArgs) (v4, v6 []netip.Prefix, err error) {
	v4, v6, err = c.AutoAssignInBlocks(ctx, a)
	return hostPrefixes(v4), hostPrefixes(v6), err
}

func hostPrefixes(ps []netip.Prefix) []netip.Prefix {
	out := make([]netip.Prefix, 0, len(ps))
	for _, p := range ps {
		out = append(out, netip.PrefixFrom(p.Addr(), p.Addr().BitLen()))
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// AutoAssignInBlocks is AutoAssign returning each address with the mask of its block (what
// Project Calico's IPAM returns and the CNI plugin reports as a route).
func (c *Client) AutoAssignInBlocks(ctx context.Context, a AutoAssignArgs) (v4, v6 []netip.Prefix, err error) {
	if err := a.check(); err != nil {
		return nil, nil, err
	}
	view, err := c.readHostView(ctx, a.Hostname, a.HandleID)
	if err != nil {
		return nil, nil, err
	}
	return c.assign(ctx, a, view)
}

// AssignToHandle returns the addresses the handle a.HandleID already holds, each with its
// block's mask (a repeated request gets what the first one assigned), or, when it holds none,
// assigns as AutoAssignInBlocks; assigned tells which. The handle is read in the request that
// reads the host's IPAM state, so a first assignment costs no request more.
func (c *Client) AssignToHandle(ctx context.Context, a AutoAssignArgs) (addrs []netip.Prefix, assigned bool, err error) {
	if a.HandleID == "" {
		return nil, false, errors.New("assign to handle: a handle is required")
	}
	if err := a.check(); err != nil {
		return nil, false, err
	}
	view, err := c.readHostView(ctx, a.Hostname, a.HandleID)
	if err != nil {
		return nil, false, err
	}
	if view.held.h.stored() {
		held, err := c.prefixesOf(ctx, view.held.h)
		if err != nil || len(held) > 0 {
			return held, false, err
		}
	}
	v4, v6, err := c.assign(ctx, a, view)
	return append(v4, v6...), err == nil, err
}

func (a AutoAssignArgs) check() error {
	if a.Hostname == "" {
		return errors.New("auto-assign: hostname is required")
	}
	if a.Num4 < 0 || a.Num6 < 0 {
		return fmt.Errorf("auto-assign: negative address count (%d IPv4, %d IPv6)", a.Num4, a.Num6)
	}
	return nil
}

// assign assigns each family's addresses from the state in view; on error it releases what it
// took.
func (c *Client) assign(ctx context.Context, a AutoAssignArgs, view *hostView) (v4, v6 []netip.Prefix, err error) {
	use := a.IntendedUse
	if use == "" {
		use = api.UseWorkload
	}
	if v4, v6, ok, err := c.assignFromOwnBlocks(ctx, a, view, use); ok || err != nil {
		return v4, v6, err
	}
	var taken []netip.Prefix
	out := map[int][]netip.Prefix{}
	for _, r := range []request{
		{fam: 4, num: a.Num4, pools: a.IPv4Pools},
		{fam: 6, num: a.Num6, pools: a.IPv6Pools},
	} {
		if r.num == 0 {
			continue
		}
		r.host, r.handle, r.attrs, r.use, r.cfg, r.view, r.held = a.Hostname, a.HandleID, a.Attrs, use, view.cfg, view, view.held
		r.maxBlocks = blockLimit(a.MaxBlocksPerHost, view.cfg.MaxBlocksPerHost)
		addrs, err := c.autoAssign(ctx, r)
		taken = append(taken, addrs...)
		if err != nil {
			c.undo(taken)
			return nil, nil, err
		}
		out[r.fam] = addrs
	}
	return out[4], out[6], nil
}

// blockLimit combines the per-request and configured limits: the stricter non-zero one wins.
func blockLimit(request, config int) int {
	switch {
	case request > 0 && config > 0:
		return min(request, config)
	case request > 0:
		return request
	case config > 0:
		return config
	}
	return DefaultMaxBlocksPerHost
}

// undo releases addresses a failed call took, with a context of its own so that a cancelled
// request still cleans up.
func (c *Client) undo(taken []netip.Prefix) {
	if len(taken) == 0 {
		return
	}
	addrs := make([]netip.Addr, 0, len(taken))
	for _, p := range taken {
		addrs = append(addrs, p.Addr())
	}
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	if _, err := c.ReleaseIPs(ctx, addrs...); err != nil {
		c.log.Error().Err(err).Interface("ips", addrs).Msg("releasing addresses of a failed assignment")
	}
}

// autoAssign assigns one family's addresses (with their block masks). It returns what it assigned
// even on error.
func (c *Client) autoAssign(ctx context.Context, r request) ([]netip.Prefix, error) {
	pools, err := selectPools(r.view, r.fam, r.pools, r.host, r.use)
	if err != nil {
		return nil, err
	}
	var got []netip.Prefix
	owned := 0
	for _, af := range r.view.affs {
		if familyOf(af.cidr.Addr()) != r.fam || af.state != api.AffinityConfirmed || poolOf(pools, af.cidr.Addr()) == nil {
			continue // pending affinities count as absent, as in Project Calico
		}
		owned++
		if len(got) < r.num {
			ips, err := c.assignAffine(ctx, r, af.cidr, r.num-len(got))
			if err != nil {
				return got, err
			}
			got = append(got, ips...)
		}
	}
	for len(got) < r.num && r.cfg.AutoAllocateBlocks {
		if owned >= r.maxBlocks {
			return got, fmt.Errorf("host %s owns %d IPv%d blocks (limit %d): %w", r.host, owned, r.fam, r.maxBlocks, ErrBlockLimit)
		}
		b, created, err := c.claimNew(ctx, r.host, pools, r.fam)
		if errors.Is(err, errNoFreeBlock) {
			break
		}
		if err != nil {
			return got, err
		}
		if created {
			owned++
		}
		ips, err := c.assignFrom(ctx, r, b, r.num-len(got), true)
		if err != nil {
			return got, err
		}
		got = append(got, ips...)
	}
	if len(got) < r.num && !r.cfg.StrictAffinity {
		ips, err := c.borrow(ctx, r, pools, r.num-len(got))
		got = append(got, ips...)
		if err != nil {
			return got, err
		}
	}
	if len(got) < r.num {
		return got, fmt.Errorf("assigned %d of %d IPv%d addresses for host %s: %w", len(got), r.num, r.fam, r.host, ErrExhausted)
	}
	return got, nil
}

// assignAffine assigns from one of the host's confirmed blocks, recreating the block when the
// affinity outlived it.
func (c *Client) assignAffine(ctx context.Context, r request, cidr netip.Prefix, want int) ([]netip.Prefix, error) {
	b, err := c.getBlock(ctx, cidr)
	if datastore.IsNotFound(err) {
		err = c.retry(ctx, "recreating block "+cidr.String(), func() error {
			b, err = c.claim(ctx, r.host, cidr)
			return err
		})
		if errors.Is(err, errClaimConflict) {
			return nil, nil
		}
	}
	if errors.Is(err, errCorruptBlock) {
		c.log.Warn().Err(err).Str("block", cidr.String()).Msg("skipping an affine block that cannot be decoded")
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return c.assignFrom(ctx, r, b, want, true)
}

// assignFrom takes up to want addresses from block b (re-reading it after a conflict) and records
// them in the handle in the same transaction. With ownOnly it only uses a block affine to the host.
func (c *Client) assignFrom(ctx context.Context, r request, b *block, want int, ownOnly bool) ([]netip.Prefix, error) {
	var got []netip.Prefix
	cidr := b.cidr
	err := c.retry(ctx, "assigning from block "+cidr.String(), func() error {
		if b == nil {
			fresh, err := c.getBlock(ctx, cidr)
			if datastore.IsNotFound(err) {
				return nil
			}
			if err != nil {
				return err
			}
			b = fresh
		}
		cur := b
		b = nil // re-read on any retry
		if (ownOnly || r.cfg.StrictAffinity) && affinityHost(cur.b) != r.host {
			return nil
		}
		ords := assignN(cur.b, want, r.handle, r.attrs)
		if len(ords) == 0 {
			return nil
		}
		if err := c.commitBlockAndHandle(ctx, cur, r.held, len(ords)); err != nil {
			return err
		}
		for _, o := range ords {
			got = append(got, netip.PrefixFrom(ordinalAddr(cidr, o), cidr.Bits()))
		}
		return nil
	})
	return got, err
}

// commitBlockAndHandle writes an updated block together with the handle's new count for it in
// one transaction (the handle is created on first use; held is nil without a handle).
func (c *Client) commitBlockAndHandle(ctx context.Context, b *block, held *handleRef, delta int) error {
	bw, err := blockWrite(b, false)
	if err != nil {
		return err
	}
	ws := []write{bw}
	if held != nil {
		h, err := held.load(ctx, c)
		if err != nil {
			return err
		}
		h.adjust(b.cidr.String(), delta)
		ws = append(ws, h.write())
	}
	rev, err := c.commit(ctx, ws...)
	held.committed(rev, err)
	return err
}

// borrow assigns from any existing block of the pools with free space, whoever owns it, visiting
// the blocks in an order seeded by the host name.
func (c *Client) borrow(ctx context.Context, r request, pools []*pool, want int) ([]netip.Prefix, error) {
	blocks, err := c.listBlocks(ctx, r.fam)
	if err != nil {
		return nil, err
	}
	h := fnv.New32()
	h.Write([]byte(r.host))
	rng := rand.New(rand.NewPCG(uint64(h.Sum32()), 1))
	rng.Shuffle(len(blocks), func(i, j int) { blocks[i], blocks[j] = blocks[j], blocks[i] })
	var got []netip.Prefix
	for _, b := range blocks {
		if len(got) >= want {
			break
		}
		if poolOf(pools, b.cidr.Addr()) == nil || freeCount(b.b) == 0 {
			continue
		}
		ips, err := c.assignFrom(ctx, r, b, want-len(got), false)
		got = append(got, ips...)
		if err != nil {
			return got, err
		}
		if len(ips) > 0 {
			c.log.Info().Str("host", r.host).Str("block", b.cidr.String()).Int("count", len(ips)).
				Msg("borrowed addresses from a block of another host")
		}
	}
	return got, nil
}
