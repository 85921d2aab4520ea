package sim_test

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/sim"
)

// probesPerRound is how many probes each ruleset gets (replies come on
// top).
const probesPerRound = 40

// Where probes come from and go to: the hosts behind each side (and a
// spoofed one from the other side), the dut's addresses, hosts without a
// route.
var (
	sources4 = map[string][]string{"a0": {"10.65.1.1", "10.65.1.4", "10.65.1.7", "198.18.1.2", "10.65.2.5", "10.66.0.1"},
		"b0": {"10.65.2.3", "10.65.2.5", "198.18.2.2", "10.65.1.4"}, "": {"198.18.1.1", "198.18.2.1", "198.18.1.1", "10.65.1.4"}}
	sources6 = map[string][]string{"a0": {"fd5c:a::1", "fd5c:a::4", "fd5c:a::7", "fd5c:1::2", "fd5c:b::5", "fd5c:ff::1"},
		"b0": {"fd5c:b::3", "fd5c:b::5", "fd5c:2::2", "fd5c:a::4"}, "": {"fd5c:1::1", "fd5c:2::1", "fd5c:1::1", "fd5c:a::4"}}
	dests4 = []string{"198.18.1.1", "198.18.2.1", "10.65.2.3", "10.65.2.5", "10.65.1.7", "198.18.2.2", "10.66.0.1"}
	dests6 = []string{"fd5c:1::1", "fd5c:2::1", "fd5c:b::3", "fd5c:b::5", "fd5c:a::7", "fd5c:2::2", "fd5c:ff::1"}
)

func (h *harness) id() uint16 {
	h.nextID++
	if h.nextID == 0 {
		h.nextID++
	}
	return h.nextID
}

// probes draws a round of probes: received on a0 or b0, sent by the dut,
// ARP; each the first packet of its own connection.
func (h *harness) probes(g *gen, rs *sim.Ruleset, used tuples) []*probe {
	var out []*probe
	for range probesPerRound {
		switch n := g.n(10); {
		case n == 0:
			out = append(out, h.arpProbe(g))
		case n <= 3:
			out = append(out, h.newConn(g, rs, "", used))
		case n <= 4:
			out = append(out, h.newConn(g, rs, "b0", used))
		default:
			out = append(out, h.newConn(g, rs, "a0", used))
		}
	}
	return out
}

// tuples are the conntrack tuples (both directions) of the round's
// connections.
type tuples map[string]bool

// newConn draws a probe that starts a connection of its own: its tuple,
// and its reply tuple after the NAT the simulator predicts, clash with no
// other (conntrack would take it for a packet of that connection, or drop
// it when it confirms it).
func (h *harness) newConn(g *gen, rs *sim.Ruleset, side string, used tuples) *probe {
	for {
		p := h.ipProbe(g, side)
		in := sim.Input{Packet: p.pk, Mark: p.mark, CT: sim.Conntrack{State: nft.CTStateNew}, FIB: h.fib}
		if side != "" {
			in.IIF = h.iface(side)
		}
		res, err := rs.Run(in)
		after := p.pk
		if err == nil {
			after = res.Packet
		}
		orig, reply := connTuple(p.pk, false), connTuple(after, true)
		if !used[orig] && !used[reply] {
			used[orig], used[reply] = true, true
			return p
		}
	}
}

// connTuple is a packet's conntrack tuple (reversed for the reply
// direction): addresses, protocol, and the ports or echo identifier of
// the protocols that have them (generic protocols have none).
func connTuple(pk sim.Packet, reverse bool) string {
	src, dst := addrsOf(pk)
	off := 20
	if pk.Proto == unix.ETH_P_IPV6 {
		off = 40
	}
	proto := pk.Network[9]
	if pk.Proto == unix.ETH_P_IPV6 {
		proto = pk.Network[6]
	}
	l4 := pk.Network[off:]
	var sp, dp []byte
	switch proto {
	case nft.ProtoTCP, nft.ProtoUDP, nft.ProtoUDPLite, nft.ProtoSCTP:
		sp, dp = l4[0:2], l4[2:4]
	case nft.ProtoICMP, nft.ProtoICMPv6:
		sp, dp = l4[4:6], l4[4:6]
	}
	if reverse {
		src, dst, sp, dp = dst, src, dp, sp
	}
	return fmt.Sprint(src, dst, proto, sp, dp)
}

func (h *harness) ipProbe(g *gen, side string) *probe {
	v := pick(g, []nft.IPVersion{nft.IPv4, nft.IPv6})
	srcs, dsts := sources4[side], dests4
	if v == nft.IPv6 {
		srcs, dsts = sources6[side], dests6
	}
	s := sim.IPSpec{Src: a(pick(g, srcs)), Dst: a(pick(g, dsts)), TOS: probeDSCP, TTL: probeTTL, ID: h.id(), ICMPID: uint16(g.n(65536))}
	s.Proto = pick(g, []uint8{nft.ProtoTCP, nft.ProtoTCP, nft.ProtoUDP, nft.ProtoUDP, icmpProto(v), nft.ProtoSCTP, nft.ProtoUDPLite, 253})
	s.DPort, s.SPort = g.port(), uint16(20000+g.n(40000))
	if g.chance(0.3) {
		s.SPort = g.port()
	}
	switch {
	case s.Proto == nft.ProtoTCP && g.chance(0.1):
		s.TCPFlags = 0x03 // SYN and FIN: conntrack calls it invalid
	case s.Proto == icmpProto(v) && g.chance(0.15):
		s.ICMPType = echoTypes(v)[1] // a reply without a request: invalid
	case s.Proto == 253:
		s.Payload = []byte{0, 53, 0, 80, 1, 2, 3, 4}
	}
	return h.ipPacket(s, side, pick(g, []uint32{0, 0, 0x10, 0x10000}))
}

func (h *harness) ipPacket(s sim.IPSpec, side string, mark uint32) *probe {
	pk, err := sim.IPPacket(s)
	if err != nil {
		panic(err)
	}
	p := &probe{pk: pk, side: side, spec: s, key: packetKey{unix.NFPROTO_IPV4, uint32(s.ID)}}
	if s.Src.Is6() {
		p.key.nfproto = unix.NFPROTO_IPV6
	}
	if side != "" {
		p.pk.Link = h.linkHeader(side, pk.Proto)
	} else {
		p.mark = mark
	}
	return p
}

// reply answers a UDP or ICMP echo probe from the other side.
func (h *harness) reply(p *probe) *probe {
	s := p.spec
	switch {
	case s.Proto == nft.ProtoUDP:
	case (s.Proto == nft.ProtoICMP || s.Proto == nft.ProtoICMPv6) && s.ICMPType == 0:
		s.ICMPType = echoTypes(nft.IPv4)[1]
		if s.Src.Is6() {
			s.ICMPType = echoTypes(nft.IPv6)[1]
		}
	default:
		return nil
	}
	s.Src, s.Dst, s.SPort, s.DPort, s.ID = s.Dst, s.Src, s.DPort, s.SPort, h.id()
	r := h.ipPacket(s, "b0", 0)
	r.reply = true
	return r
}

func (h *harness) arpProbe(g *gen) *probe {
	id := h.id()
	pk, err := sim.ARPPacket(sim.ARPSpec{Op: uint16(1 + g.n(2)), SenderMAC: arpMAC(id), SenderIP: a(pick(g, []string{"198.18.1.2", "10.65.1.4", "198.18.1.7"})),
		TargetIP: a(pick(g, []string{"198.18.1.1", "198.18.2.1", "198.18.1.9"}))})
	if err != nil {
		panic(err)
	}
	pk.Link = h.linkHeader("a0", pk.Proto)
	return &probe{pk: pk, side: "a0", key: packetKey{unix.NFPROTO_ARP, uint32(id)}}
}
