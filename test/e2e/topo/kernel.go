package topo

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// Reading a host's kernel state (routes, VXLAN device, neighbour and FDB entries) through the
// JSON output of iproute2, for assertions.

// KernelRoute is one route as `ip -j -d route show` reports it.
type KernelRoute struct {
	Type     string   `json:"type"`
	Dst      string   `json:"dst"`
	Gateway  string   `json:"gateway"`
	Dev      string   `json:"dev"`
	Protocol string   `json:"protocol"`
	Metric   int      `json:"metric"`
	Flags    []string `json:"flags"`
	Metrics  []struct {
		MTU int `json:"mtu"`
	} `json:"metrics"`
}

// MTU is the route's mtu metric (0 when unset).
func (r KernelRoute) MTU() int {
	for _, m := range r.Metrics {
		if m.MTU != 0 {
			return m.MTU
		}
	}
	return 0
}

// Onlink reports the onlink flag.
func (r KernelRoute) Onlink() bool { return slices.Contains(r.Flags, "onlink") }

// String renders the route in the form VXLANState uses.
func (r KernelRoute) String() string {
	if r.Type == "blackhole" {
		return fmt.Sprintf("blackhole %s proto %s", r.Dst, r.Protocol)
	}
	s := r.Dst
	if r.Gateway != "" {
		s += " via " + r.Gateway
	}
	s += " dev " + r.Dev
	if r.Onlink() {
		s += " onlink"
	}
	s += " proto " + r.Protocol
	if m := r.MTU(); m != 0 {
		s += fmt.Sprintf(" mtu %d", m)
	}
	return s
}

// Routes returns the host's main-table routes of an IP version; selector narrows them as on
// `ip route show` (e.g. "dev", "vxlan.calico" or "proto", "bird").
func (h *Host) Routes(ctx context.Context, fam int, selector ...string) ([]KernelRoute, error) {
	out, err := h.Exec(ctx, append([]string{"ip", "-j", "-d", fmt.Sprintf("-%d", fam), "route", "show"}, selector...)...)
	if err != nil {
		return nil, err
	}
	var rs []KernelRoute
	if err := json.Unmarshal([]byte(out), &rs); err != nil {
		return nil, fmt.Errorf("parsing ip route output %q: %w", out, err)
	}
	for i := range rs {
		if rs[i].Dev == "" && len(selector) >= 2 && selector[0] == "dev" {
			rs[i].Dev = selector[1] // `ip route show dev X` leaves dev out
		}
		if rs[i].Type == "" {
			rs[i].Type = "unicast"
		}
	}
	return rs, nil
}

// RouteTo returns the host's route to exactly dst (an IPAM block), if any.
func (h *Host) RouteTo(ctx context.Context, dst netip.Prefix) (KernelRoute, bool, error) {
	rs, err := h.Routes(ctx, familyOf(dst.Addr()), "exact", dst.String())
	if err != nil || len(rs) == 0 {
		return KernelRoute{}, false, err
	}
	return rs[0], true, nil
}

// vxlanLink is the part of `ip -j -d link show` describing a VXLAN device.
type vxlanLink struct {
	Address  string `json:"address"`
	MTU      int    `json:"mtu"`
	LinkInfo struct {
		Kind string `json:"info_kind"`
		Data struct {
			ID       int    `json:"id"`
			Local    string `json:"local"`
			Local6   string `json:"local6"`
			Port     int    `json:"port"`
			Learning bool   `json:"learning"`
		} `json:"info_data"`
	} `json:"linkinfo"`
}

// ReadVXLAN reads the VXLAN state of an IP version from the host's kernel: the device, its
// global address, its permanent neighbour and FDB entries, the routes through it and the
// blackholes inside the pools. Nil when there is no device.
func (h *Host) ReadVXLAN(ctx context.Context, fam int) (*VXLANState, error) {
	dev := "vxlan.calico"
	if fam == 6 {
		dev = "vxlan-v6.calico"
	}
	var links []vxlanLink
	if err := h.execJSON(ctx, &links, "ip", "-j", "-d", "link", "show", "dev", dev); err != nil {
		if strings.Contains(err.Error(), "does not exist") {
			return nil, nil
		}
		return nil, err
	}
	if len(links) != 1 || links[0].LinkInfo.Kind != "vxlan" {
		return nil, fmt.Errorf("%s: %s is not one VXLAN device: %+v", h.Name, dev, links)
	}
	l := links[0]
	d := l.LinkInfo.Data
	s := &VXLANState{Device: dev, MAC: l.Address, MTU: l.MTU, VNI: d.ID, Port: d.Port, Learning: d.Learning}
	s.Local, _ = netip.ParseAddr(d.Local + d.Local6)
	var err error
	if s.TunnelAddr, err = h.deviceAddr(ctx, dev, fam); err != nil {
		return nil, err
	}
	if err := h.readVXLANEntries(ctx, s, fam); err != nil {
		return nil, err
	}
	s.sort()
	return s, nil
}

func (h *Host) deviceAddr(ctx context.Context, dev string, fam int) (netip.Addr, error) {
	var ifs []struct {
		AddrInfo []struct {
			Local string `json:"local"`
			Scope string `json:"scope"`
		} `json:"addr_info"`
	}
	if err := h.execJSON(ctx, &ifs, "ip", "-j", fmt.Sprintf("-%d", fam), "addr", "show", "dev", dev); err != nil {
		return netip.Addr{}, err
	}
	for _, i := range ifs {
		for _, a := range i.AddrInfo {
			if a.Scope == "global" {
				return netip.ParseAddr(a.Local)
			}
		}
	}
	return netip.Addr{}, nil
}

func (h *Host) readVXLANEntries(ctx context.Context, s *VXLANState, fam int) error {
	var neigh []struct {
		Dst    string   `json:"dst"`
		LLAddr string   `json:"lladdr"`
		State  []string `json:"state"`
	}
	if err := h.execJSON(ctx, &neigh, "ip", "-j", fmt.Sprintf("-%d", fam), "neigh", "show", "dev", s.Device, "nud", "permanent"); err != nil {
		return err
	}
	for _, n := range neigh {
		s.Neighbors = append(s.Neighbors, fmt.Sprintf("%s lladdr %s %s", n.Dst, n.LLAddr, strings.Join(n.State, ",")))
	}
	var fdb []struct {
		MAC   string   `json:"mac"`
		Dst   string   `json:"dst"`
		Flags []string `json:"flags"`
		State string   `json:"state"`
	}
	if err := h.execJSON(ctx, &fdb, "bridge", "-j", "fdb", "show", "dev", s.Device); err != nil {
		return err
	}
	for _, e := range fdb {
		if e.State == "permanent" && e.Dst != "" {
			s.FDB = append(s.FDB, fmt.Sprintf("%s dst %s %s %s", e.MAC, e.Dst, strings.Join(e.Flags, ","), e.State))
		}
	}
	routes, err := h.Routes(ctx, fam, "dev", s.Device)
	if err != nil {
		return err
	}
	for _, r := range routes {
		if r.Gateway != "" {
			s.Routes = append(s.Routes, r.String())
		}
	}
	return h.readPoolBlackholes(ctx, s, fam)
}

func (h *Host) readPoolBlackholes(ctx context.Context, s *VXLANState, fam int) error {
	pool := PoolV4
	if fam == 6 {
		pool = PoolV6
	}
	bh, err := h.Routes(ctx, fam, "type", "blackhole", "root", pool.String())
	if err != nil {
		return err
	}
	for _, r := range bh {
		r.Type = "blackhole"
		s.Blackholes = append(s.Blackholes, r.String())
	}
	return nil
}

// execJSON runs a command in the host's namespace and decodes its JSON output.
func (h *Host) execJSON(ctx context.Context, v any, args ...string) error {
	out, err := h.Exec(ctx, args...)
	if err != nil {
		return err
	}
	if strings.TrimSpace(out) == "" {
		return nil
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		return fmt.Errorf("parsing the output of %s: %w: %q", strings.Join(args, " "), err, out)
	}
	return nil
}
