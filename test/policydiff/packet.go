package policydiff

import (
	"encoding/binary"
	"hash/crc32"
	"net/netip"
)

// Packets are built byte by byte (IPv4 or IPv6 header, then TCP SYN, UDP, ICMP/ICMPv6 query,
// SCTP INIT or a bare payload), with correct checksums so that conntrack takes each one as the
// first packet of a new connection. Every packet carries a 32-bit tag where the receiver can
// find it: the TCP sequence number, the first payload bytes of UDP and other protocols, the ICMP
// identifier and sequence number, the SCTP initiate tag.

// buildPacket returns the IP packet for p carrying tag.
func buildPacket(p Packet, tag uint32) []byte {
	l4 := transport(p, tag)
	l4sum(p, l4)
	if p.Family() == 4 {
		h := make([]byte, 20)
		h[0] = 0x45
		binary.BigEndian.PutUint16(h[2:], uint16(20+len(l4)))
		binary.BigEndian.PutUint16(h[4:], uint16(tag))
		h[8], h[9] = 64, p.Proto
		s, d := p.Src.As4(), p.Dst.As4()
		copy(h[12:], s[:])
		copy(h[16:], d[:])
		binary.BigEndian.PutUint16(h[10:], ^fold(sum(0, h)))
		return append(h, l4...)
	}
	h := make([]byte, 40)
	h[0] = 0x60
	binary.BigEndian.PutUint16(h[4:], uint16(len(l4)))
	h[6], h[7] = p.Proto, 64
	s, d := p.Src.As16(), p.Dst.As16()
	copy(h[8:], s[:])
	copy(h[24:], d[:])
	return append(h, l4...)
}

func putTag(b []byte, tag uint32) { binary.BigEndian.PutUint32(b, tag) }

// transport builds the layer-4 part (checksum fields zero).
func transport(p Packet, tag uint32) []byte {
	switch {
	case p.Proto == protoTCP:
		b := make([]byte, 20)
		ports(b, p)
		putTag(b[4:], tag)
		b[12], b[13] = 5<<4, 0x02 // data offset 5, SYN
		binary.BigEndian.PutUint16(b[14:], 64240)
		return b
	case p.Proto == protoUDP:
		b := make([]byte, 8+8)
		ports(b, p)
		binary.BigEndian.PutUint16(b[4:], uint16(len(b)))
		putTag(b[8:], tag)
		return b
	case p.Proto == protoSCTP:
		b := make([]byte, 12+20)
		ports(b, p)
		c := b[12:]
		c[0] = 1 // INIT
		binary.BigEndian.PutUint16(c[2:], 20)
		putTag(c[4:], tag)
		binary.BigEndian.PutUint32(c[8:], 65536) // a_rwnd
		binary.BigEndian.PutUint16(c[12:], 10)   // outbound streams
		binary.BigEndian.PutUint16(c[14:], 10)   // inbound streams
		binary.BigEndian.PutUint32(c[16:], tag)  // initial TSN
		return b
	case p.Proto == p.icmpProto():
		// The identifier (part of the conntrack tuple) gets the low half of the tag.
		b := make([]byte, 8+8)
		b[0], b[1] = p.ICMPType, p.ICMPCode
		binary.BigEndian.PutUint16(b[4:], uint16(tag))
		binary.BigEndian.PutUint16(b[6:], uint16(tag>>16))
		return b
	}
	b := make([]byte, 8)
	putTag(b, tag)
	return b
}

func ports(b []byte, p Packet) {
	binary.BigEndian.PutUint16(b[0:], p.SrcPort)
	binary.BigEndian.PutUint16(b[2:], p.DstPort)
}

// l4sum fills in the layer-4 checksum.
func l4sum(p Packet, b []byte) {
	var off int
	switch {
	case p.Proto == protoTCP:
		off = 16
	case p.Proto == protoUDP:
		off = 6
	case p.Proto == protoSCTP:
		binary.LittleEndian.PutUint32(b[8:], crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
		return
	case p.Proto == protoICMP && p.Family() == 4:
		binary.BigEndian.PutUint16(b[2:], ^fold(sum(0, b)))
		return
	case p.Proto == protoICMPv6 && p.Family() == 6:
		off = 2
	default:
		return
	}
	s := sum(pseudo(p, len(b)), b)
	c := ^fold(s)
	if c == 0 && p.Proto == protoUDP {
		c = 0xffff
	}
	binary.BigEndian.PutUint16(b[off:], c)
}

// pseudo is the sum of the pseudo-header.
func pseudo(p Packet, n int) uint32 {
	src, dst := p.Src.AsSlice(), p.Dst.AsSlice()
	s := sum(sum(0, src), dst)
	return s + uint32(p.Proto) + uint32(n)
}

func sum(s uint32, b []byte) uint32 {
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	return s
}

func fold(s uint32) uint16 {
	for s > 0xffff {
		s = s>>16 + s&0xffff
	}
	return uint16(s)
}

// parsed is what the receiver reads back from a packet.
type parsed struct {
	Src, Dst netip.Addr
	Proto    uint8
	Tag      uint32
}

// parsePacket reads the addresses, protocol and tag of an IP packet; ok is false for anything
// that is not one of ours (too short, IPv6 extension headers).
func parsePacket(b []byte) (parsed, bool) {
	var p parsed
	var l4 []byte
	switch {
	case len(b) >= 20 && b[0]>>4 == 4:
		ihl := int(b[0]&0x0f) * 4
		if len(b) < ihl {
			return p, false
		}
		p.Src, _ = netip.AddrFromSlice(b[12:16])
		p.Dst, _ = netip.AddrFromSlice(b[16:20])
		p.Proto, l4 = b[9], b[ihl:]
	case len(b) >= 40 && b[0]>>4 == 6:
		p.Src, _ = netip.AddrFromSlice(b[8:24])
		p.Dst, _ = netip.AddrFromSlice(b[24:40])
		p.Proto, l4 = b[6], b[40:]
	default:
		return p, false
	}
	off := 0
	switch p.Proto {
	case protoTCP:
		off = 4
	case protoUDP:
		off = 8
	case protoSCTP:
		off = 16
	case protoICMP, protoICMPv6:
		off = 4
	}
	if len(l4) < off+4 {
		return p, false
	}
	p.Tag = binary.BigEndian.Uint32(l4[off:])
	if p.Proto == protoICMP || p.Proto == protoICMPv6 {
		p.Tag = uint32(binary.BigEndian.Uint16(l4[4:])) | uint32(binary.BigEndian.Uint16(l4[6:]))<<16
	}
	return p, true
}
