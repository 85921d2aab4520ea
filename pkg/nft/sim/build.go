package sim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"net"
	"net/netip"

	"golang.org/x/sys/unix"
)

// IPSpec describes an IP packet for IPPacket: the first packet of a
// connection of protocol Proto (a TCP SYN, a UDP datagram, an ICMP or
// ICMPv6 echo request unless ICMPType says otherwise, an SCTP INIT, or a
// bare header of any other protocol followed by Payload).
type IPSpec struct {
	Src, Dst     netip.Addr // both IPv4 or both IPv6
	Proto        uint8
	SPort, DPort uint16 // TCP, UDP, UDP-Lite, SCTP
	ICMPType     uint8  // ICMP, ICMPv6 (0: echo request)
	ICMPCode     uint8
	ICMPID       uint16 // echo identifier
	TCPFlags     uint8  // 0: SYN
	ID           uint16 // IPv4 identification, or IPv6 flow label
	TOS          uint8  // IPv4 type of service, or IPv6 traffic class
	TTL          uint8  // 0: 64
	Payload      []byte
}

// IPPacket builds the packet s describes, with correct checksums (the
// kernel's conntrack checks them on input).
func IPPacket(s IPSpec) (Packet, error) {
	if !s.Src.IsValid() || !s.Dst.IsValid() || s.Src.Is4() != s.Dst.Is4() || s.Src.Zone() != "" || s.Dst.Zone() != "" {
		return Packet{}, fmt.Errorf("addresses %s and %s are not of one IP version", s.Src, s.Dst)
	}
	l4, err := s.transport()
	if err != nil {
		return Packet{}, err
	}
	if s.Src.Is4() {
		return Packet{Proto: unix.ETH_P_IP, Network: s.ipv4(l4)}, nil
	}
	return Packet{Proto: unix.ETH_P_IPV6, Network: s.ipv6(l4)}, nil
}

func (s IPSpec) ttl() uint8 {
	if s.TTL == 0 {
		return 64
	}
	return s.TTL
}

func (s IPSpec) ipv4(l4 []byte) []byte {
	h := make([]byte, 20, 20+len(l4))
	h[0], h[1], h[8], h[9] = 0x45, s.TOS, s.ttl(), s.Proto
	binary.BigEndian.PutUint16(h[2:], uint16(20+len(l4)))
	binary.BigEndian.PutUint16(h[4:], s.ID)
	copy(h[12:], s.Src.AsSlice())
	copy(h[16:], s.Dst.AsSlice())
	binary.BigEndian.PutUint16(h[10:], checksum(h, 0))
	s.fillChecksum(l4)
	return append(h, l4...)
}

func (s IPSpec) ipv6(l4 []byte) []byte {
	h := make([]byte, 40, 40+len(l4))
	binary.BigEndian.PutUint32(h, 6<<28|uint32(s.TOS)<<20|uint32(s.ID))
	binary.BigEndian.PutUint16(h[4:], uint16(len(l4)))
	h[6], h[7] = s.Proto, s.ttl()
	copy(h[8:], s.Src.AsSlice())
	copy(h[24:], s.Dst.AsSlice())
	s.fillChecksum(l4)
	return append(h, l4...)
}

// transport builds the transport header and payload, checksum zero.
func (s IPSpec) transport() ([]byte, error) {
	switch s.Proto {
	case unix.IPPROTO_TCP:
		h := make([]byte, 20)
		s.ports(h)
		binary.BigEndian.PutUint32(h[4:], 1) // sequence number
		h[12], h[13] = 5<<4, s.TCPFlags
		if s.TCPFlags == 0 {
			h[13] = 0x02 // SYN
		}
		binary.BigEndian.PutUint16(h[14:], 64240)
		return append(h, s.Payload...), nil
	case unix.IPPROTO_UDP, unix.IPPROTO_UDPLITE:
		h := make([]byte, 8)
		s.ports(h)
		if s.Proto == unix.IPPROTO_UDP {
			binary.BigEndian.PutUint16(h[4:], uint16(8+len(s.Payload)))
		} // UDP-Lite: checksum coverage 0, the whole datagram
		return append(h, s.Payload...), nil
	case unix.IPPROTO_ICMP, unix.IPPROTO_ICMPV6:
		return s.icmp()
	case unix.IPPROTO_SCTP:
		return s.sctp(), nil
	case unix.IPPROTO_HOPOPTS, unix.IPPROTO_ROUTING, unix.IPPROTO_FRAGMENT, unix.IPPROTO_DSTOPTS:
		return nil, errIPv6ExtHeaders
	}
	return append([]byte(nil), s.Payload...), nil
}

func (s IPSpec) ports(h []byte) {
	binary.BigEndian.PutUint16(h, s.SPort)
	binary.BigEndian.PutUint16(h[2:], s.DPort)
}

func (s IPSpec) icmp() ([]byte, error) {
	if (s.Proto == unix.IPPROTO_ICMPV6) != s.Src.Is6() {
		return nil, fmt.Errorf("protocol %d with an %s address", s.Proto, map[bool]string{true: "IPv4", false: "IPv6"}[s.Src.Is4()])
	}
	typ := s.ICMPType
	if typ == 0 && s.ICMPCode == 0 {
		typ = 8 // echo request
		if s.Proto == unix.IPPROTO_ICMPV6 {
			typ = 128
		}
	}
	h := make([]byte, 8)
	h[0], h[1] = typ, s.ICMPCode
	binary.BigEndian.PutUint16(h[4:], s.ICMPID)
	binary.BigEndian.PutUint16(h[6:], 1) // sequence
	return append(h, s.Payload...), nil
}

// sctp is a common header and an INIT chunk (what conntrack takes for a
// new association).
func (s IPSpec) sctp() []byte {
	h := make([]byte, 12+20)
	s.ports(h)
	c := h[12:]
	c[0] = 1 // INIT
	binary.BigEndian.PutUint16(c[2:], 20)
	binary.BigEndian.PutUint32(c[4:], 0x01020304) // initiate tag
	binary.BigEndian.PutUint32(c[8:], 65535)      // a_rwnd
	binary.BigEndian.PutUint16(c[12:], 1)         // outbound streams
	binary.BigEndian.PutUint16(c[14:], 1)         // inbound streams
	binary.BigEndian.PutUint32(c[16:], 1)         // initial TSN
	return h
}

// fillChecksum writes the transport checksum of l4.
func (s IPSpec) fillChecksum(l4 []byte) {
	var off int
	pseudo := true
	switch s.Proto {
	case unix.IPPROTO_TCP:
		off = 16
	case unix.IPPROTO_UDP, unix.IPPROTO_UDPLITE:
		off = 6
	case unix.IPPROTO_ICMP:
		off, pseudo = 2, false
	case unix.IPPROTO_ICMPV6:
		off = 2
	case unix.IPPROTO_SCTP:
		binary.LittleEndian.PutUint32(l4[8:], crc32.Checksum(l4, crc32.MakeTable(crc32.Castagnoli)))
		return
	default:
		return
	}
	var sum uint32
	if pseudo {
		sum = s.pseudoSum(len(l4))
	}
	c := checksum(l4, sum)
	if c == 0 && s.Proto == unix.IPPROTO_UDP {
		c = 0xffff
	}
	binary.BigEndian.PutUint16(l4[off:], c)
}

// pseudoSum is the partial sum of the pseudo header.
func (s IPSpec) pseudoSum(n int) uint32 {
	var b []byte
	b = append(b, s.Src.AsSlice()...)
	b = append(b, s.Dst.AsSlice()...)
	b = binary.BigEndian.AppendUint32(b, uint32(n))
	b = append(b, 0, 0, 0, s.Proto)
	return sum16(b, 0)
}

func sum16(b []byte, sum uint32) uint32 {
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	return sum
}

// checksum is the Internet checksum of b added to a partial sum.
func checksum(b []byte, sum uint32) uint16 {
	sum = sum16(b, sum)
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// ARPSpec describes an Ethernet/IPv4 ARP packet.
type ARPSpec struct {
	Op        uint16 // 1 request, 2 reply
	SenderMAC net.HardwareAddr
	SenderIP  netip.Addr
	TargetMAC net.HardwareAddr // nil: zero (a request)
	TargetIP  netip.Addr
}

// ARPPacket builds the ARP packet a describes.
func ARPPacket(a ARPSpec) (Packet, error) {
	if len(a.SenderMAC) != 6 || (a.TargetMAC != nil && len(a.TargetMAC) != 6) || !a.SenderIP.Is4() || !a.TargetIP.Is4() {
		return Packet{}, errors.New("an ARP packet needs 6-byte MAC addresses and IPv4 addresses")
	}
	b := make([]byte, 28)
	binary.BigEndian.PutUint16(b, 1) // Ethernet
	binary.BigEndian.PutUint16(b[2:], unix.ETH_P_IP)
	b[4], b[5] = 6, 4
	binary.BigEndian.PutUint16(b[6:], a.Op)
	copy(b[8:], a.SenderMAC)
	copy(b[14:], a.SenderIP.AsSlice())
	copy(b[18:], a.TargetMAC)
	copy(b[24:], a.TargetIP.AsSlice())
	return Packet{Proto: unix.ETH_P_ARP, Network: b}, nil
}

// EthernetHeader returns the 14-byte header of a frame from src to dst
// carrying proto: the Link of a received Packet.
func EthernetHeader(dst, src net.HardwareAddr, proto uint16) []byte {
	h := make([]byte, 14)
	copy(h, dst)
	copy(h[6:], src)
	binary.BigEndian.PutUint16(h[12:], proto)
	return h
}
