package sim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"golang.org/x/sys/unix"
)

// Packet is a packet as netfilter sees it: its network header and what
// follows, the EtherType it travels as (meta protocol: unix.ETH_P_IP,
// ETH_P_IPV6 or ETH_P_ARP) and, for a frame received on an Ethernet
// interface, the 14-byte Ethernet header it arrived with. Build one with
// IPPacket or ARPPacket, or from the bytes of a real packet.
type Packet struct {
	Proto   uint16
	Link    []byte
	Network []byte
}

// info is what the kernel's nft_set_pktinfo_* computes before a chain
// runs: the netfilter family, whether the transport header was found
// (NFT_PKTINFO_L4PROTO), the transport protocol, its offset and the
// fragment offset.
type info struct {
	nfproto uint8
	l4      bool
	tprot   uint8
	thoff   int
	fragoff uint16
}

var errIPv6ExtHeaders = errors.New("IPv6 extension headers are not simulated")

// parse computes the packet's info, refusing what the kernel would drop
// before netfilter (a malformed IP header) and what the simulator does not
// model (IPv6 extension headers).
func (p Packet) parse() (info, error) {
	switch p.Proto {
	case unix.ETH_P_IP:
		return parseIPv4(p.Network)
	case unix.ETH_P_IPV6:
		return parseIPv6(p.Network)
	case unix.ETH_P_ARP:
		if len(p.Network) < 8 {
			return info{}, errors.New("ARP packet shorter than its header")
		}
		return info{nfproto: unix.NFPROTO_ARP}, nil
	}
	return info{}, fmt.Errorf("EtherType %#04x is not simulated", p.Proto)
}

// parseIPv4 is nft_set_pktinfo_ipv4 on a header ip_rcv accepted: version
// 4, ihl of at least 5, total length within the packet and covering the
// header.
func parseIPv4(b []byte) (info, error) {
	if len(b) < 20 || b[0]>>4 != 4 {
		return info{}, errors.New("not an IPv4 header")
	}
	ihl := int(b[0]&0x0f) * 4
	total := int(binary.BigEndian.Uint16(b[2:]))
	if ihl < 20 || total < ihl || total > len(b) {
		return info{}, fmt.Errorf("malformed IPv4 header (ihl %d, total length %d, %d bytes)", ihl, total, len(b))
	}
	return info{
		nfproto: unix.NFPROTO_IPV4, l4: true, tprot: b[9], thoff: ihl,
		fragoff: binary.BigEndian.Uint16(b[6:]) & 0x1fff,
	}, nil
}

// parseIPv6 is nft_set_pktinfo_ipv6 for a header without extension
// headers; "no next header" (59) leaves the transport header unknown, as
// ipv6_find_hdr does.
func parseIPv6(b []byte) (info, error) {
	if len(b) < 40 || b[0]>>4 != 6 {
		return info{}, errors.New("not an IPv6 header")
	}
	if n := 40 + int(binary.BigEndian.Uint16(b[4:])); n > len(b) {
		return info{}, fmt.Errorf("malformed IPv6 header (payload length %d, %d bytes)", n-40, len(b))
	}
	out := info{nfproto: unix.NFPROTO_IPV6}
	switch nh := b[6]; nh {
	case unix.IPPROTO_HOPOPTS, unix.IPPROTO_ROUTING, unix.IPPROTO_FRAGMENT, unix.IPPROTO_DSTOPTS,
		unix.IPPROTO_AH, unix.IPPROTO_MH:
		return info{}, errIPv6ExtHeaders
	case unix.IPPROTO_NONE:
	default:
		out.l4, out.tprot, out.thoff = true, nh, 40
	}
	return out, nil
}

// addrs returns the packet's source and destination addresses (IP only).
func (p Packet) addrs() (src, dst netip.Addr) {
	if p.Proto != unix.ETH_P_IP && p.Proto != unix.ETH_P_IPV6 {
		return netip.Addr{}, netip.Addr{}
	}
	s, d, n := p.addrOffsets()
	src, _ = netip.AddrFromSlice(p.Network[s : s+n])
	dst, _ = netip.AddrFromSlice(p.Network[d : d+n])
	return src, dst
}

// addrOffsets are the offsets of the source and destination addresses in
// the network header, and their length.
func (p Packet) addrOffsets() (src, dst, n int) {
	if p.Proto == unix.ETH_P_IPV6 {
		return 8, 24, 16
	}
	return 12, 16, 4
}

func (p Packet) clone() Packet {
	return Packet{Proto: p.Proto, Link: append([]byte(nil), p.Link...), Network: append([]byte(nil), p.Network...)}
}
