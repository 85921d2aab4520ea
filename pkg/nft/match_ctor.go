package nft

import (
	"encoding/binary"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Equals matches when field f equals key k: the generic form of the
// comparisons below (Equals(FieldMark, MarkKey(1)) is `meta mark 0x00000001`).
func Equals(f Field, k Key) Match {
	if !f.valid() || k.Len() != f.info().size {
		return bad("%s: value of %d bytes", f, k.Len())
	}
	return cmpMatch{f: f, val: k.raw}
}

// L4Proto matches the transport protocol (`meta l4proto tcp`).
func L4Proto(p uint8) Match { return cmpMatch{f: FieldL4Proto, val: string([]byte{p})} }

// NFProto matches the packet's IP version (`meta nfproto ipv4`): how a rule
// of an inet table picks one version.
func NFProto(v IPVersion) Match {
	if !v.valid() {
		return bad("unknown IP version %d", v)
	}
	return cmpMatch{f: FieldNFProto, val: string([]byte{v.nfproto()})}
}

// IIFName matches the input interface's name; a trailing "*" makes it a
// prefix match (`iifname "cali*"`).
func IIFName(name string) Match { return ifnameMatch(FieldIIFName, name) }

// OIFName matches the output interface's name (trailing "*": prefix).
func OIFName(name string) Match { return ifnameMatch(FieldOIFName, name) }

func ifnameMatch(f Field, name string) Match {
	if err := validateIfname(name, true); err != nil || name == "" || name == "*" {
		return bad("invalid interface name %q", name)
	}
	if prefix, ok := strings.CutSuffix(name, "*"); ok {
		return cmpMatch{f: f, val: prefix}
	}
	return cmpMatch{f: f, val: IfnameKey(name).raw}
}

// validateIfname checks an interface name (or, with wildcard, a name
// ending in "*"): shorter than IFNAMSIZ, no NUL, '/', quote or whitespace.
func validateIfname(name string, wildcard bool) error {
	base := name
	if wildcard {
		base = strings.TrimSuffix(name, "*")
	}
	if len(base) >= ifnameSize || strings.ContainsAny(base, "\x00/\"*\\ \t\n") {
		return errInvalidIfname(name)
	}
	return nil
}

type errInvalidIfname string

func (e errInvalidIfname) Error() string { return "invalid interface name " + strconv.Quote(string(e)) }

// Mark matches the packet mark exactly (`meta mark 0x00000010`).
func Mark(value uint32) Match { return cmpMatch{f: FieldMark, val: MarkKey(value).raw} }

// MarkMasked matches `meta mark & mask == value`: test bits set with
// MarkMasked(bits, bits), clear with MarkMasked(bits, 0).
func MarkMasked(mask, value uint32) Match {
	if mask == ^uint32(0) {
		return Mark(value)
	}
	return maskMatch{f: FieldMark, mask: mask, val: value & mask}
}

// Host is the full-length prefix of a: SAddr(Host(a)) matches one address.
func Host(a netip.Addr) netip.Prefix { return netip.PrefixFrom(a, a.BitLen()) }

// SAddr matches the source address against a prefix (one address when it
// is full length); the IP version follows the prefix.
func SAddr(p netip.Prefix) Match { return addrMatch(fkSAddr, p) }

// DAddr matches the destination address against a prefix.
func DAddr(p netip.Prefix) Match { return addrMatch(fkDAddr, p) }

func addrMatch(kind fieldKind, p netip.Prefix) Match {
	if !p.IsValid() || p.Addr().Zone() != "" {
		return bad("invalid prefix %s", p)
	}
	f := Field{kind: kind, arg: uint8(versionOf(p.Addr()))}
	p = p.Masked()
	switch p.Bits() {
	case 0:
		return bad("prefix %s matches every %s packet; use NFProto", p, versionOf(p.Addr()))
	case p.Addr().BitLen():
		return cmpMatch{f: f, val: string(p.Addr().AsSlice())}
	}
	return prefixMatch{f: f, addr: string(p.Addr().AsSlice()), bits: uint8(p.Bits())}
}

func versionOf(a netip.Addr) IPVersion {
	if a.Is4() {
		return IPv4
	}
	return IPv6
}

// SAddrIn matches when the source address is in any of the prefixes (all
// of one IP version): `ip saddr { 10.0.0.0/8, 198.18.0.1 }`. Overlapping and
// adjacent prefixes are merged; a list that merges into one prefix is a
// plain comparison.
func SAddrIn(prefixes ...netip.Prefix) Match { return addrListMatch(fkSAddr, prefixes) }

// DAddrIn is SAddrIn for the destination address.
func DAddrIn(prefixes ...netip.Prefix) Match { return addrListMatch(fkDAddr, prefixes) }

func addrListMatch(kind fieldKind, prefixes []netip.Prefix) Match {
	if len(prefixes) == 0 || !prefixes[0].IsValid() {
		return bad("address list without addresses")
	}
	elems := make([]Element, len(prefixes))
	for i, p := range prefixes {
		elems[i] = PrefixElem(p)
	}
	return InList([]Field{{kind: kind, arg: uint8(versionOf(prefixes[0].Addr()))}}, elems...)
}

// PortRange is an inclusive range of ports.
type PortRange struct{ First, Last uint16 }

// Port is the range of port p alone.
func Port(p uint16) PortRange { return PortRange{p, p} }

// Ports is the range first-last.
func Ports(first, last uint16) PortRange { return PortRange{first, last} }

func (r PortRange) String() string {
	if r.First == r.Last {
		return strconv.Itoa(int(r.First))
	}
	return strconv.Itoa(int(r.First)) + "-" + strconv.Itoa(int(r.Last))
}

// SPort matches the source port of protocol proto (0: `th`, any protocol)
// against ports and ranges: one port is a comparison, one range a range
// match, several an anonymous set (`tcp sport { 22, 80, 1000-2000 }`).
func SPort(proto uint8, ports ...PortRange) Match { return portMatch(FieldSPort(proto), ports) }

// DPort matches the destination port; see SPort.
func DPort(proto uint8, ports ...PortRange) Match { return portMatch(FieldDPort(proto), ports) }

func portMatch(f Field, ports []PortRange) Match {
	elems := make([]Element, len(ports))
	for i, r := range ports {
		elems[i] = PortRangeElem(r.First, r.Last)
	}
	return InList([]Field{f}, elems...)
}

// InList matches when the fields, concatenated, are one of the elements: a
// lookup in an anonymous constant set created with the rule. The elements
// are sorted and merged; one single element becomes a comparison and one
// range a range (or prefix) match. Big lists are fine: the set's elements
// go to the kernel in as many messages as they need.
func InList(fields []Field, elems ...Element) Match {
	fl, ok := newFieldList(fields)
	if !ok {
		return bad("a list match needs 1 to %d fields", maxConcat)
	}
	for _, f := range fields {
		if !f.valid() {
			return bad("%v", f)
		}
	}
	t := fl.dataType()
	if !t.Valid() {
		return bad("%s cannot be looked up in a set", fl)
	}
	interval := anyRange(elems)
	norm, err := normalizeElements(t, interval, slices.Clone(elems)) // sorted in place: not the caller's
	if err != nil {
		return bad("%s: %v", fl, err)
	}
	if len(norm) == 0 {
		return bad("%s: empty list", fl)
	}
	if fl.n == 1 && len(norm) == 1 {
		return oneElementMatch(fields[0], norm[0])
	}
	return listMatch{fields: fl, interval: anyRange(norm), elems: packElements(norm)}
}

func anyRange(elems []Element) bool {
	for _, e := range elems {
		if e.IsRange() {
			return true
		}
	}
	return false
}

// oneElementMatch is the plain match for a list of one element.
func oneElementMatch(f Field, e Element) Match {
	lo, hi := e.Bounds()
	if !e.IsRange() {
		return cmpMatch{f: f, val: lo.raw}
	}
	if t := f.info().typ; t == btIPv4Addr || t == btIPv6Addr {
		if n, ok := prefixLen([]byte(lo.raw), []byte(hi.raw)); ok && n > 0 {
			return prefixMatch{f: f, addr: lo.raw, bits: uint8(n)}
		}
	}
	return rangeMatch{f: f, lo: lo.raw, hi: hi.raw}
}

// InSet matches when the fields, concatenated, are an element of the named
// set: InSet("s", FieldDAddr(IPv4), FieldL4Proto, FieldDPort(0)) is
// `ip daddr . meta l4proto . th dport @s`.
func InSet(set string, fields ...Field) Match {
	fl, ok := newFieldList(fields)
	if !ok {
		return bad("a set lookup needs 1 to %d fields", maxConcat)
	}
	return lookupMatch{fields: fl, set: set}
}

// SAddrInSet is `ip saddr @set` (ip6 for IPv6).
func SAddrInSet(v IPVersion, set string) Match { return InSet(set, FieldSAddr(v)) }

// DAddrInSet is `ip daddr @set` (ip6 for IPv6).
func DAddrInSet(v IPVersion, set string) Match { return InSet(set, FieldDAddr(v)) }

// IIFNameInSet is `iifname @set`.
func IIFNameInSet(set string) Match { return InSet(set, FieldIIFName) }

// OIFNameInSet is `oifname @set`.
func OIFNameInSet(set string) Match { return InSet(set, FieldOIFName) }

// ICMPType matches the ICMP (IPv4) or ICMPv6 (IPv6) type.
func ICMPType(v IPVersion, typ uint8) Match {
	if !v.valid() {
		return bad("unknown IP version %d", v)
	}
	return cmpMatch{f: FieldICMPType(v), val: string([]byte{typ})}
}

// ICMPCode matches the ICMP or ICMPv6 code; with ICMPType in the same rule
// it matches a type and code.
func ICMPCode(v IPVersion, code uint8) Match {
	if !v.valid() {
		return bad("unknown IP version %d", v)
	}
	return cmpMatch{f: FieldICMPCode(v), val: string([]byte{code})}
}

// ARPOp matches the ARP operation (`arp operation request`); arp tables only.
func ARPOp(op uint16) Match {
	return cmpMatch{f: FieldARPOp, val: string(binary.BigEndian.AppendUint16(nil, op))}
}

// ARPSAddrIP matches the sender protocol address (`arp saddr ip 198.18.0.1`).
func ARPSAddrIP(a netip.Addr) Match { return arpAddr(FieldARPSAddrIP, a) }

// ARPDAddrIP matches the target protocol address (`arp daddr ip ...`).
func ARPDAddrIP(a netip.Addr) Match { return arpAddr(FieldARPDAddrIP, a) }

func arpAddr(f Field, a netip.Addr) Match {
	if !a.Is4() {
		return bad("ARP address %s is not IPv4", a)
	}
	return cmpMatch{f: f, val: AddrKey(a).raw}
}

// EtherSAddr matches the source MAC address (`ether saddr ...`).
func EtherSAddr(mac net.HardwareAddr) Match { return etherMatch(FieldEtherSAddr, mac) }

// EtherDAddr matches the destination MAC address.
func EtherDAddr(mac net.HardwareAddr) Match { return etherMatch(FieldEtherDAddr, mac) }

// ARPSAddrEther matches the ARP sender hardware address.
func ARPSAddrEther(mac net.HardwareAddr) Match { return etherMatch(FieldARPSAddrEther, mac) }

func etherMatch(f Field, mac net.HardwareAddr) Match {
	if len(mac) != 6 {
		return bad("%s: %v is not an Ethernet address", f, mac)
	}
	return cmpMatch{f: f, val: string(mac)}
}

// CTState is a set of conntrack states.
type CTState uint32

// Conntrack states.
const (
	CTStateInvalid     CTState = 1
	CTStateEstablished CTState = 2
	CTStateRelated     CTState = 4
	CTStateNew         CTState = 8
	CTStateUntracked   CTState = 64
)

// CTStatus is a set of conntrack status bits.
type CTStatus uint32

// Conntrack status bits.
const (
	CTStatusExpected  CTStatus = 1
	CTStatusSeenReply CTStatus = 2
	CTStatusAssured   CTStatus = 4
	CTStatusConfirmed CTStatus = 8
	CTStatusSNAT      CTStatus = 16
	CTStatusDNAT      CTStatus = 32
	CTStatusDying     CTStatus = 512
)

type flagName struct {
	bit  uint32
	name string
}

var (
	ctStateNames = []flagName{
		{1, "invalid"}, {2, "established"}, {4, "related"}, {8, "new"}, {64, "untracked"},
	}
	ctStatusNames = []flagName{
		{1, "expected"}, {2, "seen-reply"}, {4, "assured"}, {8, "confirmed"},
		{16, "snat"}, {32, "dnat"}, {512, "dying"},
	}
)

// CTStateIn matches packets whose conntrack state is any of states, e.g.
// CTStateIn(CTStateEstablished|CTStateRelated); Not gives none of them.
func CTStateIn(states CTState) Match {
	if states == 0 || uint32(states)&^flagMask(ctStateNames) != 0 {
		return bad("invalid conntrack states %#x", uint32(states))
	}
	return flagsMatch{f: fieldCtState, bits: uint32(states)}
}

// CTStatusIn matches connections with any of the status bits
// (`ct status dnat`); Not gives none of them (`ct status ! dnat`).
func CTStatusIn(status CTStatus) Match {
	if status == 0 || uint32(status)&^flagMask(ctStatusNames) != 0 {
		return bad("invalid conntrack status %#x", uint32(status))
	}
	return flagsMatch{f: fieldCtStatus, bits: uint32(status)}
}

func flagMask(names []flagName) uint32 {
	var m uint32
	for _, n := range names {
		m |= n.bit
	}
	return m
}

// FibFlags selects the inputs of a fib lookup.
type FibFlags uint32

// Fib lookup inputs.
const (
	FibSAddr FibFlags = unix.NFTA_FIB_F_SADDR
	FibDAddr FibFlags = unix.NFTA_FIB_F_DADDR
	FibMark  FibFlags = unix.NFTA_FIB_F_MARK
	FibIIF   FibFlags = unix.NFTA_FIB_F_IIF
	FibOIF   FibFlags = unix.NFTA_FIB_F_OIF
	fibAll            = FibSAddr | FibDAddr | FibMark | FibIIF | FibOIF
)

func (f FibFlags) String() string {
	var parts []string
	for _, p := range []struct {
		bit  FibFlags
		name string
	}{{FibSAddr, "saddr"}, {FibDAddr, "daddr"}, {FibMark, "mark"}, {FibIIF, "iif"}, {FibOIF, "oif"}} {
		if f&p.bit != 0 {
			parts = append(parts, p.name)
		}
	}
	return strings.Join(parts, " . ")
}

// AddrType is a route type as fib reports it.
type AddrType uint32

// Route types (RTN_*).
const (
	AddrTypeUnicast   AddrType = unix.RTN_UNICAST
	AddrTypeLocal     AddrType = unix.RTN_LOCAL
	AddrTypeBroadcast AddrType = unix.RTN_BROADCAST
	AddrTypeAnycast   AddrType = unix.RTN_ANYCAST
	AddrTypeMulticast AddrType = unix.RTN_MULTICAST
	AddrTypeBlackhole AddrType = unix.RTN_BLACKHOLE
	AddrTypeUnreach   AddrType = unix.RTN_UNREACHABLE
	AddrTypeProhibit  AddrType = unix.RTN_PROHIBIT
)

var addrTypeNames = map[AddrType]string{
	AddrTypeUnicast: "unicast", AddrTypeLocal: "local", AddrTypeBroadcast: "broadcast",
	AddrTypeAnycast: "anycast", AddrTypeMulticast: "multicast", AddrTypeBlackhole: "blackhole",
	AddrTypeUnreach: "unreachable", AddrTypeProhibit: "prohibit",
}

func (t AddrType) String() string {
	if s, ok := addrTypeNames[t]; ok {
		return s
	}
	return strconv.Itoa(int(t))
}

// FibAddrType matches the route type of a fib lookup:
// FibAddrType(FibDAddr, AddrTypeLocal) is `fib daddr type local`.
func FibAddrType(flags FibFlags, t AddrType) Match {
	return fibMatch{flags: flags, addrType: true, value: uint32(t)}
}

// FibNoRoute matches when a fib lookup finds no output interface: the
// strict reverse path check FibNoRoute(FibSAddr|FibMark|FibIIF) is
// `fib saddr . mark . iif oif 0`.
func FibNoRoute(flags FibFlags) Match { return fibMatch{flags: flags} }
