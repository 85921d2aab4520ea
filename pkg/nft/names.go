package nft

import (
	"encoding/binary"
	"regexp"
	"strconv"
)

// IP protocol numbers.
const (
	ProtoICMP    uint8 = 1
	ProtoTCP     uint8 = 6
	ProtoUDP     uint8 = 17
	ProtoICMPv6  uint8 = 58
	ProtoSCTP    uint8 = 132
	ProtoUDPLite uint8 = 136
)

// protoNames are the names nft prints for IP protocols (from Debian's
// /etc/protocols); other protocols print as numbers.
var protoNames = map[uint8]string{
	1: "icmp", 2: "igmp", 4: "ipencap", 6: "tcp", 17: "udp", 41: "ipv6", 47: "gre",
	50: "esp", 51: "ah", 58: "ipv6-icmp", 89: "ospf", 94: "ipip", 103: "pim",
	112: "vrrp", 132: "sctp", 136: "udplite",
}

func protoName(p uint8) string {
	if s, ok := protoNames[p]; ok {
		return s
	}
	return strconv.Itoa(int(p))
}

// portKeyword is nft's payload keyword for the ports of protocol p: tcp,
// udp, sctp, udplite, or th (any transport header) for 0.
func portKeyword(p uint8) string {
	switch p {
	case ProtoTCP:
		return "tcp"
	case ProtoUDP:
		return "udp"
	case ProtoSCTP:
		return "sctp"
	case ProtoUDPLite:
		return "udplite"
	}
	return "th"
}

// hasPorts reports whether nft has a port keyword for protocol p.
func hasPorts(p uint8) bool { return portKeyword(p) != "th" }

// Names nft prints for ICMP and ICMPv6 types and codes.
var (
	icmpTypeNames = map[uint8]string{
		0: "echo-reply", 3: "destination-unreachable", 4: "source-quench", 5: "redirect",
		8: "echo-request", 9: "router-advertisement", 10: "router-solicitation",
		11: "time-exceeded", 12: "parameter-problem", 13: "timestamp-request",
		14: "timestamp-reply", 15: "info-request", 16: "info-reply",
		17: "address-mask-request", 18: "address-mask-reply",
	}
	icmpCodeNames = map[uint8]string{
		0: "net-unreachable", 1: "host-unreachable", 2: "prot-unreachable", 3: "port-unreachable",
		4: "frag-needed", 9: "net-prohibited", 10: "host-prohibited", 13: "admin-prohibited",
	}
	icmpv6TypeNames = map[uint8]string{
		1: "destination-unreachable", 2: "packet-too-big", 3: "time-exceeded",
		4: "parameter-problem", 128: "echo-request", 129: "echo-reply",
		130: "mld-listener-query", 131: "mld-listener-report", 132: "mld-listener-done",
		133: "nd-router-solicit", 134: "nd-router-advert", 135: "nd-neighbor-solicit",
		136: "nd-neighbor-advert", 137: "nd-redirect", 138: "router-renumbering",
		141: "ind-neighbor-solicit", 142: "ind-neighbor-advert", 143: "mld2-listener-report",
	}
	icmpv6CodeNames = map[uint8]string{
		0: "no-route", 1: "admin-prohibited", 3: "addr-unreachable", 4: "port-unreachable",
		5: "policy-fail", 6: "reject-route",
	}
	arpOpNames = map[uint16]string{
		1: "request", 2: "reply", 3: "rrequest", 4: "rreply", 8: "inrequest", 9: "inreply", 10: "nak",
	}
)

func nameOr(names map[uint8]string, v uint8) string {
	if s, ok := names[v]; ok {
		return s
	}
	return strconv.Itoa(int(v))
}

func formatICMPType(b []byte) string   { return nameOr(icmpTypeNames, b[0]) }
func formatICMPv6Type(b []byte) string { return nameOr(icmpv6TypeNames, b[0]) }
func formatICMPCode(b []byte) string   { return nameOr(icmpCodeNames, b[0]) }
func formatICMPv6Code(b []byte) string { return nameOr(icmpv6CodeNames, b[0]) }

func formatARPOp(b []byte) string {
	op := binary.BigEndian.Uint16(b)
	if s, ok := arpOpNames[op]; ok {
		return s
	}
	return strconv.Itoa(int(op))
}

// ARP operations.
const (
	ARPRequest uint16 = 1
	ARPReply   uint16 = 2
)

// nameRE is what this package accepts as a table, chain, set or map name:
// what nft parses unquoted, so that every dump reads back with `nft -f`.
var nameRE = regexp.MustCompile(`^[a-zA-Z_.][a-zA-Z0-9_./:-]*$`)

// MaxNameLen is the longest name the kernel accepts (NFT_NAME_MAXLEN less
// the terminating NUL).
const MaxNameLen = 255

// ValidName reports whether s can name a table, chain, set or map.
func ValidName(s string) bool { return len(s) <= MaxNameLen && nameRE.MatchString(s) }

// quoteName prints a name as nft prints it (nft 1.0 prints names raw).
func quoteName(s string) string { return s }
