package startup

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/selector"
)

// Default pool names.
const (
	DefaultIPv4PoolName = "default-ipv4-ippool"
	DefaultIPv6PoolName = "default-ipv6-ippool"
)

// preferredIPv4Pool is Project Calico's default IPv4 pool; if a host address lies inside it, the
// first of 172.16.0.0/16 ... 172.31.0.0/16 without a host address is used instead.
var preferredIPv4Pool = netip.MustParsePrefix("192.168.0.0/16")

func poolName(f Family) string {
	if f == V4 {
		return DefaultIPv4PoolName
	}
	return DefaultIPv6PoolName
}

func (p *PoolConfig) parseCIDR(f Family, v string) error {
	if strings.EqualFold(v, "none") {
		p.Skip = true
		return nil
	}
	if v == "" {
		return nil
	}
	c, err := netip.ParsePrefix(v)
	if err != nil {
		return fmt.Errorf("not a CIDR")
	}
	if !f.Contains(c.Addr()) {
		return fmt.Errorf("not an %s CIDR", f)
	}
	if c != c.Masked() {
		return fmt.Errorf("host bits are set (did you mean %s?)", c.Masked())
	}
	p.CIDR = c
	return nil
}

// validate checks the pool as the datastore would (block size against the pool size, IPIP and
// VXLAN together), naming the setting at fault.
func (p *PoolConfig) validate(f Family) error {
	if p.Skip {
		return nil
	}
	cidr := p.CIDR
	if !cidr.IsValid() {
		cidr = preferredIPv4Pool
		if f == V6 {
			cidr = netip.MustParsePrefix("fd00::/48")
		}
	}
	pool := p.pool(f, cidr)
	err := datastore.Validate(pool)
	var ve *api.ValidationError
	if err == nil || !errors.As(err, &ve) || len(ve.Errors) == 0 {
		return err
	}
	fe := ve.Errors[0]
	key, env, value := "cidr", "CIDR", cidr.String()
	switch fe.Field {
	case "spec.blockSize":
		key, env, value = "block_size", "BLOCK_SIZE", fmt.Sprint(p.BlockSize)
	case "spec.ipipMode":
		key, env, value = "ipip_mode", "IPIP", p.IPIPMode
	case "spec.vxlanMode":
		key, env, value = "vxlan_mode", "VXLAN", p.VXLANMode
	case "spec.nodeSelector":
		key, env, value = "node_selector", "NODE_SELECTOR", p.NodeSelector
	}
	return &ConfigError{Key: poolKey(f, key), Env: poolEnv(f, env), Value: value, Err: errors.New(fe.Message)}
}

// pool builds the default pool object with calicoctl's defaults filled in.
func (p *PoolConfig) pool(f Family, cidr netip.Prefix) *api.IPPool {
	pool := &api.IPPool{
		ObjectMeta: api.ObjectMeta{Name: poolName(f)},
		Spec: api.IPPoolSpec{
			CIDR:             cidr.String(),
			VXLANMode:        p.VXLANMode,
			IPIPMode:         p.IPIPMode,
			NATOutgoing:      p.NATOutgoing,
			DisableBGPExport: p.DisableBGPExport,
			BlockSize:        p.BlockSize,
			NodeSelector:     p.NodeSelector,
		},
	}
	api.SetDefaults(pool)
	return pool
}

func checkSelector(s string) error {
	if _, err := selector.Parse(s); err != nil {
		return fmt.Errorf("invalid selector: %w", err)
	}
	return nil
}

// choosePoolCIDR picks the CIDR of a default pool that was not configured.
func choosePoolCIDR(f Family, hostAddrs []netip.Prefix) (netip.Prefix, error) {
	if f == V6 {
		return randomULA()
	}
	if !containsAny(preferredIPv4Pool, hostAddrs) {
		return preferredIPv4Pool, nil
	}
	for i := 16; i <= 31; i++ {
		c := netip.PrefixFrom(netip.AddrFrom4([4]byte{172, byte(i), 0, 0}), 16)
		if !containsAny(c, hostAddrs) {
			return c, nil
		}
	}
	return preferredIPv4Pool, nil
}

func containsAny(c netip.Prefix, addrs []netip.Prefix) bool {
	for _, a := range addrs {
		if c.Contains(a.Addr()) {
			return true
		}
	}
	return false
}

// randomULA returns a random RFC 4193 prefix fdXX:XXXX:XXXX::/48.
func randomULA() (netip.Prefix, error) {
	var b [16]byte
	b[0] = 0xfd
	if _, err := rand.Read(b[1:6]); err != nil {
		return netip.Prefix{}, fmt.Errorf("generating an IPv6 ULA prefix: %w", err)
	}
	return netip.PrefixFrom(netip.AddrFrom16(b), 48), nil
}

// ensureDefaultPools creates the default pool of each family that has no pool yet. It never
// touches existing pools, and creates none while a stored pool cannot be read (undecodable, or
// its CIDR does not parse): that pool's family is unknown, and a default pool beside it would
// hand out addresses nobody chose.
func (s *Startup) ensureDefaultPools(ctx context.Context, hostAddrs []netip.Prefix) error {
	if s.cfg.NoDefaultPools {
		s.log.Info().Msg("Skipping default IP pools (no_default_pools)")
		return nil
	}
	present, unreadable, err := s.storedPoolFamilies(ctx)
	if err != nil {
		return err
	}
	if len(unreadable) > 0 {
		s.log.Warn().Strs("keys", unreadable).Msg("Stored IP pools cannot be read; creating no default pool until they are fixed or deleted")
		return nil
	}
	for _, f := range Families {
		if err := s.ensureDefaultPool(ctx, f, present[f], hostAddrs); err != nil {
			return err
		}
	}
	return nil
}

// storedPoolFamilies lists the stored pools: the families they cover, and the keys of those
// whose family cannot be known.
func (s *Startup) storedPoolFamilies(ctx context.Context) (map[Family]bool, []string, error) {
	k, _ := api.KindOf(&api.IPPool{})
	res, err := s.ds.List(ctx, k, "")
	if err != nil {
		return nil, nil, fmt.Errorf("listing IP pools: %w", err)
	}
	present := map[Family]bool{}
	var unreadable []string
	for _, bad := range res.Invalid {
		unreadable = append(unreadable, bad.Key)
	}
	for _, r := range res.Items {
		p := r.(*api.IPPool)
		if c, err := netip.ParsePrefix(p.Spec.CIDR); err == nil {
			present[familyOf(c.Addr())] = true
		} else {
			unreadable = append(unreadable, datastore.ResourceKey(k, "", p.Name))
		}
	}
	return present, unreadable, nil
}

func (s *Startup) ensureDefaultPool(ctx context.Context, f Family, present bool, hostAddrs []netip.Prefix) error {
	pc := s.cfg.PoolOf(f)
	switch {
	case pc.Skip:
		s.log.Info().Stringer("family", f).Msg("Skipping the default pool (cidr = none)")
		return nil
	case present:
		s.log.Debug().Stringer("family", f).Msg("A pool of this family exists; not creating the default pool")
		return nil
	case f == V6 && (!s.cfg.IPv6Support || !s.kernel.IPv6Supported()):
		s.log.Info().Msg("IPv6 is not supported or disabled; not creating the default IPv6 pool")
		return nil
	}
	cidr := pc.CIDR
	if !cidr.IsValid() {
		var err error
		if cidr, err = choosePoolCIDR(f, hostAddrs); err != nil {
			return err
		}
	}
	pool := pc.pool(f, cidr)
	if err := datastore.Validate(pool); err != nil {
		return fmt.Errorf("default %s pool: %w", f, err)
	}
	_, err := s.ds.Create(ctx, pool)
	switch {
	case datastore.IsAlreadyExists(err):
		s.log.Info().Str("pool", pool.Name).Msg("Default pool was created by another node")
		return nil
	case err != nil:
		return fmt.Errorf("creating IP pool %s (%s): %w", pool.Name, cidr, err)
	}
	s.log.Info().Str("pool", pool.Name).Str("cidr", pool.Spec.CIDR).Str("vxlanMode", pool.Spec.VXLANMode).
		Str("ipipMode", pool.Spec.IPIPMode).Bool("natOutgoing", pool.Spec.NATOutgoing).Msg("Created default IP pool")
	return nil
}
