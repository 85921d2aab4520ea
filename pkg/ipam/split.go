package ipam

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/netip"
	"strconv"
	"time"

	"github.com/google/uuid"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
)

// SplitRequest names the IP pool to split (by name, or else by its CIDR as stored) and the
// number of pools to split it into (a power of two, at least 2).
type SplitRequest struct {
	Name  string
	CIDR  string
	Parts int
}

// SplitResult is what a split did.
type SplitResult struct {
	Old     *api.IPPool   // the pool that was split (and deleted)
	Created []*api.IPPool // the new pools, in address order
}

// ErrNotLocked: Project Calico splits a pool only while the datastore is locked
// (ClusterInformation datastoreReady false), so that nothing allocates from the pool meanwhile.
var ErrNotLocked = errors.New("datastore is not locked. Run the `calicoctl datastore migrate lock` command in order split the IP pools")

// SplitPool replaces an IP pool by Parts pools of equal size covering it, as Project Calico's
// `calicoctl ipam split`: each new pool is named split-<name>-<i>, is a copy of the old one
// (labels, annotations and spec) with its part of the CIDR, enabled, and with fresh uid and
// creationTimestamp; the old pool is deleted. Blocks, affinities and handles are keyed by block
// CIDR and stay as they are: every existing block lies inside one of the new pools.
//
// Unlike Project Calico, which disables the old pool, then creates the new ones, then deletes the
// old one in separate writes (leaving a disabled pool behind when a later step fails), every
// check is made first and the whole change is one etcd transaction. It is guarded by the
// revisions of ClusterInformation (the lock), of the old pool and of every IPAM block of the
// family, so a concurrent change makes it start over. A block that would straddle two new pools
// (left from an older, larger block size) is refused: our IPAM finds a block's pool by CIDR.
func (c *Client) SplitPool(ctx context.Context, req SplitRequest) (*SplitResult, error) {
	if req.Name == "" && req.CIDR == "" {
		return nil, errors.New("no name or CIDR provided. Provide a name or CIDR to denote the IP pool to split")
	}
	var res *SplitResult
	err := c.retry(ctx, "splitting IP pool", func() error {
		plan, err := c.planSplit(ctx, req)
		if err != nil {
			return err
		}
		if err := c.commitSplit(ctx, plan); err != nil {
			return err
		}
		res = &SplitResult{Old: plan.old, Created: plan.children}
		return nil
	})
	return res, err
}

// splitPlan is a split worked out against one view of the datastore, with the revisions that
// view must still have when it is written.
type splitPlan struct {
	old       *api.IPPool
	oldRev    int64
	lockRev   int64
	children  []*api.IPPool
	values    [][]byte
	blocksPre string // the block prefix of the pool's family
	blocksRev int64  // the revision the blocks were listed at
}

func (c *Client) planSplit(ctx context.Context, req SplitRequest) (*splitPlan, error) {
	p := &splitPlan{}
	var err error
	if p.lockRev, err = c.checkLocked(ctx); err != nil {
		return nil, err
	}
	if p.old, p.oldRev, err = c.findSplitPool(ctx, req); err != nil {
		return nil, err
	}
	cidr, err := netip.ParsePrefix(p.old.Spec.CIDR)
	if err != nil {
		return nil, fmt.Errorf("error reading CIDR %s before attempting to split it", p.old.Spec.CIDR)
	}
	parts, err := SplitCIDR(cidr, req.Parts)
	if err != nil {
		return nil, fmt.Errorf("error splitting the CIDR %s into %d CIDRs: %w", p.old.Spec.CIDR, req.Parts, err)
	}
	if err := c.checkSplitBlocks(ctx, p, parts); err != nil {
		return nil, err
	}
	for i, part := range parts {
		child, value, err := c.splitChild(ctx, p.old, i, part)
		if err != nil {
			return nil, err
		}
		p.children, p.values = append(p.children, child), append(p.values, value)
	}
	return p, nil
}

// checkLocked returns the revision of ClusterInformation "default" if it says the datastore is
// locked (datastoreReady false).
func (c *Client) checkLocked(ctx context.Context) (int64, error) {
	ci, err := datastore.GetAs[*api.ClusterInformation](ctx, c.ds, "", "default")
	if err != nil {
		return 0, fmt.Errorf("error while checking if datastore was locked: error retrieving ClusterInformation: %w", err)
	}
	if ready := ci.Spec.DatastoreReady; ready == nil || *ready {
		// Project Calico dereferences the flag; an absent flag is treated as not locked here.
		return 0, ErrNotLocked
	}
	return datastore.Revision(ci), nil
}

// findSplitPool reads the pool by name or, without a name, finds the pool whose stored CIDR is
// exactly req.CIDR.
func (c *Client) findSplitPool(ctx context.Context, req SplitRequest) (*api.IPPool, int64, error) {
	if req.Name != "" {
		p, err := datastore.GetAs[*api.IPPool](ctx, c.ds, "", req.Name)
		if err != nil {
			return nil, 0, fmt.Errorf("unable to find IP pool with name %s: %w", req.Name, err)
		}
		return p, datastore.Revision(p), nil
	}
	pools, _, err := datastore.ListAs[*api.IPPool](ctx, c.ds, "")
	if err != nil {
		return nil, 0, fmt.Errorf("unable to list IP pools to find the pool specified by %s", req.CIDR)
	}
	for _, p := range pools {
		if p.Spec.CIDR == req.CIDR {
			return p, datastore.Revision(p), nil
		}
	}
	return nil, 0, fmt.Errorf("unable to find IP pool %s covering the specified CIDR %s", req.Name, req.CIDR)
}

// SplitCIDR divides a prefix into parts equal prefixes in address order; parts must be a power
// of two of at least 2 and the prefix must have room for them.
func SplitCIDR(p netip.Prefix, parts int) ([]netip.Prefix, error) {
	if parts < 2 || parts&(parts-1) != 0 {
		return nil, fmt.Errorf("number to split CIDR into is not a valid power of 2: %d", parts)
	}
	power := 0
	for 1<<power < parts {
		power++
	}
	p = p.Masked()
	width := p.Addr().BitLen()
	bits := p.Bits() + power
	if bits > width {
		return nil, fmt.Errorf("the CIDR %s is not large enough to be split into %d parts", p, parts)
	}
	step := new(big.Int).Lsh(big.NewInt(1), uint(width-bits))
	base := new(big.Int).SetBytes(p.Addr().AsSlice())
	out := make([]netip.Prefix, parts)
	for i := range out {
		n := new(big.Int).Add(base, new(big.Int).Mul(step, big.NewInt(int64(i))))
		buf := n.FillBytes(make([]byte, width/8))
		a, _ := netip.AddrFromSlice(buf)
		out[i] = netip.PrefixFrom(a, bits)
	}
	return out, nil
}

// checkSplitBlocks lists the IPAM blocks of the pool's family and refuses the split if a block
// inside the pool is not inside exactly one of the new pools. It records the listing's revision.
func (c *Client) checkSplitBlocks(ctx context.Context, p *splitPlan, parts []netip.Prefix) error {
	fam := familyOf(parts[0].Addr())
	p.blocksPre = datastore.BlockPrefix + familyName(fam) + "/block/"
	kvs, rev, err := c.ds.ListKV(ctx, p.blocksPre, 0)
	if err != nil {
		return fmt.Errorf("listing IPv%d blocks: %w", fam, err)
	}
	p.blocksRev = rev
	for _, kv := range kvs {
		s, ok := datastore.ParseBlockKey(kv.Key)
		if !ok {
			continue
		}
		b, err := netip.ParsePrefix(s)
		if err != nil {
			continue
		}
		for _, part := range parts {
			if part.Overlaps(b) && b.Bits() < part.Bits() {
				return fmt.Errorf("refusing to split IP pool %s: IPAM block %s is larger than the new pools (/%d) and would straddle them",
					p.old.Name, b, part.Bits())
			}
		}
	}
	return nil
}

// splitChild builds new pool i of the split and its stored value, checked as calicoctl checks a
// created pool (apart from overlapping the old pool, which goes away in the same write).
func (c *Client) splitChild(ctx context.Context, old *api.IPPool, i int, cidr netip.Prefix) (*api.IPPool, []byte, error) {
	child, err := copyPool(old)
	if err != nil {
		return nil, nil, err
	}
	name := old.Name
	if len(fmt.Sprintf("split-%s-%d", name, i)) > 253 {
		name = name[:245]
	}
	m := &child.ObjectMeta
	m.Name = "split-" + name + "-" + strconv.Itoa(i)
	m.UID, m.ResourceVersion, m.Generation, m.SelfLink, m.GenerateName = uuid.NewString(), "", 0, "", ""
	m.CreationTimestamp = c.now().UTC().Format(time.RFC3339)
	child.Spec.CIDR = cidr.String()
	child.Spec.Disabled = false
	api.SetDefaults(child)
	if err := datastore.ValidateWrite(child); err != nil {
		return nil, nil, fmt.Errorf("error using unsafe create to make split pool with cidr %s: %w", cidr, err)
	}
	key, err := datastore.KeyOf(child)
	if err != nil {
		return nil, nil, err
	}
	if _, err := c.ds.GetKV(ctx, key); err == nil {
		return nil, nil, fmt.Errorf("error using unsafe create to make split pool with cidr %s: resource already exists: IPPool(%s)", cidr, m.Name)
	} else if !datastore.IsNotFound(err) {
		return nil, nil, err
	}
	value, err := datastore.EncodeResource(child)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding IP pool %s: %w", m.Name, err)
	}
	return child, value, nil
}

// copyPool is a deep copy of a pool.
func copyPool(p *api.IPPool) (*api.IPPool, error) {
	data, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("copying IP pool %s: %w", p.Name, err)
	}
	out := &api.IPPool{}
	if err := json.Unmarshal(data, out); err != nil {
		return nil, fmt.Errorf("copying IP pool %s: %w", p.Name, err)
	}
	return out, nil
}

// commitSplit writes the plan in one transaction: the new pools are created, the old pool is
// deleted, provided the lock, the old pool and the family's blocks are as they were read.
func (c *Client) commitSplit(ctx context.Context, p *splitPlan) error {
	oldKey, err := datastore.KeyOf(p.old)
	if err != nil {
		return err
	}
	ciKey, err := datastore.KeyOf(&api.ClusterInformation{ObjectMeta: api.ObjectMeta{Name: "default"}})
	if err != nil {
		return err
	}
	cmps := []clientv3.Cmp{
		clientv3.Compare(clientv3.ModRevision(ciKey), "=", p.lockRev),
		clientv3.Compare(clientv3.ModRevision(oldKey), "=", p.oldRev),
		clientv3.Compare(clientv3.ModRevision(p.blocksPre), "<", p.blocksRev+1).WithPrefix(),
	}
	ops := []clientv3.Op{clientv3.OpDelete(oldKey)}
	for i, child := range p.children {
		key, err := datastore.KeyOf(child)
		if err != nil {
			return err
		}
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(key), "=", 0))
		ops = append(ops, clientv3.OpPut(key, string(p.values[i])))
	}
	resp, err := c.ds.Etcd().Txn(ctx).If(cmps...).Then(ops...).Commit()
	if err != nil {
		return fmt.Errorf("splitting IP pool %s: %w", p.old.Name, err)
	}
	if !resp.Succeeded {
		return errConflict
	}
	rv := strconv.FormatInt(resp.Header.Revision, 10)
	for _, child := range p.children {
		child.ResourceVersion = rv
	}
	c.log.Info().Str("pool", p.old.Name).Int("parts", len(p.children)).Msg("split IP pool")
	return nil
}
