package topo

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/birdctl"
)

// BIRD 1.6 configuration as Project Calico's confd renders it for a node of the node-to-node
// mesh with default settings: the statements of node/filesystem/etc/calico/confd/templates/
// bird{,6}.cfg.template, bird{,6}_aggr.cfg.template and bird{,6}_ipam.cfg.template as filled in
// by confd/pkg/backends/calico/bgp_processor.go (getBGPConfig): log level Info, mesh peers only
// (no BGPPeer, BGPFilter, community, static route or service address), BGPConfiguration
// programClusterRoutes unset. Compare confd/tests/compiled_templates/mesh/ipip-off. The text is
// ours (comments differ); the statements are the ones confd writes.

// Constants of that rendering (bgp_processor.go): the normal route priority and BIRD's largest
// integer, which carry a kernel metric across BGP as LOCAL_PREF = max - metric.
const (
	pcNormalRoutePriority = 1024
	pcBirdIntMax          = 2147483647
)

// bird16Names are the file names of one IP version: main file, aggregation, IPAM filters.
func bird16Names(fam int) (main, aggr, ipamFile string) {
	if fam == 6 {
		return "bird6.cfg", "bird6_aggr.cfg", "bird6_ipam.cfg"
	}
	return "bird.cfg", "bird_aggr.cfg", "bird_ipam.cfg"
}

// renderBird16 returns the three files of one IP version, by name.
func renderBird16(st *pcState, fam int) map[string]string {
	main, aggr, ipamFile := bird16Names(fam)
	return map[string]string{
		main:     renderBird16Main(st, fam, aggr, ipamFile),
		aggr:     renderBird16Aggr(st, fam),
		ipamFile: renderBird16IPAM(st, fam),
	}
}

func renderBird16Main(st *pcState, fam int, aggr, ipamFile string) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("# BIRD 1.6 configuration of %s as Project Calico's confd renders it (calico-host e2e).", st.self.Name)
	w("function apply_communities ()\n{\n}\n")
	w("template kernel kernel_template {\n  learn;\n  persist;\n  scan time 2;\n  import all;\n}\n")
	w("template direct direct_template {\n  debug { states };\n  interface -\"cali*\", -\"kube-ipvs*\", \"*\";\n}\n")
	w("include %q;\ninclude %q;\n", aggr, ipamFile)
	w("router id %s;\n", nodeAddr(st.self, 4)) // the IPv4 address, for bird6 too
	w("protocol kernel from kernel_template {\n  export filter calico_kernel_programming;\n  graceful restart;\n  merge paths on;\n}\n")
	w("protocol device {\n  debug { states };\n  scan time 2;\n}\n")
	w("protocol direct from direct_template {\n}\n")
	self := nodeAddr(st.self, fam)
	if !self.IsValid() {
		w("# IPv%d is disabled on this node.", fam)
		return b.String()
	}
	w("template bgp bgp_template {\n  debug { states, routes, filters, events };\n  description \"Connection to BGP peer\";")
	w("  local as %s;\n  gateway recursive;\n  add paths on;\n  graceful restart;", st.as)
	w("  connect delay time 2;\n  connect retry time 5;\n  error wait time 5,30;\n}\n")
	peers := meshPeers(st, fam)
	if len(peers) == 0 {
		w("# No BGP peers configured for this node")
	}
	for _, p := range peers {
		renderMeshPeer(w, p, self)
	}
	return b.String()
}

// pcPeer is one node-to-node mesh session.
type pcPeer struct {
	name string
	ip   netip.Addr
	as   string
}

// meshPeers are the other Nodes with an address of the family, named Mesh_<address with '.' or
// ':' replaced by '_'>, sorted by name.
func meshPeers(st *pcState, fam int) []pcPeer {
	self := nodeAddr(st.self, fam)
	if !st.mesh || st.self.Spec.BGP == nil || st.self.Spec.BGP.RouteReflectorClusterID != "" {
		return nil
	}
	var out []pcPeer
	for _, n := range st.nodes {
		ip := nodeAddr(n, fam)
		if !ip.IsValid() || ip == self || n.Spec.BGP.RouteReflectorClusterID != "" {
			continue
		}
		as := st.as
		if n.Spec.BGP.ASNumber != nil {
			as = fmt.Sprint(uint32(*n.Spec.BGP.ASNumber))
		}
		name := "Mesh_" + strings.NewReplacer(".", "_", ":", "_").Replace(ip.String())
		out = append(out, pcPeer{name: name, ip: ip, as: as})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// renderMeshPeer writes one session: passive towards a peer whose address sorts after ours (as
// strings), so that exactly one side connects.
func renderMeshPeer(w func(string, ...any), p pcPeer, self netip.Addr) {
	w("protocol bgp %s from bgp_template {", p.name)
	w("  neighbor %s as %s;\n  source address %s;\n  ttl security off;\n  multihop;", p.ip, p.as, self)
	w("  import filter {\n    if (defined(bgp_local_pref)&&(bgp_local_pref > %d)) then\n      preference = 200;\n    accept;\n  };",
		pcBirdIntMax-pcNormalRoutePriority)
	w("  export filter {\n    if (defined(source) && source = RTS_BGP && defined(bgp_local_pref)) then {")
	w("      krt_metric = %d - bgp_local_pref;\n    } else {", pcBirdIntMax)
	w("      if (!defined(krt_metric)) then { krt_metric = %d; }", pcNormalRoutePriority)
	w("      bgp_local_pref = %d - krt_metric;\n    }", pcBirdIntMax)
	w("    calico_export_to_bgp_peers(true);\n    reject;\n  };")
	if p.ip.String() > self.String() {
		w("  passive on;")
	}
	w("}\n")
}

// renderBird16Aggr: a blackhole per affine block of this host (not /32 or /128), and
// calico_aggr, which exports a confirmed (or state-less) block whole and nothing inside it
// unless its metric is below the normal priority.
func renderBird16Aggr(st *pcState, fam int) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("# Blocks of %s (calico-host e2e rendering of Project Calico's bird_aggr template).", st.self.Name)
	w("template static static_template {")
	routes := 0
	for _, a := range st.affinities[fam] {
		if a.cidr.Bits() != a.cidr.Addr().BitLen() {
			w("   route %s blackhole;", a.cidr)
			routes++
		}
	}
	if routes == 0 {
		w("   # No blocks for this host.")
	}
	w("}\n")
	if routes > 0 {
		w("protocol static from static_template {\n}\n")
	}
	w("function calico_aggr ()\n{")
	for _, a := range st.affinities[fam] {
		if a.state != "" && a.state != "confirmed" {
			w("      # Block %s is %s", a.cidr, a.state)
			continue
		}
		w("      if ( net = %s ) then { accept; }", a.cidr)
		w("      if ( net ~ %s && krt_metric < %d ) then { accept; }", a.cidr, pcNormalRoutePriority)
		w("      if ( net ~ %s ) then { reject; }", a.cidr)
	}
	w("}")
	return b.String()
}

// renderBird16IPAM: what is exported to peers (no tunnel-device routes to iBGP peers, this
// host's blocks, then everything in a pool with BGP export) and what is programmed into the
// kernel (BGP routes get metric 1024 or max - LOCAL_PREF; VXLAN pools are left to felix).
func renderBird16IPAM(st *pcState, fam int) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	rejects, accepts, kernel := poolStatements(st.pools, fam)
	w("# Export and kernel filters of %s (calico-host e2e rendering of Project Calico's bird_ipam template).", st.self.Name)
	w("function reject_local_routes () {\n  if (defined(ifname)) then {\n     if (ifname ~ \"bpf*.cali\") then {\n        reject;\n     }\n  }\n}\n")
	w("function calico_export_to_bgp_peers(bool internal_peer) {")
	for _, s := range rejects {
		w("%s", s)
	}
	w("  if (internal_peer) then {\n    if (defined(ifname)) then {")
	w("      if ((ifname ~ \"*.cali\") || (ifname ~ \"*.calico\") || (ifname ~ \"tunl0\")) then {\n        reject;\n      }\n    }\n  }")
	w("  reject_local_routes();\n  apply_communities();\n  calico_aggr();")
	for _, s := range accepts {
		w("%s", s)
	}
	w("}\n")
	w("filter calico_kernel_programming {")
	w("  if (defined(source) && (source = RTS_BGP) && !defined(krt_metric)) then {\n      krt_metric = %d;", pcNormalRoutePriority)
	w("      if (defined(bgp_local_pref)) then {\n          krt_metric = %d - bgp_local_pref;\n      }", pcBirdIntMax)
	w("      if (krt_metric < %d) then {\n          preference = 200;\n      }\n  }", pcNormalRoutePriority)
	for _, s := range kernel {
		w("%s", s)
	}
	w("  accept;\n}")
	return b.String()
}

// poolStatements are confd's per-pool filter lines (processIPPool), each list sorted: export
// rejects (BGP export disabled), export accepts, kernel lines. For IPv6 only the kernel rejects
// are kept (the filter ends in accept anyway). IPIP pools are not simulated.
func poolStatements(pools []*api.IPPool, fam int) (rejects, accepts, kernel []string) {
	for _, p := range pools {
		cidr, err := netip.ParsePrefix(p.Spec.CIDR)
		if err != nil || familyOf(cidr.Addr()) != fam {
			continue
		}
		vxlan := p.Spec.VXLANMode == "Always" || p.Spec.VXLANMode == "CrossSubnet"
		if p.Spec.DisableBGPExport {
			rejects = append(rejects, fmt.Sprintf("  if (net ~ %s) then { reject; } # BGP export is disabled.", cidr))
		} else {
			accepts = append(accepts, fmt.Sprintf("  if (net ~ %s) then { accept; }", cidr))
		}
		switch {
		case vxlan:
			kernel = append(kernel, fmt.Sprintf("  if (net ~ %s) then { reject; } # VXLAN routes are handled by Felix.", cidr))
		case fam == 4:
			kernel = append(kernel, fmt.Sprintf("  if (net ~ %s) then { accept; }", cidr))
		}
	}
	sort.Strings(rejects)
	sort.Strings(accepts)
	sort.Strings(kernel)
	return rejects, accepts, kernel
}

// syncBIRD renders both IP versions' files; on a change it checks them with `bird -p` and
// starts BIRD 1.6 or has it reload, as calico-node's confd does (`birdcl configure`).
func (pc *projectCalico) syncBIRD(ctx context.Context, st *pcState) error {
	dir, err := Bird16Dir(ctx)
	if err != nil {
		return err
	}
	for _, fam := range pc.h.f.Families() {
		changed, err := pc.writeBird16(st, fam)
		if err != nil {
			return err
		}
		if err := pc.applyBird16(ctx, dir, fam, changed); err != nil {
			return err
		}
	}
	return nil
}

func (pc *projectCalico) birdDir() string { return pc.h.path("bird16") }

// Bird16Socket is the control socket of the host's BIRD 1.6 of an IP version (bird or bird6).
func (h *Host) Bird16Socket(fam int) string {
	return h.path(fmt.Sprintf("bird16-v%d.ctl", fam))
}

func (pc *projectCalico) writeBird16(st *pcState, fam int) (bool, error) {
	if err := os.MkdirAll(pc.birdDir(), 0o755); err != nil {
		return false, err
	}
	changed := false
	for name, text := range renderBird16(st, fam) {
		if pc.applied[name] == text {
			continue
		}
		if err := os.WriteFile(filepath.Join(pc.birdDir(), name), []byte(text), 0o644); err != nil {
			return false, err
		}
		pc.applied[name] = text
		changed = true
	}
	return changed, nil
}

func (pc *projectCalico) applyBird16(ctx context.Context, dir string, fam int, changed bool) error {
	bin := filepath.Join(dir, "bird")
	if fam == 6 {
		bin = filepath.Join(dir, "bird6")
	}
	main, _, _ := bird16Names(fam)
	cfg := filepath.Join(pc.birdDir(), main)
	if changed {
		if out, err := pc.h.Exec(ctx, bin, "-p", "-c", cfg); err != nil {
			return fmt.Errorf("BIRD 1.6 refuses %s: %w: %s", cfg, err, out)
		}
	}
	if p := pc.birds[fam]; p != nil && p.Running() {
		if changed {
			pc.logChange(fmt.Sprintf("reconfiguring %s", filepath.Base(bin)))
			return pc.h.ConfigureBird16(ctx, fam)
		}
		return nil
	}
	p := newProc(fmt.Sprintf("%s/%s", pc.h.Name, filepath.Base(bin)), pc.h.NS,
		filepath.Join(pc.h.Logs, filepath.Base(bin)+"-1.6.log"), nil,
		bin, "-R", "-f", "-c", cfg, "-s", pc.h.Bird16Socket(fam), "-P", pc.h.path(fmt.Sprintf("bird16-v%d.pid", fam)))
	if pc.birds[fam] == nil {
		pc.h.f.undo.push(func() { p.Stop() })
	} else {
		p = pc.birds[fam]
	}
	pc.birds[fam] = p
	pc.logChange("starting " + filepath.Base(bin))
	return p.Start()
}

// ConfigureBird16 has the host's BIRD 1.6 of an IP version reload its configuration.
func (h *Host) ConfigureBird16(ctx context.Context, fam int) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := birdctl.Dial(ctx, h.Bird16Socket(fam))
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Configure(ctx)
	return err
}

// Bird16Sessions returns the BGP protocols of the host's BIRD 1.6 of an IP version.
func (h *Host) Bird16Sessions(ctx context.Context, fam int) (map[string]birdctl.Protocol, error) {
	return bgpSessions(ctx, h.Bird16Socket(fam))
}

// WaitBird16Established waits until the host's BIRD 1.6 daemons have n BGP sessions in all,
// every one Established.
func (h *Host) WaitBird16Established(ctx context.Context, n int) error {
	return Eventually(ctx, 60*time.Second, 250*time.Millisecond, func() error {
		all := map[string]birdctl.Protocol{}
		for _, fam := range h.f.Families() {
			s, err := h.Bird16Sessions(ctx, fam)
			if err != nil {
				return err
			}
			for name, p := range s {
				all[fmt.Sprintf("v%d/%s", fam, name)] = p
			}
		}
		return checkEstablished(h.Name+" (BIRD 1.6)", all, n)
	})
}
