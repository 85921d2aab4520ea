package calc

import (
	"fmt"
	"net/netip"

	"github.com/calico-host/calico-host/pkg/api"
)

// newPool converts an IPPool.
func newPool(name string, p *api.IPPool) (*IPPool, error) {
	cidr, err := netip.ParsePrefix(p.Spec.CIDR)
	if err != nil {
		return nil, fmt.Errorf("invalid cidr %q", p.Spec.CIDR)
	}
	return &IPPool{
		Name:             name,
		CIDR:             netip.PrefixFrom(cidr.Addr().Unmap(), cidr.Bits()).Masked(),
		NATOutgoing:      p.Spec.NATOutgoing,
		VXLANMode:        encapMode(p.Spec.VXLANMode),
		IPIPMode:         encapMode(p.Spec.IPIPMode),
		Type:             poolType(&p.Spec),
		Disabled:         p.Spec.Disabled,
		DisableBGPExport: p.Spec.DisableBGPExport,
	}, nil
}

// encapMode is a pool's encapsulation mode: Never when unset or not a mode (only a pool that
// failed validation has one).
func encapMode(m string) string {
	if isEncapMode(m) {
		return m
	}
	return api.EncapNever
}

// poolCalc keeps the IP pools and emits their changes.
type poolCalc struct {
	pools map[string]*IPPool
	dirty map[string]struct{}
	sent  map[string]*IPPool
}

func newPoolCalc() *poolCalc {
	return &poolCalc{pools: map[string]*IPPool{}, dirty: map[string]struct{}{}, sent: map[string]*IPPool{}}
}

// update records a pool (nil when deleted).
func (c *poolCalc) update(name string, p *IPPool) {
	if p == nil {
		delete(c.pools, name)
	} else {
		c.pools[name] = p
	}
	c.dirty[name] = struct{}{}
}

// containing returns the most specific pool that contains dst, or nil.
func (c *poolCalc) containing(dst netip.Prefix) *IPPool {
	var best *IPPool
	for _, p := range c.pools {
		if p.CIDR.Bits() <= dst.Bits() && p.CIDR.Contains(dst.Addr()) &&
			(best == nil || p.CIDR.Bits() > best.CIDR.Bits() || p.CIDR.Bits() == best.CIDR.Bits() && p.Name < best.Name) {
			best = p
		}
	}
	return best
}

func (c *poolCalc) flush() (updates, removes []Update) {
	for _, name := range sortedKeys(c.dirty) {
		p, prev := c.pools[name], c.sent[name]
		switch {
		case p == nil && prev != nil:
			removes = append(removes, IPPoolRemove{Name: name})
			delete(c.sent, name)
		case p != nil && (prev == nil || *prev != *p):
			updates = append(updates, IPPoolUpdate{Pool: p})
			c.sent[name] = p
		}
	}
	clear(c.dirty)
	return updates, removes
}
