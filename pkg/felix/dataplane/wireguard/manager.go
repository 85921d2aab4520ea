package wireguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"slices"
	"sync"

	"github.com/rs/zerolog"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
	"golang.zx2c4.com/wireguard/wgctrl"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"

	"github.com/calico-host/calico-host/pkg/nlhandle"
)

// Manager programs WireGuard devices and their routing rules in one network namespace. It
// configures whatever device carries the name (a kernel device, or a userspace one listening on
// /var/run/wireguard/<name>.sock); when there is none it creates a kernel device, which fails
// where the kernel has no wireguard driver.
type Manager struct {
	nl    *netlink.Handle
	wg    *wgctrl.Client
	log   zerolog.Logger
	kinds map[string]string // device name -> "kernel" or "userspace", as last seen
	// threaded: device name -> the threaded NAPI value last written ("n/a": not applicable, logged)
	threaded map[string]string
	nsPath   string

	// mu guards on only. The metrics and status readers copy the names under it and read the
	// devices outside it (wgctrl's client is safe for concurrent use), so a slow read never
	// holds up Apply and the dataplane loop, and an apply never holds up STATUS.
	mu sync.Mutex
	on []string // the devices of the enabled versions, as last applied
}

// Open opens netlink and a wgctrl client in the namespace at nsPath ("" = the current one).
func Open(nsPath string, log zerolog.Logger) (*Manager, error) {
	h, ns, err := nlhandle.OpenNS(nsPath)
	if err != nil {
		return nil, err
	}
	defer ns.Close()
	wg, err := wgctrlIn(ns)
	if err != nil {
		h.Close()
		return nil, err
	}
	return &Manager{nl: h, wg: wg, log: log.With().Str("subcomponent", "dataplane/wireguard").Logger(), kinds: map[string]string{},
		threaded: map[string]string{}, nsPath: nsPath}, nil
}

// wgctrlIn opens a wgctrl client whose netlink socket lives in ns (netns.None(): ours).
func wgctrlIn(ns netns.NsHandle) (*wgctrl.Client, error) {
	if !ns.IsOpen() {
		return wgctrl.New()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		return nil, fmt.Errorf("getting the current namespace: %w", err)
	}
	defer orig.Close()
	if err := netns.Set(ns); err != nil {
		return nil, fmt.Errorf("entering the namespace: %w", err)
	}
	c, cerr := wgctrl.New()
	if err := netns.Set(orig); err != nil {
		panic(fmt.Sprintf("cannot return to felix's namespace: %v", err)) // never leave a thread behind
	}
	if cerr != nil {
		return nil, fmt.Errorf("opening wgctrl: %w", cerr)
	}
	return c, nil
}

// Close releases the handles.
func (m *Manager) Close() {
	_ = m.wg.Close()
	m.nl.Close()
}

// Kind reports which kind of device ran under name ("kernel", "userspace" or "").
func (m *Manager) Kind(name string) string { return m.kinds[name] }

// Apply programs the wanted devices and removes what felix owns of the families in off.
func (m *Manager) Apply(ctx context.Context, want []Device, off []Family) error {
	names := make([]string, 0, len(want))
	for _, d := range want {
		names = append(names, d.Name)
	}
	m.mu.Lock()
	m.on = names
	m.mu.Unlock()
	var errs []error
	for i := range want {
		if err := m.applyDevice(&want[i]); err != nil {
			errs = append(errs, err)
		}
	}
	for _, f := range off {
		if err := m.disable(f); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (m *Manager) applyDevice(d *Device) error {
	if err := d.validate(); err != nil {
		return err
	}
	link, err := m.ensureLink(d)
	if err != nil {
		return err
	}
	if err := m.configure(d); err != nil {
		return err
	}
	if err := m.ensureAddr(link, d); err != nil {
		return err
	}
	if err := m.ensureRule(d.Family, true); err != nil {
		return err
	}
	return m.ensureThreading(d)
}

// ensureLink finds (or creates, as a kernel device) the device, sets its MTU and brings it up.
func (m *Manager) ensureLink(d *Device) (netlink.Link, error) {
	link, err := m.nl.LinkByName(d.Name)
	if nlhandle.IsLinkNotFound(err) {
		attrs := netlink.NewLinkAttrs()
		attrs.Name, attrs.MTU = d.Name, d.MTU
		if aerr := m.nl.LinkAdd(&netlink.Wireguard{LinkAttrs: attrs}); aerr != nil {
			m.log.Error().Err(aerr).Str("device", d.Name).Msg("Cannot create a kernel WireGuard device (no wireguard driver?) and no userspace device exists")
			return nil, fmt.Errorf("creating kernel WireGuard device %s: %w", d.Name, aerr)
		}
		link, err = m.nl.LinkByName(d.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("finding WireGuard device %s: %w", d.Name, err)
	}
	kind := kindUser
	if link.Type() == "wireguard" {
		kind = kindKernel
	}
	if m.kinds[d.Name] != kind {
		m.log.Info().Str("device", d.Name).Str("kind", kind).Msg("Using WireGuard device")
		m.kinds[d.Name] = kind
	}
	if d.MTU != 0 && link.Attrs().MTU != d.MTU {
		if err := m.nl.LinkSetMTU(link, d.MTU); err != nil {
			return nil, fmt.Errorf("setting the MTU of %s to %d: %w", d.Name, d.MTU, err)
		}
	}
	if link.Attrs().Flags&net.FlagUp == 0 {
		if err := m.nl.LinkSetUp(link); err != nil {
			return nil, fmt.Errorf("bringing %s up: %w", d.Name, err)
		}
	}
	return link, nil
}

// ensureAddr gives the device exactly the tunnel address (or no global address).
func (m *Manager) ensureAddr(link netlink.Link, d *Device) error {
	fam := unix.AF_INET
	if d.V6 {
		fam = unix.AF_INET6
	}
	addrs, err := m.nl.AddrList(link, fam)
	if err != nil {
		return fmt.Errorf("listing the addresses of %s: %w", d.Name, err)
	}
	have := false
	for _, a := range addrs {
		p, ok := nlhandle.Prefix(a.IPNet)
		if !ok || p.Addr().IsLinkLocalUnicast() {
			continue
		}
		if d.Addr.IsValid() && p == netip.PrefixFrom(d.Addr, d.Addr.BitLen()) {
			have = true
			continue
		}
		if err := m.nl.AddrDel(link, &a); err != nil {
			return fmt.Errorf("removing %s from %s: %w", p, d.Name, err)
		}
	}
	if d.Addr.IsValid() && !have {
		a := &netlink.Addr{IPNet: nlhandle.IPNet(netip.PrefixFrom(d.Addr, d.Addr.BitLen()))}
		if err := m.nl.AddrAdd(link, a); err != nil {
			return fmt.Errorf("adding %s to %s: %w", d.Addr, d.Name, err)
		}
	}
	return nil
}

// configure sets the key, port, mark and peers, sending only what differs (replacing a peer
// would reset its session).
func (m *Manager) configure(d *Device) error {
	cur, err := m.wg.Device(d.Name)
	if err != nil {
		return fmt.Errorf("reading WireGuard device %s: %w", d.Name, err)
	}
	cfg, changed := diffDevice(cur, d)
	if !changed {
		return nil
	}
	if err := m.wg.ConfigureDevice(d.Name, cfg); err != nil {
		return fmt.Errorf("configuring WireGuard device %s: %w", d.Name, err)
	}
	m.log.Info().Str("device", d.Name).Int("peers", len(d.Peers)).Int("port", d.ListenPort).Msg("Configured WireGuard device")
	return nil
}

// diffDevice computes the wgctrl update turning cur into d.
func diffDevice(cur *wgtypes.Device, d *Device) (wgtypes.Config, bool) {
	var cfg wgtypes.Config
	changed := false
	if cur.PrivateKey != d.PrivateKey {
		cfg.PrivateKey, changed = &d.PrivateKey, true
	}
	if cur.ListenPort != d.ListenPort {
		cfg.ListenPort, changed = &d.ListenPort, true
	}
	if mark := int(d.Mark); cur.FirewallMark != mark {
		cfg.FirewallMark, changed = &mark, true
	}
	wanted := map[wgtypes.Key]bool{}
	for _, p := range d.Peers {
		wanted[p.PublicKey] = true
		i := slices.IndexFunc(cur.Peers, func(c wgtypes.Peer) bool { return c.PublicKey == p.PublicKey })
		if i >= 0 && samePeer(cur.Peers[i], p, d) {
			continue
		}
		cfg.Peers, changed = append(cfg.Peers, peerConfig(p, d)), true
	}
	for _, c := range cur.Peers {
		if !wanted[c.PublicKey] {
			cfg.Peers, changed = append(cfg.Peers, wgtypes.PeerConfig{PublicKey: c.PublicKey, Remove: true}), true
		}
	}
	return cfg, changed
}

func samePeer(c wgtypes.Peer, p Peer, d *Device) bool {
	if c.Endpoint == nil || c.Endpoint.AddrPort() != p.Endpoint || c.PersistentKeepaliveInterval != d.Keepalive {
		return false
	}
	var have []netip.Prefix
	for _, n := range c.AllowedIPs {
		if pfx, ok := nlhandle.Prefix(&n); ok {
			have = append(have, pfx.Masked())
		}
	}
	slices.SortFunc(have, comparePrefix)
	return slices.Equal(have, p.AllowedIPs)
}

func peerConfig(p Peer, d *Device) wgtypes.PeerConfig {
	keepalive := d.Keepalive
	pc := wgtypes.PeerConfig{
		PublicKey: p.PublicKey, Endpoint: net.UDPAddrFromAddrPort(p.Endpoint),
		PersistentKeepaliveInterval: &keepalive, ReplaceAllowedIPs: true,
	}
	for _, a := range p.AllowedIPs {
		pc.AllowedIPs = append(pc.AllowedIPs, *nlhandle.IPNet(a))
	}
	return pc
}

func comparePrefix(a, b netip.Prefix) int {
	if c := a.Addr().Compare(b.Addr()); c != 0 {
		return c
	}
	return a.Bits() - b.Bits()
}

// SortPrefixes sorts prefixes as Peer.AllowedIPs must be.
func SortPrefixes(ps []netip.Prefix) { slices.SortFunc(ps, comparePrefix) }
