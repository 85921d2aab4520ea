package rules

import (
	"slices"
	"strings"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/nft"
)

// HostIface is a host endpoint resolved to one of this host's interfaces, or to "*" (all
// interfaces).
type HostIface struct {
	Iface string
	EP    *calc.HostEndpoint
}

// AllInterfaces is the interface name of a host endpoint that applies to every interface.
const AllInterfaces = "*"

// chainIface is the interface part of a host endpoint chain's name: the interface name, or
// ":all" for AllInterfaces (Calico's "*" is not a valid nft name; ':' is not valid in an
// interface name, so no interface can have that chain).
func chainIface(iface string) string {
	if iface == AllInterfaces {
		return ":all"
	}
	return iface
}

// HostDispatch says which kinds of host endpoint policy are in use, so that the static chains
// jump to the matching dispatch chains, and which failsafe chains the endpoint chains use.
type HostDispatch struct {
	Normal, Forward, Untracked, PreDNAT bool
	Failsafes                           []string
}

type hepCategory uint8

const (
	catNormal hepCategory = iota
	catForward
	catUntracked
	catPreDNAT
)

// hepChain describes one kind of host endpoint chain: where it lives, how traffic reaches it
// and which of the endpoint's policies it evaluates.
type hepChain struct {
	cat      hepCategory
	layer    Layer
	prefix   string // per-interface chain prefix
	dispatch string // dispatch chain (and map) it is reached from
	out      bool   // dispatched on the output interface
	kind     chainKind
	egress   bool
	failsafe string
}

// hepChains is every host endpoint chain Calico renders (rules/endpoints.go, endpoint_mgr.go):
// normal policy in filter (both directions) and in mangle (egress of DNATed host traffic),
// applyOnForward policy in filter, doNotTrack policy in raw, preDNAT policy in mangle.
var hepChains = []hepChain{
	{catNormal, Filter, prefixFromHost, chainFromHost, false, kindNormal, false, chainFailsafeIn},
	{catNormal, Filter, prefixToHost, chainToHost, true, kindNormal, true, chainFailsafeOut},
	{catNormal, Mangle, prefixToHost, chainToHost, true, kindNormal, true, chainFailsafeOut},
	{catForward, Filter, prefixFromHostFwd, chainFromHostFwd, false, kindForward, false, ""},
	{catForward, Filter, prefixToHostFwd, chainToHostFwd, true, kindForward, true, ""},
	{catUntracked, Raw, prefixFromHost, chainFromHost, false, kindUntracked, false, chainFailsafeIn},
	{catUntracked, Raw, prefixToHost, chainToHost, true, kindUntracked, true, chainFailsafeOut},
	{catPreDNAT, Mangle, prefixFromHost, chainFromHost, false, kindPreDNAT, false, chainFailsafeIn},
}

// tiersOf returns the endpoint's policies for a category, nil when it takes no part in it.
func tiersOf(ep *calc.HostEndpoint, c hepCategory) ([]calc.TierInfo, bool) {
	switch c {
	case catForward:
		// Every host endpoint has forward chains, as in Project Calico: without applyOnForward
		// policy they allow forwarded traffic (kindForward), so that a "*" endpoint's forward
		// policy does not apply to the interfaces of other host endpoints.
		return ep.ForwardTiers, true
	case catUntracked:
		return ep.UntrackedTiers, len(ep.UntrackedTiers) > 0
	case catPreDNAT:
		return ep.PreDNATTiers, len(ep.PreDNATTiers) > 0
	}
	return ep.Tiers, true
}

// hostDispatch collects the dispatch of one (layer, dispatch chain).
type hostDispatch struct {
	hc       hepChain
	elements map[nft.Key]nft.Verdict
	all      string // chain of the "*" endpoint, if any
}

// HostEndpoints renders the chains of the resolved host endpoints (the same in the tables of
// both IP versions) with their dispatch chains and verdict maps. The HostDispatch says which
// kinds of dispatch the static chains must call and which failsafe chains the endpoint chains
// jump to (StaticChains renders those, per IP version). g splits each tier's policies into
// groups.
func HostEndpoints(cfg *Config, heps []HostIface, g Grouper) (Endpoint, []*nft.Map, HostDispatch) {
	heps = slices.Clone(heps)
	slices.SortFunc(heps, func(a, b HostIface) int { return strings.Compare(a.Iface, b.Iface) })
	var out Endpoint
	var hd HostDispatch
	dispatch := map[string]*hostDispatch{}
	failsafes := map[string]bool{}
	for _, h := range heps {
		for _, hc := range hepChains {
			tiers, ok := tiersOf(h.EP, hc.cat)
			if !ok || hc.cat == catUntracked && h.Iface == AllInterfaces {
				continue // Project Calico ignores doNotTrack policy of a "*" endpoint
			}
			name := hc.layer.Name(hc.prefix + chainIface(h.Iface))
			spec := chainSpec{name: name, layer: hc.layer, kind: hc.kind, egress: hc.egress, tiers: tiers, group: g}
			if hc.kind == kindNormal {
				spec.profiles = h.EP.ProfileIDs
			}
			if hc.failsafe != "" {
				spec.failsafe = hc.layer.Name(hc.failsafe)
				failsafes[spec.failsafe] = true
			}
			out.add(endpointChain(cfg, spec))
			addDispatch(dispatch, hc, h.Iface, name)
			hd.set(hc.cat)
		}
	}
	var maps []*nft.Map
	for _, key := range sortedKeys(dispatch) {
		c, m := dispatch[key].render(cfg)
		out.Chains = append(out.Chains, c)
		maps = append(maps, m)
	}
	hd.Failsafes = sortedKeys(failsafes)
	return out, maps, hd
}

func (hd *HostDispatch) set(c hepCategory) {
	switch c {
	case catNormal:
		hd.Normal = true
	case catForward:
		hd.Forward = true
	case catUntracked:
		hd.Untracked = true
	case catPreDNAT:
		hd.PreDNAT = true
	}
}

func addDispatch(m map[string]*hostDispatch, hc hepChain, iface, chain string) {
	key := hc.layer.Name(hc.dispatch)
	d := m[key]
	if d == nil {
		d = &hostDispatch{hc: hc, elements: map[nft.Key]nft.Verdict{}}
		m[key] = d
	}
	if iface == AllInterfaces {
		d.all = chain
		return
	}
	d.elements[nft.IfnameKey(iface)] = nft.Goto(chain)
}

// render returns the dispatch chain and its map. Packets of interfaces without an endpoint
// go to the "*" endpoint if there is one, else return. Outbound, packets to workloads skip the
// "*" endpoint's normal and untracked policy, but not its applyOnForward policy: Project
// Calico's forward dispatch has no such skip, so forwarded traffic to a local workload meets
// the "*" endpoint's forward egress policy.
func (d *hostDispatch) render(cfg *Config) (*nft.Chain, *nft.Map) {
	name := d.hc.layer.Name(d.hc.dispatch)
	m := &nft.Map{Name: name, Type: nft.TypeIfname, Elements: d.elements}
	var tail []nft.Rule
	if d.all != "" {
		if d.hc.out && d.hc.cat != catForward {
			tail = append(tail, rule(workloadIface(cfg, true), nft.Return()).
				WithComment("Skip egress host endpoint policy for traffic to local workloads"))
		}
		tail = append(tail, rule(nft.Goto(d.all)))
	}
	return dispatchChain(name, name, d.hc.out, tail...), m
}

// failsafeChain renders a failsafe chain for the table of version v. Inbound failsafes match
// the destination port of incoming packets (and their source network), outbound ones the
// destination port of outgoing packets (and their destination network): one set lookup for
// the ports without a network, one for those with one. Untracked traffic has no conntrack to
// let replies through, so the raw chains also accept the other direction's ports as source
// ports.
func failsafeChain(cfg *Config, v nft.IPVersion, name string) *nft.Chain {
	in := strings.HasSuffix(name, chainFailsafeIn)
	ports, reverse := cfg.FailsafeOut, cfg.FailsafeIn
	if in {
		ports, reverse = cfg.FailsafeIn, cfg.FailsafeOut
	}
	rs := failsafeRules(v, ports, !in, false)
	if strings.HasPrefix(name, string(Raw)+"-") {
		rs = append(rs, failsafeRules(v, reverse, !in, true)...)
	}
	return &nft.Chain{Name: name, Rules: rs}
}

// failsafeRules accept the protocol and port of each pp of version v (or of no network), as
// destination port (or source port), with the remote address in pp.Net when set (remote =
// destination when remoteIsDst).
func failsafeRules(v nft.IPVersion, pps []ProtoPort, remoteIsDst, sport bool) []nft.Rule {
	port, addr := nft.FieldDPort(0), nft.FieldSAddr(v)
	if sport {
		port = nft.FieldSPort(0)
	}
	if remoteIsDst {
		addr = nft.FieldDAddr(v)
	}
	var anyNet, withNet []nft.Element
	for _, pp := range pps {
		key := nft.ConcatElem(nft.ProtoKey(pp.Protocol).Elem(), nft.PortElem(pp.Port))
		switch {
		case !pp.Net.IsValid():
			anyNet = append(anyNet, key)
		default:
			if fam, p := prefixFamily(pp.Net); fam == v {
				withNet = append(withNet, nft.ConcatElem(nft.PrefixElem(p), key))
			}
		}
	}
	var rs []nft.Rule
	if len(anyNet) > 0 {
		rs = append(rs, rule(nft.InList([]nft.Field{nft.FieldL4Proto, port}, anyNet...), nft.Counter(), nft.Accept()))
	}
	if len(withNet) > 0 {
		rs = append(rs, rule(nft.InList([]nft.Field{addr, nft.FieldL4Proto, port}, withNet...), nft.Counter(), nft.Accept()))
	}
	return rs
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
