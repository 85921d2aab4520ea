package dataplane

import (
	"fmt"
	"math/bits"
	"net/netip"
	"slices"
	"strings"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/routes"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/wireguard"
	"github.com/calico-host/calico-host/pkg/nft"
)

// wgFamily is one IP version's WireGuard settings.
type wgFamily struct {
	fam      nft.IPVersion
	enabled  bool
	port     int
	mtu      int
	overhead int
	keyFile  string
	wireguard.Family
}

// wgFamilies splits the configuration by IP version. The mark is the bit Calico allocates
// after ACCEPT, PASS, DROP, SCRATCH0 and SCRATCH1: the sixth bit of the mark mask (0x200000
// with the default mask).
func (c Config) wgFamilies() []wgFamily {
	w, mark := c.Wireguard, wireguardMark(c.MarkMask)
	return []wgFamily{
		{nft.IPv4, w.Enabled, w.ListeningPort, w.MTU, wireguard.MTUOverhead, w.KeyFile,
			wireguard.Family{Name: w.InterfaceName, Table: w.RoutingTable, RulePriority: w.RoutingRulePriority, Mark: mark}},
		{nft.IPv6, w.EnabledV6 && c.IPv6Support, w.ListeningPortV6, w.MTUV6, wireguard.MTUOverheadV6, w.KeyFileV6,
			wireguard.Family{V6: true, Name: w.InterfaceNameV6, Table: w.RoutingTableV6, RulePriority: w.RoutingRulePriority, Mark: mark}},
	}
}

func wireguardMark(mask uint32) uint32 {
	for i := 0; mask != 0; i, mask = i+1, mask&(mask-1) {
		if i == 5 {
			return 1 << bits.TrailingZeros32(mask)
		}
	}
	return 0
}

// WireguardKeys prepares the private key of each IP version from cfg: loaded or created for an
// enabled version, removed for a disabled one. It returns the public keys to publish ("" for a
// disabled version).
func WireguardKeys(cfg Config) (v4, v6 string, err error) {
	var out [2]string
	for i, f := range cfg.wgFamilies() {
		if !f.enabled {
			if err := wireguard.RemoveKey(f.keyFile); err != nil {
				return "", "", err
			}
			continue
		}
		k, _, err := wireguard.LoadOrCreateKey(f.keyFile)
		if err != nil {
			return "", "", err
		}
		out[i] = k.PublicKey().String()
	}
	return out[0], out[1], nil
}

// loadWireguardKeys reads the private keys of the enabled versions (creating them if needed).
func (d *Dataplane) loadWireguardKeys() error {
	for i, f := range d.cfg.wgFamilies() {
		if !f.enabled {
			continue
		}
		k, created, err := wireguard.LoadOrCreateKey(f.keyFile)
		if err != nil {
			return fmt.Errorf("WireGuard: %w", err)
		}
		if created {
			d.log.Warn().Str("file", f.keyFile).Msg("Created a new WireGuard private key (its public key must be published)")
		}
		d.wgKeys[i] = k
	}
	return nil
}

// wireguardDevices computes the devices of the enabled versions and the families to turn off.
func (d *Dataplane) wireguardDevices() ([]wireguard.Device, []wireguard.Family) {
	var on []wireguard.Device
	var off []wireguard.Family
	for i, f := range d.cfg.wgFamilies() {
		if !f.enabled {
			off = append(off, f.Family)
			continue
		}
		dev, dups := wgDevice(d.cfg, d.model, f, d.wgKeys[i], d.hostMTU)
		d.logSharedKeys(f, dups)
		on = append(on, dev)
	}
	return on, off
}

// logSharedKeys logs, once per change, the public keys several hosts publish (those hosts are
// not WireGuard peers).
func (d *Dataplane) logSharedKeys(f wgFamily, dups map[wgtypes.Key][]string) {
	if d.wgSharedLogged == nil {
		d.wgSharedLogged = map[string]bool{}
	}
	seen := map[string]bool{}
	for k, names := range dups {
		id := fmt.Sprintf("%d/%s/%s", f.fam, k, strings.Join(names, ","))
		seen[id] = true
		if !d.wgSharedLogged[id] {
			d.log.Warn().Str("device", f.Name).Str("publicKey", k.String()).Strs("nodes", names).
				Msg("WireGuard public key published by more than one node; none of them is configured as a peer (their traffic is not encrypted)")
		}
	}
	for id := range d.wgSharedLogged {
		if strings.HasPrefix(id, fmt.Sprintf("%d/", f.fam)) && !seen[id] {
			delete(d.wgSharedLogged, id)
		}
	}
	for id := range seen {
		d.wgSharedLogged[id] = true
	}
}

func wgDevice(cfg Config, m *model, f wgFamily, key wgtypes.Key, hostMTU int) (wireguard.Device, map[wgtypes.Key][]string) {
	dev := wireguard.Device{Family: f.Family, PrivateKey: key, ListenPort: f.port, MTU: f.mtu,
		Keepalive: cfg.Wireguard.PersistentKeepAlive, Threaded: cfg.Wireguard.ThreadingEnabled}
	if dev.MTU == 0 && hostMTU > 0 {
		dev.MTU = hostMTU - f.overhead
	}
	if self := m.hosts[cfg.Hostname]; self != nil {
		dev.Addr = wgAddr(self, f.V6)
		if !dev.Addr.IsValid() && cfg.Wireguard.HostEncryption {
			dev.Addr = hostAddr(self, f.V6) // Project Calico: the node IP when there is no tunnel address
		}
	}
	dups := wgSharedKeys(cfg.Hostname, m, f)
	for name, ips := range wgRemoteIPs(cfg, m, f) {
		var key wgtypes.Key
		var ep netip.AddrPort
		if h := m.hosts[name]; h != nil {
			key, ep = wgPeerFacts(h, f)
		}
		if !ep.IsValid() || key == (wgtypes.Key{}) || len(dups[key]) > 0 {
			dev.Throw = append(dev.Throw, ips...) // not a peer: its traffic stays on the normal (unencrypted) routes
			continue
		}
		dev.Peers = append(dev.Peers, wireguard.Peer{Node: name, PublicKey: key, Endpoint: ep, AllowedIPs: ips})
	}
	dev.Throw = append(dev.Throw, wgLocalThrows(cfg, m, f)...)
	wireguard.SortPrefixes(dev.Throw)
	dev.Throw = slices.Compact(dev.Throw)
	slices.SortFunc(dev.Peers, func(a, b wireguard.Peer) int { return slices.Compare(a.PublicKey[:], b.PublicKey[:]) })
	return dev, dups
}

// wgRemoteIPs are, per other host (every host with a Node, and every host a route leads to),
// what the family routes to it: its blocks and borrowed addresses, its tunnel addresses, and with
// host encryption its own address. A host with a Node but nothing routed still gets an entry
// (as Project Calico, it is a peer with no allowed IPs).
func wgRemoteIPs(cfg Config, m *model, f wgFamily) map[string][]netip.Prefix {
	allowed := wgAllowedIPs(m, f.fam)
	for name, h := range m.hosts {
		if name == cfg.Hostname {
			continue
		}
		ips := allowed[name]
		if a := wgAddr(h, f.V6); a.IsValid() {
			ips = append(ips, netip.PrefixFrom(a, a.BitLen()))
		}
		if a := hostAddr(h, f.V6); a.IsValid() && cfg.Wireguard.HostEncryption {
			ips = append(ips, netip.PrefixFrom(a, a.BitLen()))
		}
		allowed[name] = ips
	}
	for name, ips := range allowed {
		wireguard.SortPrefixes(ips)
		allowed[name] = slices.Compact(ips)
	}
	return allowed
}

// wgSharedKeys finds the public keys that more than one remote host publishes for the family,
// with the hosts (sorted). As in Project Calico, none of those hosts is configured as a peer.
func wgSharedKeys(self string, m *model, f wgFamily) map[wgtypes.Key][]string {
	owners := map[wgtypes.Key][]string{}
	for name, h := range m.hosts {
		text := h.WireguardPublicKey
		if f.V6 {
			text = h.WireguardPublicKeyV6
		}
		if k, err := wgtypes.ParseKey(text); err == nil && name != self && k != (wgtypes.Key{}) {
			owners[k] = append(owners[k], name)
		}
	}
	for k, names := range owners {
		if len(names) < 2 {
			delete(owners, k)
			continue
		}
		slices.Sort(names)
	}
	return owners
}

// wgLocalThrows are this host's workload prefixes of the family (its blocks, and its workloads'
// and borrowed addresses outside them) and its WireGuard tunnel address when no block covers
// it: local traffic is thrown back to the main table, as Project Calico's table does.
func wgLocalThrows(cfg Config, m *model, f wgFamily) []netip.Prefix {
	var blocks, singles []netip.Prefix
	for _, r := range m.routes {
		if r.Type != calc.RouteLocalWorkload || versionOf(r.Dst.Addr()) != f.fam {
			continue
		}
		if r.Dst.IsSingleIP() {
			singles = append(singles, r.Dst.Masked())
		} else {
			blocks = append(blocks, r.Dst.Masked())
		}
	}
	if self := m.hosts[cfg.Hostname]; self != nil {
		if a := wgAddr(self, f.V6); a.IsValid() {
			singles = append(singles, netip.PrefixFrom(a, a.BitLen()))
		}
	}
	for _, ep := range m.weps {
		nets := ep.IPv4Nets
		if f.V6 {
			nets = ep.IPv6Nets
		}
		for _, n := range nets {
			if n.IsSingleIP() {
				singles = append(singles, n)
			}
		}
	}
	out := blocks
	for _, s := range singles {
		if !slices.ContainsFunc(blocks, func(b netip.Prefix) bool { return b.Contains(s.Addr()) }) {
			out = append(out, s)
		}
	}
	return out
}

// wgPeerFacts parses a host's published key and its endpoint for the family (zero when either
// is missing or malformed).
func wgPeerFacts(h *calc.HostMetadata, f wgFamily) (wgtypes.Key, netip.AddrPort) {
	text, addr := h.WireguardPublicKey, h.IPv4Addr.Addr()
	if f.V6 {
		text, addr = h.WireguardPublicKeyV6, h.IPv6Addr.Addr()
	}
	key, err := wgtypes.ParseKey(text)
	if err != nil || !addr.IsValid() {
		return wgtypes.Key{}, netip.AddrPort{}
	}
	return key, netip.AddrPortFrom(addr, uint16(f.port))
}

// hostAddr is a host's own address of the family (its Node's bgp address).
func hostAddr(h *calc.HostMetadata, v6 bool) netip.Addr {
	if v6 {
		return h.IPv6Addr.Addr()
	}
	return h.IPv4Addr.Addr()
}

func wgAddr(h *calc.HostMetadata, v6 bool) netip.Addr {
	if v6 {
		return h.WireguardAddrV6
	}
	return h.WireguardAddrV4
}

// wgAllowedIPs groups the remote blocks, borrowed addresses and tunnel addresses of the family
// by owning host.
func wgAllowedIPs(m *model, fam nft.IPVersion) map[string][]netip.Prefix {
	out := map[string][]netip.Prefix{}
	for _, r := range m.routes {
		if r.Type == calc.RouteLocalWorkload || r.DstNode == "" || versionOf(r.Dst.Addr()) != fam {
			continue
		}
		out[r.DstNode] = append(out[r.DstNode], r.Dst.Masked())
	}
	return out
}

// wireguardRoutes is felix's WireGuard table: every peer's allowed IPs through the device, and
// throw routes for what must not go through it.
func wireguardRoutes(devs []wireguard.Device) []routes.Route {
	var out []routes.Route
	for _, d := range devs {
		for _, p := range d.Peers {
			for _, a := range p.AllowedIPs {
				out = append(out, routes.Route{Dst: a, Dev: d.Name, Table: d.Table, Scope: routes.ScopeLink})
			}
		}
		for _, a := range d.Throw {
			out = append(out, routes.Route{Dst: a, Throw: true, Table: d.Table})
		}
	}
	return out
}

// wgHostMark is the WireGuard mark raw PREROUTING sets for host encryption (0: not in use).
func (c Config) wgHostMark() uint32 {
	if !c.Wireguard.HostEncryption || c.wgPort(nft.IPv4) == 0 && c.wgPort(nft.IPv6) == 0 {
		return 0
	}
	return wireguardMark(c.MarkMask)
}

// wgPort is the listening port of version v when its WireGuard is on (0 otherwise).
func (c Config) wgPort(v nft.IPVersion) uint16 {
	for _, f := range c.wgFamilies() {
		if f.fam == v && f.enabled {
			return uint16(f.port)
		}
	}
	return 0
}
