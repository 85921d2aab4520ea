package ipam

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/calico-host/calico-host/pkg/datastore"
)

// AssignIPArgs asks for one specific address.
type AssignIPArgs struct {
	IP       netip.Addr
	HandleID string
	Attrs    map[string]string
	Hostname string
}

// AssignIP assigns one specific address. The address must be in an enabled pool; its block is
// claimed for the host when it does not exist yet. With strict affinity the block must be the
// host's. An address already in use is ErrAlreadyAssigned.
func (c *Client) AssignIP(ctx context.Context, a AssignIPArgs) error {
	if !a.IP.IsValid() || a.Hostname == "" {
		return errors.New("assign IP: an address and a hostname are required")
	}
	ip := a.IP.Unmap()
	pools, err := c.enabledPools(ctx, familyOf(ip))
	if err != nil {
		return err
	}
	p := poolOf(pools, ip)
	if p == nil {
		return fmt.Errorf("assign %s: %w", ip, ErrNotInPool)
	}
	cfg, err := c.GetIPAMConfig(ctx)
	if err != nil {
		return err
	}
	cidr := p.blockFor(ip)
	held := newHandleRef(a.HandleID)
	return c.retry(ctx, "assigning "+ip.String(), func() error {
		b, err := c.getBlock(ctx, cidr)
		if datastore.IsNotFound(err) {
			b, err = c.claim(ctx, a.Hostname, cidr)
			if errors.Is(err, errClaimConflict) {
				return errConflict // created by another host meanwhile: read it again
			}
		}
		if err != nil {
			return err
		}
		if cfg.StrictAffinity && affinityHost(b.b) != a.Hostname {
			return fmt.Errorf("assign %s: block %s is not affine to %s and strict affinity is on", ip, cidr, a.Hostname)
		}
		ord, _ := addrOrdinal(cidr, ip)
		if err := assignOrdinal(b.b, ord, a.HandleID, a.Attrs); err != nil {
			return fmt.Errorf("assign %s: %w", ip, err)
		}
		return c.commitBlockAndHandle(ctx, b, held, 1)
	})
}
