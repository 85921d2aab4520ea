package trace

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/config"
	"github.com/calico-host/calico-host/pkg/felix/dataplane"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/ifaces"
	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/sim"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// hostModel is one host's nftables tables as its felix would program them, compiled for the
// simulator, with the host's interfaces and routes as the datastore describes them.
type hostModel struct {
	name   string
	scope  Scope
	off    *dataplane.Offline
	rs     *sim.Ruleset
	fib    *sim.StaticFIB
	uplink sim.Iface
	ifaces map[string]sim.Iface // workload interfaces by name
	// prefixes are felix's InterfacePrefix: the interfaces it polices as workloads'.
	prefixes []string
}

// Scope says which policies a model enforces.
type Scope uint8

// Scopes.
const (
	Enforced Scope = iota // what the dataplane enforces: staged policies left out
	Pending               // staged policies enforced in their place (calc.StagedAsEnforced)
)

func (s Scope) String() string {
	if s == Pending {
		return "pending"
	}
	return "enforced"
}

// buildHost runs calc for host over the snapshot, the ruleset builder over calc's output and
// compiles the tables.
func buildHost(ups []syncer.Update, snap *snapshot, host string, scope Scope, log zerolog.Logger) (*hostModel, error) {
	var opts []calc.Option
	if scope == Pending {
		opts = append(opts, calc.StagedAsEnforced())
	}
	g := calc.New(host, log, opts...)
	g.OnMessage(syncer.Message{Status: syncer.InSync, Snapshot: true, Updates: ups})
	updates := g.Flush()
	h := &hostModel{name: host, scope: scope, ifaces: map[string]sim.Iface{}}
	states := h.plumb(snap)
	cfg := felixConfig(host, g.Facts())
	h.prefixes = cfg.InterfacePrefixes
	off, err := dataplane.BuildOffline(cfg, updates, states, log)
	if err != nil {
		return nil, fmt.Errorf("host %s: %w", host, err)
	}
	h.off = off
	if h.rs, err = sim.Compile(off.Tables...); err != nil {
		return nil, fmt.Errorf("host %s: compiling its tables: %w", host, err)
	}
	return h, nil
}

// felixConfig is felix's configuration on host: defaults and the datastore's
// FelixConfigurations (the host's local files are not known to a trace).
func felixConfig(host string, f calc.Facts) dataplane.Config {
	d := f.Config
	c, _ := config.Resolve(config.ScopedSpecLayer(d.Global, d.Scoped, d.Node, host, d.ScopedName))
	c.FelixHostname = host
	return dataplane.NewConfig(c, f.PoolsUseVXLAN)
}

// plumb gives the host its interfaces and routes: the uplink (index 2) holding the host's
// addresses, with the default routes, and one interface per local workload endpoint (from index
// 10, by name) with a route to each of its addresses. It returns them as the interface
// monitor would report them.
func (h *hostModel) plumb(snap *snapshot) []*ifaces.State {
	h.uplink = sim.Iface{Name: snap.uplink(h.name), Index: 2, Type: unix.ARPHRD_ETHER}
	h.fib = &sim.StaticFIB{Loopback: sim.Iface{Name: "lo", Index: 1, Type: unix.ARPHRD_LOOPBACK}, Forward: true}
	up := &ifaces.State{Name: h.uplink.Name, Index: 2, Up: true}
	for _, a := range snap.nodes[h.name] {
		p := netip.PrefixFrom(a, a.BitLen())
		h.fib.Addrs = append(h.fib.Addrs, sim.IfaceAddr{Iface: h.uplink, Prefix: p})
		up.Addrs = append(up.Addrs, p)
	}
	for _, def := range []string{"0.0.0.0/0", "::/0"} {
		h.fib.Routes = append(h.fib.Routes, sim.StaticRoute{Dst: netip.MustParsePrefix(def), Iface: h.uplink})
	}
	states := []*ifaces.State{up}
	wl := snap.localWorkloads(h.name)
	names := make([]string, 0, len(wl))
	for n := range wl {
		names = append(names, n)
	}
	slices.Sort(names)
	for i, n := range names {
		ifc := sim.Iface{Name: n, Index: uint32(10 + i), Type: unix.ARPHRD_ETHER}
		h.ifaces[n] = ifc
		states = append(states, &ifaces.State{Name: n, Index: int(ifc.Index), Up: true})
		for _, a := range wl[n] {
			h.fib.Routes = append(h.fib.Routes, sim.StaticRoute{Dst: netip.PrefixFrom(a, a.BitLen()), Iface: ifc})
		}
	}
	return states
}

// run simulates the first packet of a connection from src to dst as this host sees it:
// received from a local workload's interface, sent by the host itself, or received on the
// uplink.
func (h *hostModel) run(src, dst Place, spec sim.IPSpec) (*sim.Result, error) {
	spec.Src, spec.Dst = src.Addr, dst.Addr
	pk, err := sim.IPPacket(spec)
	if err != nil {
		return nil, err
	}
	in := sim.Input{Packet: pk, CT: sim.Conntrack{State: nft.CTStateNew}, FIB: h.fib}
	switch {
	case src.Host == h.name && src.Workload():
		ifc, ok := h.ifaces[src.Iface]
		if !ok {
			return nil, fmt.Errorf("host %s has no interface %q for %s", h.name, src.Iface, src.Name)
		}
		in.IIF = &ifc
	case src.Host != h.name:
		in.IIF = &h.uplink
	}
	return h.rs.Run(in)
}

// unpoliced says why felix on this host would not police the workload at p, if it would not:
// its interface does not start with one of felix's InterfacePrefix.
func (h *hostModel) unpoliced(p Place) (string, bool) {
	if p.Host != h.name || !p.Workload() {
		return "", false
	}
	for _, pre := range h.prefixes {
		if strings.HasPrefix(p.Iface, pre) {
			return "", false
		}
	}
	return fmt.Sprintf("felix on %s polices workload interfaces starting with %s (InterfacePrefix): %s's %s is not one",
		h.name, strings.Join(h.prefixes, ", "), p.Name, p.Iface), true
}

// srcPort is the source port of the simulated connections.
const srcPort = 40000

// firstPacket is the first packet of the connection req asks about.
func firstPacket(req Request) sim.IPSpec {
	return sim.IPSpec{Proto: req.Proto, SPort: cmp.Or(req.SrcPort, srcPort), DPort: req.Port, ICMPType: req.ICMPType,
		ICMPCode: req.ICMPCode, ICMPID: 1, ID: 1}
}
