package ipam

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/big"
	"math/rand/v2"
	"net/netip"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/selector"
)

// pool is an enabled IP pool reduced to what allocation needs.
type pool struct {
	name      string
	cidr      netip.Prefix
	blockBits int
	spec      api.IPPoolSpec
}

// blockFor is the CIDR of the block of this pool that holds a.
func (p *pool) blockFor(a netip.Addr) netip.Prefix {
	b, _ := a.Prefix(p.blockBits)
	return b
}

func toPool(ip *api.IPPool) (*pool, error) {
	cidr, err := netip.ParsePrefix(ip.Spec.CIDR)
	if err != nil {
		return nil, fmt.Errorf("pool %s has an invalid CIDR %q: %w", ip.Name, ip.Spec.CIDR, err)
	}
	cidr = cidr.Masked()
	bits := ip.Spec.BlockSize
	if bits == 0 {
		bits = 26
		if cidr.Addr().Is6() {
			bits = 122
		}
	}
	if bits < cidr.Bits() || bits > cidr.Addr().BitLen() || cidr.Addr().BitLen()-bits > 20 {
		return nil, fmt.Errorf("pool %s: block size /%d does not fit %s", ip.Name, bits, cidr)
	}
	return &pool{name: ip.Name, cidr: cidr, blockBits: bits, spec: ip.Spec}, nil
}

// enabledPools lists the enabled, valid pools of a family (0 = both), in name order.
func (c *Client) enabledPools(ctx context.Context, fam int) ([]*pool, error) {
	kvs, _, err := c.ds.ListKV(ctx, poolPrefix(), 0)
	if err != nil {
		return nil, fmt.Errorf("listing IP pools: %w", err)
	}
	return c.poolsOf(kvs, fam), nil
}

func poolPrefix() string {
	k, _ := api.LookupKind("IPPool")
	return datastore.KindPrefix(k)
}

// poolsOf decodes the enabled, valid pools of a family (0 = both) among kvs, in key (name)
// order; invalid ones are logged and skipped.
func (c *Client) poolsOf(kvs []datastore.KV, fam int) []*pool {
	var out []*pool
	for _, kv := range kvs {
		if _, ok := datastore.ParseResourceKey(kv.Key); !ok {
			continue
		}
		r, err := datastore.DecodeResource(kv.Key, kv.Value, kv.ModRevision)
		ip, isPool := r.(*api.IPPool)
		if err != nil || !isPool {
			c.log.Warn().Err(err).Str("key", kv.Key).Msg("skipping undecodable IP pool")
			continue
		}
		if ip.Spec.Disabled {
			continue
		}
		p, err := toPool(ip)
		if err != nil {
			c.log.Warn().Err(err).Msg("skipping IP pool")
			continue
		}
		if fam == 0 || familyOf(p.cidr.Addr()) == fam {
			out = append(out, p)
		}
	}
	return out
}

// hostView is the IPAM state an assignment reads first, in one request, for both families: the
// IPAM configuration, the enabled pools, the host's affinities and Node labels and, for a call
// with a handle, the handle.
type hostView struct {
	cfg    api.IPAMConfig
	pools  []*pool
	affs   []*affinity
	labels map[string]string
	held   *handleRef // nil without a handle
}

func (c *Client) readHostView(ctx context.Context, host, handleID string) (*hostView, error) {
	k, _ := api.LookupKind("Node")
	gets := []datastore.BatchGet{{Key: datastore.IPAMConfigKey}, {Key: poolPrefix(), Prefix: true},
		{Key: affinityPrefix(host), Prefix: true}, {Key: datastore.ResourceKey(k, "", host)}}
	if handleID != "" {
		gets = append(gets, datastore.BatchGet{Key: datastore.HandleKey(handleID)})
	}
	res, err := c.ds.GetBatch(ctx, gets...)
	if err != nil {
		return nil, fmt.Errorf("reading the IPAM state of host %s: %w", host, err)
	}
	v := &hostView{cfg: c.decodeConfig(first(res[0])), pools: c.poolsOf(res[1], 0), affs: c.affinitiesOf(res[2], host, 0)}
	if v.labels, err = c.nodeLabelsOf(host, first(res[3])); err != nil {
		return nil, err
	}
	if handleID != "" {
		h, err := decodeHandle(handleID, first(res[4]))
		if err != nil {
			return nil, err
		}
		v.held = &handleRef{id: handleID, h: h}
	}
	return v, nil
}

// first is the first of a batch result's keys (nil when none).
func first(kvs []datastore.KV) *datastore.KV {
	if len(kvs) == 0 {
		return nil
	}
	return &kvs[0]
}

// selectPools returns the pools to allocate from for a family. Requested pools (names or CIDRs)
// are used as given, ignoring node selectors as Project Calico does, but must exist, be enabled
// and be of the family; otherwise every enabled pool whose nodeSelector matches the host's Node
// labels. Either way pools that do not allow the intended use are dropped.
func selectPools(v *hostView, fam int, requested []string, host, use string) ([]*pool, error) {
	var all []*pool
	for _, p := range v.pools {
		if familyOf(p.cidr.Addr()) == fam {
			all = append(all, p)
		}
	}
	var chosen []*pool
	if len(requested) > 0 {
		for _, r := range requested {
			p := findPool(all, r)
			if p == nil {
				return nil, fmt.Errorf("the requested IPv%d pool %q does not exist or is not enabled: %w", fam, r, ErrNoPool)
			}
			chosen = append(chosen, p)
		}
	} else {
		for _, p := range all {
			if selectsNode(p, v.labels) {
				chosen = append(chosen, p)
			}
		}
	}
	var out []*pool
	for _, p := range chosen {
		if p.spec.AllowsUse(use) {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no enabled IPv%d pool selects node %s for use %s: %w", fam, host, use, ErrNoPool)
	}
	return out, nil
}

func findPool(pools []*pool, ref string) *pool {
	cidr, cidrErr := netip.ParsePrefix(ref)
	for _, p := range pools {
		if p.name == ref || (cidrErr == nil && p.cidr == cidr.Masked()) {
			return p
		}
	}
	return nil
}

func selectsNode(p *pool, labels map[string]string) bool {
	if p.spec.NodeSelector == "" {
		return true
	}
	sel, err := selector.Parse(p.spec.NodeSelector)
	if err != nil {
		return false
	}
	return sel.EvaluateMap(labels)
}

// nodeLabelsOf are the labels of the host's stored Node (kv nil: absent). A host without a Node
// object (a machine where only the CNI plugin runs) has no labels, so only pools selecting all()
// or !has(...) match.
func (c *Client) nodeLabelsOf(host string, kv *datastore.KV) (map[string]string, error) {
	if kv == nil {
		c.log.Debug().Str("node", host).Msg("no Node object; evaluating pool selectors against no labels")
		return map[string]string{}, nil
	}
	r, err := datastore.DecodeResource(kv.Key, kv.Value, kv.ModRevision)
	n, isNode := r.(*api.Node)
	if err != nil || !isNode {
		return nil, fmt.Errorf("reading node %s: %s: %w", host, kv.Key, err)
	}
	if n.Labels == nil {
		return map[string]string{}, nil
	}
	return n.Labels, nil
}

// poolOf returns the pool containing a (nil if none).
func poolOf(pools []*pool, a netip.Addr) *pool {
	for _, p := range pools {
		if p.cidr.Contains(a) {
			return p
		}
	}
	return nil
}

// blockWalk enumerates a pool's blocks starting at a pseudo-random block chosen from the host name
// (FNV-32 seed, as Project Calico does, so one host's retries look at the same blocks in the same
// order) and wrapping around.
type blockWalk struct {
	p     *pool
	count *big.Int // number of blocks in the pool
	next  *big.Int
	left  *big.Int
}

func newBlockWalk(p *pool, host string) *blockWalk {
	count := new(big.Int).Lsh(big.NewInt(1), uint(p.blockBits-p.cidr.Bits()))
	h := fnv.New32()
	h.Write([]byte(host))
	r := rand.New(rand.NewPCG(uint64(h.Sum32()), 0))
	start := randBig(r, count)
	return &blockWalk{p: p, count: count, next: start, left: new(big.Int).Set(count)}
}

// randBig draws a uniform-enough number in [0, n) from r.
func randBig(r *rand.Rand, n *big.Int) *big.Int {
	v := new(big.Int)
	for i := 0; i < (n.BitLen()+63)/64; i++ {
		v.Lsh(v, 64).Or(v, new(big.Int).SetUint64(r.Uint64()))
	}
	return v.Mod(v, n)
}

// Next returns the next block CIDR, or false once every block was visited.
func (w *blockWalk) Next() (netip.Prefix, bool) {
	if w.left.Sign() == 0 {
		return netip.Prefix{}, false
	}
	w.left.Sub(w.left, big.NewInt(1))
	idx := new(big.Int).Set(w.next)
	w.next.Add(w.next, big.NewInt(1))
	if w.next.Cmp(w.count) >= 0 {
		w.next.SetInt64(0)
	}
	width := w.p.cidr.Addr().BitLen()
	off := idx.Lsh(idx, uint(width-w.p.blockBits))
	base := new(big.Int).SetBytes(w.p.cidr.Addr().AsSlice())
	base.Add(base, off)
	buf := make([]byte, width/8)
	base.FillBytes(buf)
	a, _ := netip.AddrFromSlice(buf)
	return netip.PrefixFrom(a, w.p.blockBits), true
}
