package rules

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/nft"
)

// errNoMatch means a rule can never match in the table of one IP version (for example, every
// source net of the rule is IPv6 and this is the ip table); it is left out of that table
// silently.
var errNoMatch = errors.New("matches nothing in this family")

// matcher builds the matches of a calc rule in the table of one IP version, in Calico's order:
// protocol, source net, set, ports and named ports, the same for the destination, ICMP, then
// the negated forms. Lists are OR (nets, ports, named-port sets) or AND (IP sets) as calc
// defines; an OR of named-port sets is computed into a scratch mark bit by rules that run
// before the main rule.
type matcher struct {
	cfg     *Config
	r       *calc.Rule
	fam     nft.IPVersion
	pre     []nft.Rule
	matches []choice
	sets    []SetUse
	err     error
}

func (m *matcher) add(x ...nft.Expr) {
	for _, e := range x {
		m.matches = append(m.matches, choice{whole: e})
	}
}

func (m *matcher) fail(err error) {
	if m.err == nil {
		m.err = err
	}
}

// build returns the variant's pre-rules and its match lists (one per rule).
func (m *matcher) build() ([]nft.Rule, [][]nft.Expr, error) {
	m.protocol()
	m.side(false)
	m.side(true)
	m.icmp(m.r.ICMP, false)
	m.notSide(false)
	m.notSide(true)
	m.icmp(m.r.NotICMP, true)
	if m.err != nil {
		return nil, nil, m.err
	}
	return m.pre, expand(m.matches), nil
}

func (m *matcher) protocol() {
	r := m.r
	switch {
	case r.Protocol == nft.ProtoICMP && m.fam == nft.IPv6, r.Protocol == nft.ProtoICMPv6 && m.fam == nft.IPv4:
		m.fail(errNoMatch)
	case r.Protocol != 0 && !m.l4Implied():
		m.add(nft.L4Proto(r.Protocol))
	}
	if r.NotProtocol != 0 {
		m.add(nft.Not(nft.L4Proto(r.NotProtocol)))
	}
}

// l4Implied reports whether a later match reads the transport header of the rule's protocol
// (ports, a named-port lookup, an ICMP type), which implies the protocol: the rule then has no
// separate protocol match, as it reads back from the kernel (canonical form).
func (m *matcher) l4Implied() bool {
	r := m.r
	if hasPortKeyword(r.Protocol) {
		ports := len(r.SrcPorts) + len(r.DstPorts) + len(r.NotSrcPorts) + len(r.NotDstPorts)
		named := len(r.NotSrcNamedPortIPSetIDs) + len(r.NotDstNamedPortIPSetIDs)
		if ports+named > 0 || len(r.SrcNamedPortIPSetIDs) == 1 || len(r.DstNamedPortIPSetIDs) == 1 {
			return true
		}
	}
	return r.Protocol == icmpProto(m.fam) && (r.ICMP != nil || r.NotICMP != nil)
}

// hasPortKeyword reports whether nft reads the ports of protocol p by name (tcp dport...).
func hasPortKeyword(p uint8) bool {
	return p == nft.ProtoTCP || p == nft.ProtoUDP || p == nft.ProtoSCTP || p == nft.ProtoUDPLite
}

// side adds the positive matches of the source or destination.
func (m *matcher) side(dst bool) {
	nets, sets, ports, named := m.r.SrcNets, m.r.SrcIPSetIDs, m.r.SrcPorts, m.r.SrcNamedPortIPSetIDs
	if dst {
		nets, sets, ports, named = m.r.DstNets, m.r.DstIPSetIDs, m.r.DstPorts, m.r.DstNamedPortIPSetIDs
	}
	if len(nets) > 0 {
		fnets := disjointNets(m.familyNets(nets))
		switch {
		case len(fnets) == 0:
			m.fail(errNoMatch)
			return
		case !fnets[0].IsValid() || fnets[0].Bits() != 0: // a valid /0 (then alone) is every address of the table: no match; anything invalid fails closed in addrIn
			c := choice{whole: addrIn(dst, fnets)}
			for _, n := range fnets {
				c.alts = append(c.alts, one(addrIn(dst, []netip.Prefix{n}))...)
			}
			m.matches = append(m.matches, c)
		}
	}
	for _, id := range sets {
		m.add(nft.InSet(m.useSet(id), addrField(dst, m.fam)))
	}
	if len(ports) > 0 {
		c := choice{whole: m.portMatch(dst, ports)}
		for _, r := range disjointPorts(ports) {
			c.alts = append(c.alts, one(m.portMatch(dst, []calc.PortRange{{First: r.First, Last: r.Last}}))...)
		}
		m.matches = append(m.matches, c)
	}
	m.namedPorts(dst, named)
}

// notSide adds the negated matches of the source or destination: in none of the nets, sets,
// ports or named-port sets.
func (m *matcher) notSide(dst bool) {
	nets, sets, ports, named := m.r.NotSrcNets, m.r.NotSrcIPSetIDs, m.r.NotSrcPorts, m.r.NotSrcNamedPortIPSetIDs
	if dst {
		nets, sets, ports, named = m.r.NotDstNets, m.r.NotDstIPSetIDs, m.r.NotDstPorts, m.r.NotDstNamedPortIPSetIDs
	}
	if len(nets) > 0 {
		// As Project Calico's felix (rules.FilterRuleToIPVersion): a negated list with no net of
		// this version, or with the version's whole address space (then alone once disjoint),
		// leaves the rule out of its table.
		fnets := disjointNets(m.familyNets(nets))
		if len(fnets) == 0 || fnets[0].Bits() == 0 {
			m.fail(errNoMatch)
			return
		}
		m.add(nft.Not(addrIn(dst, fnets)))
	}
	for _, id := range sets {
		m.add(nft.Not(nft.InSet(m.useSet(id), addrField(dst, m.fam))))
	}
	if len(ports) > 0 {
		m.add(nft.Not(m.portMatch(dst, ports)))
	}
	for _, id := range named {
		m.add(nft.Not(nft.InSet(m.useNamedPortSet(id), namedPortFields(dst, m.fam, m.r.Protocol)...)))
	}
}

// namedPorts matches a list of named-port sets: directly for one, through a scratch bit (set
// by one pre-rule per set) for several.
func (m *matcher) namedPorts(dst bool, ids []string) {
	switch len(ids) {
	case 0:
		return
	case 1:
		m.add(nft.InSet(m.useNamedPortSet(ids[0]), namedPortFields(dst, m.fam, m.r.Protocol)...))
		return
	}
	bit := m.cfg.Marks.Scratch0
	if dst {
		bit = m.cfg.Marks.Scratch1
	}
	m.pre = append(m.pre, rule(clearBits(bit)))
	for _, id := range ids {
		m.pre = append(m.pre, rule(nft.InSet(m.useNamedPortSet(id), namedPortFields(dst, m.fam, 0)...), setBits(bit)))
	}
	m.add(isSet(bit))
}

func (m *matcher) portMatch(dst bool, ports []calc.PortRange) nft.Match {
	proto := m.r.Protocol
	switch proto {
	case nft.ProtoTCP, nft.ProtoUDP, nft.ProtoSCTP, nft.ProtoUDPLite:
	default:
		m.fail(fmt.Errorf("port match needs protocol tcp, udp, sctp or udplite, rule has %d", proto))
		return nft.L4Proto(0)
	}
	rs := make([]nft.PortRange, len(ports))
	for i, p := range ports {
		rs[i] = nft.Ports(p.First, p.Last)
	}
	if dst {
		return nft.DPort(proto, rs...)
	}
	return nft.SPort(proto, rs...)
}

// icmp adds an ICMP or ICMPv6 type (and code) match, or its negation. Both forms match only
// ICMP packets of the variant's family (ICMPv6 for IPv6), as Project Calico's dataplanes do.
// The negation of a type and code is "not (this type and this code)", the meaning of Calico's
// iptables (`-m icmp ! --icmp-type T/C`) and BPF dataplanes: it is rendered as two disjoint
// rules, "type != T" and "type T, code != C".
func (m *matcher) icmp(ic *calc.ICMPMatch, neg bool) {
	if ic == nil {
		return
	}
	if want := icmpProto(m.fam); m.r.Protocol != 0 && m.r.Protocol != want {
		m.fail(fmt.Errorf("ICMP type match with protocol %d", m.r.Protocol))
		return
	}
	typ := nft.ICMPType(m.fam, ic.Type)
	switch {
	case !neg:
		m.add(typ)
		if ic.Code != nil {
			m.add(nft.ICMPCode(m.fam, *ic.Code))
		}
	case ic.Code == nil:
		m.add(nft.Not(typ))
	default:
		m.matches = append(m.matches, choice{alts: [][]nft.Expr{
			{nft.Not(typ)},
			{typ, nft.Not(nft.ICMPCode(m.fam, *ic.Code))},
		}})
	}
}

// familyNets keeps the nets of the matcher's version (IPv4-mapped ones as IPv4 nets).
func (m *matcher) familyNets(nets []netip.Prefix) []netip.Prefix {
	var out []netip.Prefix
	for _, n := range nets {
		if fam, p := prefixFamily(n); fam == m.fam {
			out = append(out, p)
		}
	}
	return out
}

func (m *matcher) useSet(id string) string {
	m.sets = append(m.sets, SetUse{ID: id})
	return SetName(m.fam, id)
}

// useNamedPortSet is useSet for a named-port set (address . protocol . port).
func (m *matcher) useNamedPortSet(id string) string {
	m.sets = append(m.sets, SetUse{ID: id, NamedPort: true})
	return SetName(m.fam, id)
}

// addrIn matches an address against nets (of one version, none a /0): a comparison for one
// net, an anonymous set for more.
func addrIn(dst bool, nets []netip.Prefix) nft.Match {
	if dst {
		return nft.DAddrIn(nets...)
	}
	return nft.SAddrIn(nets...)
}

func addrField(dst bool, f nft.IPVersion) nft.Field {
	if dst {
		return nft.FieldDAddr(f)
	}
	return nft.FieldSAddr(f)
}

// namedPortFields is the key of a named-port set lookup: address . protocol . port. The port
// is that of proto when the rule has a protocol with port keywords (which implies it: `tcp
// dport`), else of any transport header (`th dport`).
func namedPortFields(dst bool, f nft.IPVersion, proto uint8) []nft.Field {
	if !hasPortKeyword(proto) {
		proto = 0
	}
	if dst {
		return []nft.Field{nft.FieldDAddr(f), nft.FieldL4Proto, nft.FieldDPort(proto)}
	}
	return []nft.Field{nft.FieldSAddr(f), nft.FieldL4Proto, nft.FieldSPort(proto)}
}

func icmpProto(f nft.IPVersion) uint8 {
	if f == nft.IPv6 {
		return nft.ProtoICMPv6
	}
	return nft.ProtoICMP
}

// versionOf is the IP version of an address (IPv4-mapped addresses are IPv4).
func versionOf(a netip.Addr) nft.IPVersion {
	if a.Is4() || a.Is4In6() {
		return nft.IPv4
	}
	return nft.IPv6
}
