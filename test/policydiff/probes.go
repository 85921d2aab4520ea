package policydiff

import (
	"fmt"
	"net/netip"

	"github.com/calico-host/calico-host/pkg/api"
)

// Probe is one packet sent from one namespace to another.
type Probe struct {
	Packet
	From, To  string // slot name or "outside"
	Want      bool   // the evaluator's verdict
	Trace     []string
	Decisions []Decision
}

const outside = "outside"

// Harness objects: a first tier (order 1, default Pass) with
//
//   - "control": allows UDP to port 9 (a port no random rule or probe uses) for every endpoint,
//     or only for the sentinels; it gives every path a packet known to pass, sent after the
//     probes, after which a probe still missing counts as dropped;
//
//   - "sentinel": lets the sentinel workloads exchange UDP to this scenario's sentinel port and
//     nothing else, so that a sentinel packet arriving proves felix has applied the scenario.
//
//   - "hep", when this node has a "*" host endpoint, whose forward policy meets the traffic
//     between the sentinels too: applyOnForward, for that endpoint only (hep == 'all'), it
//     allows UDP between the sentinels' addresses and UDP to the control port. (Only then: an
//     endpoint that no applyOnForward policy selects allows forwarded traffic, a case the
//     uplink's endpoint keeps.)
//
// A tier whose policies do not decide passes on, so these objects change no random verdict;
// the evaluator sees them like every other object anyway.
const (
	controlTier = "aaa-ctl"
	controlPort = 9
)

func sentinelPort(scenario int) uint16 { return uint16(10000 + scenario%50000) }

func allowUDP(ports ...uint16) []api.Rule {
	var ps []api.Port
	for _, p := range ports {
		ps = append(ps, api.SinglePort(p))
	}
	return []api.Rule{{Action: api.ActionAllow, Protocol: protocolp("UDP"), Destination: api.EntityRule{Ports: ps}}}
}

func protocolp(name string) *api.Protocol {
	p := api.ProtocolFromString(name)
	return &p
}

// sentinelIngress lets only this scenario's sentinel port in (and, through the control policy
// before it, the control port): the random policies, which may well select the sentinels, must
// never let an older or newer sentinel packet through.
func sentinelIngress(scenario int) []api.Rule {
	return append(allowUDP(sentinelPort(scenario)), api.Rule{Action: api.ActionDeny})
}

// addHarnessObjects adds the control tier and the sentinel endpoints to a universe.
func addHarnessObjects(u *Universe, scenario int, controlAll bool) {
	u.Tiers = append(u.Tiers, tier(controlTier, floatp(1), api.ActionPass))
	sel := "all()"
	if !controlAll {
		sel = "has(sentinel)"
	}
	gnp := func(name string, order float64, sel string, in, out []api.Rule) *api.GlobalNetworkPolicy {
		return &api.GlobalNetworkPolicy{TypeMeta: api.TypeMeta{Kind: "GlobalNetworkPolicy", APIVersion: api.APIVersion},
			ObjectMeta: policyMeta(controlTier+"."+name, "", controlTier),
			Spec: api.GlobalNetworkPolicySpec{Tier: controlTier, Order: floatp(order), Selector: sel,
				Types: []string{api.PolicyTypeIngress, api.PolicyTypeEgress}, Ingress: in, Egress: out}}
	}
	u.GNPs = append(u.GNPs,
		gnp("control", 1, sel, allowUDP(controlPort), allowUDP(controlPort)),
		gnp("sentinel", 2, "has(sentinel)", sentinelIngress(scenario), []api.Rule{{Action: api.ActionAllow}}))
	if hasAllInterfacesEndpoint(u) {
		var nets []string
		for _, s := range sentinelSlots() {
			nets = append(nets, s.V4.String()+"/32", s.V6.String()+"/128")
		}
		rules := append(allowUDP(controlPort), api.Rule{Action: api.ActionAllow, Protocol: protocolp("UDP"),
			Source: api.EntityRule{Nets: nets}, Destination: api.EntityRule{Nets: nets}})
		hep := gnp("hep", 3, "hep == 'all'", rules, rules)
		hep.Spec.ApplyOnForward = true
		u.GNPs = append(u.GNPs, hep)
	}
	for _, s := range sentinelSlots() {
		u.WEPs = append(u.WEPs, s.wep("sentinel", map[string]string{"sentinel": "yes"}, nil, nil))
	}
}

// hasAllInterfacesEndpoint reports whether this node has a "*" host endpoint.
func hasAllInterfacesEndpoint(u *Universe) bool {
	for _, h := range u.HEPs {
		if h.Spec.Node == u.Node && h.Spec.InterfaceName == "*" {
			return true
		}
	}
	return false
}

// outsideAddrs are addresses the outside sends from and receives for: remote workloads, network
// set members and plain outside addresses.
var outsideAddrs = map[int][]netip.Addr{
	4: addrs("10.65.200.1", "10.65.200.2", "10.65.200.9", "198.19.1.5", "198.19.2.7", "198.19.77.1"),
	6: addrs("fd5c:1:200::1", "fd5c:1:200::2", "fd5c:1:200::9", "fd5c:e:1::5", "fd5c:e:2::7", "fd5c:e:77::1"),
}

func addrs(s ...string) []netip.Addr {
	var out []netip.Addr
	for _, a := range s {
		out = append(out, netip.MustParseAddr(a))
	}
	return out
}

var dstPorts = []uint16{80, 443, 8080, 8443, 8050, 53, 9000, 9001, 22, 5003, 5010}

// probeGen draws packets and keeps every conntrack tuple of a scenario distinct.
type probeGen struct {
	*gen
	seen  map[string]bool
	sport uint16
}

func (g *probeGen) endpointPair() (from, to string, src, dst netip.Addr) {
	fam := 4 + 2*g.r.IntN(2)
	locals := localSlots()
	i := g.r.IntN(len(locals))
	j := (i + 1 + g.r.IntN(len(locals)-1)) % len(locals)
	switch n := g.r.IntN(4); {
	case n < 2:
		return locals[i].Name, locals[j].Name, locals[i].addr(fam), locals[j].addr(fam)
	case n == 2:
		o := outsideAddrs[fam]
		return locals[i].Name, outside, locals[i].addr(fam), o[g.r.IntN(len(o))]
	default:
		o := outsideAddrs[fam]
		return outside, locals[j].Name, o[g.r.IntN(len(o))], locals[j].addr(fam)
	}
}

func (g *probeGen) ephemeral() uint16 {
	g.sport++
	return g.sport
}

// probe draws one packet with a fresh conntrack tuple.
func (g *probeGen) probe() Probe {
	for {
		from, to, src, dst := g.endpointPair()
		p := Packet{Src: src, Dst: dst}
		switch n := g.r.IntN(100); {
		case n < 30:
			p.Proto = protoTCP
		case n < 60:
			p.Proto = protoUDP
		case n < 78:
			p.Proto = p.icmpProto()
		case n < 88:
			p.Proto = protoSCTP
		case n < 95:
			p.Proto = 253
		default:
			p.Proto = protoIPIP
		}
		g.fillPorts(&p)
		if p.Proto == p.icmpProto() {
			return Probe{Packet: p, From: from, To: to} // the ICMP identifier is the tag: a fresh tuple
		}
		// Neither this tuple nor its reverse may have been used: a packet matching an earlier
		// connection (or the reply direction of one) is not NEW and skips policy.
		key := fmt.Sprint(p.Src, p.Dst, p.Proto, p.SrcPort, p.DstPort)
		rev := fmt.Sprint(p.Dst, p.Src, p.Proto, p.DstPort, p.SrcPort)
		if g.seen[key] || g.seen[rev] {
			continue
		}
		g.seen[key], g.seen[rev] = true, true
		return Probe{Packet: p, From: from, To: to}
	}
}

func (g *probeGen) fillPorts(p *Packet) {
	switch {
	case p.hasPorts():
		p.DstPort = dstPorts[g.r.IntN(len(dstPorts))]
		if g.chance(0.15) {
			p.DstPort = uint16(1024 + g.r.IntN(60000))
		}
		if p.Proto == protoUDP && g.chance(0.05) {
			p.DstPort = 4789
		}
		p.SrcPort = g.ephemeral()
		if g.chance(0.3) {
			p.SrcPort = []uint16{53, 80, 9000, 5001, 8080}[g.r.IntN(5)]
		}
	case p.Proto == protoICMP:
		p.ICMPType = []uint8{8, 8, 13}[g.r.IntN(3)]
		p.ICMPCode = []uint8{0, 0, 1}[g.r.IntN(3)]
	case p.Proto == protoICMPv6:
		p.ICMPType = []uint8{128, 128, 139}[g.r.IntN(3)]
		p.ICMPCode = []uint8{0, 0, 1}[g.r.IntN(3)]
	}
}
