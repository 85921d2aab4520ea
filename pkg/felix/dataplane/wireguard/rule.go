package wireguard

import (
	"errors"
	"fmt"

	"github.com/calico-host/calico-host/pkg/nlhandle"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
)

func (f Family) netlinkFamily() int {
	if f.V6 {
		return netlink.FAMILY_V6
	}
	return netlink.FAMILY_V4
}

// rule is felix's routing rule: packets without the WireGuard mark look up its table (packets
// the device itself sends carry the mark and skip it, so tunnel packets leave unencrypted).
func (f Family) rule() *netlink.Rule {
	r := netlink.NewRule()
	mask := f.Mark
	r.Family, r.Priority, r.Table, r.Mark, r.Mask, r.Invert = f.netlinkFamily(), f.RulePriority, f.Table, f.Mark, &mask, true
	return r
}

// isOurs: a rule at felix's priority that looks up its table, or that matches its mark (left
// pointing at the previous table when RouteTableRanges moved the WireGuard table).
func isOurs(r netlink.Rule, want *netlink.Rule) bool {
	return r.Priority == want.Priority && (r.Table == want.Table || sameMatch(r, want))
}

func sameMatch(r netlink.Rule, want *netlink.Rule) bool {
	return r.Invert && r.Mark == want.Mark && r.Mask != nil && want.Mask != nil && *r.Mask == *want.Mask
}

func sameRule(r netlink.Rule, want *netlink.Rule) bool {
	return r.Priority == want.Priority && r.Table == want.Table && sameMatch(r, want)
}

// ensureRule makes felix's rule present (want) or absent.
func (m *Manager) ensureRule(f Family, want bool) error {
	r := f.rule()
	rules, err := m.nl.RuleListFiltered(r.Family, &netlink.Rule{Priority: r.Priority}, netlink.RT_FILTER_PRIORITY)
	if err != nil {
		return fmt.Errorf("listing routing rules: %w", err)
	}
	have := false
	for _, cur := range rules {
		if !isOurs(cur, r) {
			continue
		}
		if want && !have && sameRule(cur, r) {
			have = true
			continue
		}
		if err := m.nl.RuleDel(&cur); err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("deleting routing rule %s: %w", cur, err)
		}
	}
	if want && !have {
		if err := m.nl.RuleAdd(r); err != nil {
			return fmt.Errorf("adding routing rule %s: %w", r, err)
		}
		m.log.Info().Int("priority", f.RulePriority).Int("table", f.Table).Uint32("mark", f.Mark).Msg("Added WireGuard routing rule")
	}
	return nil
}

// disable removes what felix owns of a family: the rule, and the device (a kernel device is
// deleted; a userspace device, which felix did not create, loses its peers, key, addresses and
// is set down).
func (m *Manager) disable(f Family) error {
	if err := m.ensureRule(f, false); err != nil {
		return err
	}
	link, err := m.nl.LinkByName(f.Name)
	if nlhandle.IsLinkNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("finding WireGuard device %s: %w", f.Name, err)
	}
	if link.Type() == "wireguard" {
		if err := m.nl.LinkDel(link); err != nil {
			return fmt.Errorf("deleting WireGuard device %s: %w", f.Name, err)
		}
		m.log.Info().Str("device", f.Name).Msg("Deleted WireGuard device")
		return nil
	}
	return m.clearUserspace(link, f)
}

func (m *Manager) clearUserspace(link netlink.Link, f Family) error {
	cur, err := m.wg.Device(f.Name)
	if err != nil {
		return fmt.Errorf("reading WireGuard device %s: %w", f.Name, err)
	}
	if len(cur.Peers) > 0 || cur.PrivateKey != (wgtypes.Key{}) {
		var zero wgtypes.Key
		if err := m.wg.ConfigureDevice(f.Name, wgtypes.Config{PrivateKey: &zero, ReplacePeers: true}); err != nil {
			return fmt.Errorf("clearing WireGuard device %s: %w", f.Name, err)
		}
		m.log.Info().Str("device", f.Name).Msg("Cleared userspace WireGuard device (peers and key)")
	}
	if err := m.ensureAddr(link, &Device{Family: f}); err != nil {
		return err
	}
	if link.Attrs().Flags&unix.IFF_UP != 0 {
		if err := m.nl.LinkSetDown(link); err != nil {
			return fmt.Errorf("setting %s down: %w", f.Name, err)
		}
	}
	return nil
}
