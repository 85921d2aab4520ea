package flowlog

import (
	"fmt"
	"net/netip"
	"strconv"
)

// IP protocol numbers that flows name.
const (
	ProtoICMP   uint8 = 1
	ProtoTCP    uint8 = 6
	ProtoUDP    uint8 = 17
	ProtoICMPv6 uint8 = 58
)

// Tuple identifies one connection in its original direction, as conntrack
// does. For ICMP and ICMPv6 the ports carry what Project Calico's collector
// puts there: SrcPort the echo identifier, DstPort type<<8|code (so an echo
// request, type 8 code 0, has DstPort 2048, and so has its flow's
// dest_port).
type Tuple struct {
	Src, Dst         netip.Addr
	Proto            uint8
	SrcPort, DstPort uint16
}

// ICMPPorts returns the ports of an ICMP or ICMPv6 tuple.
func ICMPPorts(id uint16, typ, code uint8) (src, dst uint16) {
	return id, uint16(typ)<<8 | uint16(code)
}

// Valid says whether both addresses are set, of one family.
func (t Tuple) Valid() bool {
	return t.Src.IsValid() && t.Dst.IsValid() && t.Src.Is4() == t.Dst.Is4()
}

func (t Tuple) String() string {
	return fmt.Sprintf("%s %s -> %s",
		ProtoName(t.Proto),
		netip.AddrPortFrom(t.Src, t.SrcPort),
		netip.AddrPortFrom(t.Dst, t.DstPort))
}

// ProtoName is the name a flow's proto field carries: Project Calico's
// names for the protocols it knows, else the number.
func ProtoName(p uint8) string {
	switch p {
	case ProtoICMP:
		return "icmp"
	case ProtoTCP:
		return "tcp"
	case ProtoUDP:
		return "udp"
	case 4:
		return "ipip"
	case 50:
		return "esp"
	case ProtoICMPv6:
		return "icmp6"
	case 132:
		return "sctp"
	}
	return strconv.Itoa(int(p))
}
