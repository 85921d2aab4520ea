package ipam

import (
	"context"
	"fmt"
	"net/netip"
	"sort"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/calico-host/calico-host/pkg/datastore"
)

// HostRemoval is what RemoveHost did. Every list is sorted.
type HostRemoval struct {
	// BlocksDeleted are the host's empty blocks, deleted with its affinities.
	BlocksDeleted []netip.Prefix
	// BlocksUnaffined are the host's blocks that still hold addresses (the host's own or ones
	// other hosts borrowed): they are kept, without affinity, until those addresses are released.
	BlocksUnaffined []netip.Prefix
	// AffinitiesReleased counts the affinity keys released (blocks of the host, and claims on
	// blocks that were missing or belonged to another host).
	AffinitiesReleased int
	// OtherKeysDeleted counts what else was under /calico/ipam/v2/host/<host>/ (undecodable
	// affinities, anything written there by other tools).
	OtherKeysDeleted int
}

// RemoveIPAMHost removes a host from IPAM, as Project Calico's ipamClient.RemoveIPAMHost does:
// it releases the host's block affinities (empty blocks are deleted, blocks still in use lose
// their affinity) and deletes the host's tree /calico/ipam/v2/host/<host> with everything under
// it. Addresses are not released. What is already gone is not an error, so it can be repeated.
func (c *Client) RemoveIPAMHost(ctx context.Context, host string) error {
	_, err := c.RemoveHost(ctx, host)
	return err
}

// RemoveHost is RemoveIPAMHost reporting what it removed. It also takes the affinity off blocks
// that name the host without an affinity key (left by an interrupted release). The host tree is
// deleted only if nothing was written under it since the affinities were released; otherwise
// the whole removal runs again.
func (c *Client) RemoveHost(ctx context.Context, host string) (*HostRemoval, error) {
	if host == "" || strings.Contains(host, "/") {
		return nil, fmt.Errorf("removing IPAM host %q: not a valid host name", host)
	}
	r := &hostRemoval{blocks: map[netip.Prefix]affinityOutcome{}}
	err := c.retry(ctx, "removing IPAM host "+host, func() error {
		rev, err := c.hostTreeRevision(ctx, host)
		if err != nil {
			return err
		}
		outcomes, err := c.releaseHostAffinities(ctx, host, false)
		r.note(outcomes)
		if err != nil {
			return err
		}
		if err := c.unaffineOrphans(ctx, host, r); err != nil {
			return err
		}
		n, err := c.deleteHostTree(ctx, host, rev)
		r.otherKeys += n
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("removing IPAM host %s: %w", host, err)
	}
	c.log.Info().Str("host", host).Int("affinities", r.affinities).Msg("removed IPAM host")
	return r.report(), nil
}

// hostRemoval accumulates what the attempts of RemoveHost did.
type hostRemoval struct {
	blocks     map[netip.Prefix]affinityOutcome
	affinities int
	otherKeys  int
}

func (r *hostRemoval) note(outcomes map[netip.Prefix]affinityOutcome) {
	for cidr, o := range outcomes {
		r.affinities++
		if o == blockDeleted || o == blockUnaffined {
			r.blocks[cidr] = o
		}
	}
}

func (r *hostRemoval) report() *HostRemoval {
	out := &HostRemoval{AffinitiesReleased: r.affinities, OtherKeysDeleted: r.otherKeys}
	for cidr, o := range r.blocks {
		if o == blockDeleted {
			out.BlocksDeleted = append(out.BlocksDeleted, cidr)
		} else {
			out.BlocksUnaffined = append(out.BlocksUnaffined, cidr)
		}
	}
	for _, l := range [][]netip.Prefix{out.BlocksDeleted, out.BlocksUnaffined} {
		sort.Slice(l, func(i, j int) bool { return prefixLess(l[i], l[j]) })
	}
	return out
}

func prefixLess(a, b netip.Prefix) bool {
	if c := a.Addr().Compare(b.Addr()); c != 0 {
		return c < 0
	}
	return a.Bits() < b.Bits()
}

// unaffineOrphans takes the affinity off blocks that name the host but have no affinity key (a
// claim writes the key before the block, so such a block is left over from an interrupted
// release): empty ones are deleted, the others kept without affinity.
func (c *Client) unaffineOrphans(ctx context.Context, host string, r *hostRemoval) error {
	for _, fam := range []int{4, 6} {
		blocks, err := c.listBlocks(ctx, fam)
		if err != nil {
			return err
		}
		for _, b := range blocks {
			if affinityHost(b.b) != host {
				continue
			}
			aff, err := c.getAffinity(ctx, host, b.cidr)
			if err != nil {
				return err
			}
			if aff.rev != 0 {
				return errConflict // claimed again meanwhile: start over
			}
			bw, o, err := dropAffinity(b)
			if err != nil {
				return err
			}
			if _, err := c.commit(ctx, bw); err != nil {
				return err
			}
			r.blocks[b.cidr] = o
		}
	}
	return nil
}

// hostTreeRevision is the current etcd revision, read with a (count-only) look at the host's tree.
func (c *Client) hostTreeRevision(ctx context.Context, host string) (int64, error) {
	resp, err := c.ds.Etcd().Get(ctx, datastore.HostPrefix+host+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, fmt.Errorf("reading the IPAM tree of host %s: %w", host, err)
	}
	return resp.Header.Revision, nil
}

// deleteHostTree deletes /calico/ipam/v2/host/<host> and every key under it in one transaction,
// provided none of the remaining keys was written after revision rev (else errConflict: a claim
// of the host got in, and its affinities must be released first). It returns how many keys it
// deleted.
func (c *Client) deleteHostTree(ctx context.Context, host string, rev int64) (int, error) {
	root := datastore.HostPrefix + host
	resp, err := c.ds.Etcd().Txn(ctx).If(
		clientv3.Compare(clientv3.ModRevision(root+"/"), "<", rev+1).WithPrefix(),
		clientv3.Compare(clientv3.ModRevision(root), "<", rev+1),
	).Then(
		clientv3.OpDelete(root+"/", clientv3.WithPrefix()),
		clientv3.OpDelete(root),
	).Commit()
	if err != nil {
		return 0, fmt.Errorf("deleting the IPAM tree of host %s: %w", host, err)
	}
	if !resp.Succeeded {
		return 0, errConflict
	}
	n := 0
	for _, op := range resp.Responses {
		n += int(op.GetResponseDeleteRange().GetDeleted())
	}
	return n, nil
}
