package nflog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"github.com/calico-host/calico-host/pkg/flowlog"
)

// Packet is one packet an NFLOG statement logged.
type Packet struct {
	Group  uint16
	Prefix string
	// Length is the packet's length at layer 3, from its IP header (what
	// conntrack's byte counters count), not the bytes copied to us.
	Length int
	Tuple  flowlog.Tuple
}

var errShort = errors.New("packet too short")

// ParseIP reads the length and 5-tuple of an IPv4 or IPv6 packet (as NFLOG
// copies it, from the IP header on). TCP and UDP give ports; ICMP and
// ICMPv6 give the identifier and type<<8|code (flowlog.ICMPPorts); other
// protocols and non-first fragments give no ports.
func ParseIP(b []byte) (length int, t flowlog.Tuple, err error) {
	if len(b) < 1 {
		return 0, t, errShort
	}
	switch b[0] >> 4 {
	case 4:
		return parseIPv4(b)
	case 6:
		return parseIPv6(b)
	}
	return 0, t, fmt.Errorf("IP version %d", b[0]>>4)
}

func parseIPv4(b []byte) (int, flowlog.Tuple, error) {
	if len(b) < 20 {
		return 0, flowlog.Tuple{}, errShort
	}
	ihl := int(b[0]&0x0f) * 4
	if ihl < 20 {
		return 0, flowlog.Tuple{}, fmt.Errorf("IPv4 header length %d", ihl)
	}
	t := flowlog.Tuple{
		Src:   netip.AddrFrom4([4]byte(b[12:16])),
		Dst:   netip.AddrFrom4([4]byte(b[16:20])),
		Proto: b[9],
	}
	length := int(binary.BigEndian.Uint16(b[2:4]))
	if binary.BigEndian.Uint16(b[6:8])&0x1fff != 0 || len(b) < ihl {
		return length, t, nil // a later fragment, or options cut off: no ports
	}
	parsePorts(&t, b[ihl:])
	return length, t, nil
}

// IPv6 extension headers walked to reach the transport header.
const (
	hopByHop = 0
	routing  = 43
	fragment = 44
	destOpts = 60
)

func parseIPv6(b []byte) (int, flowlog.Tuple, error) {
	if len(b) < 40 {
		return 0, flowlog.Tuple{}, errShort
	}
	t := flowlog.Tuple{
		Src: netip.AddrFrom16([16]byte(b[8:24])),
		Dst: netip.AddrFrom16([16]byte(b[24:40])),
	}
	length := 40 + int(binary.BigEndian.Uint16(b[4:6]))
	next, rest := b[6], b[40:]
	for {
		switch next {
		case hopByHop, routing, destOpts:
			if len(rest) < 8 || len(rest) < 8+int(rest[1])*8 {
				t.Proto = next
				return length, t, nil
			}
			next, rest = rest[0], rest[8+int(rest[1])*8:]
			continue
		case fragment:
			if len(rest) < 8 {
				t.Proto = next
				return length, t, nil
			}
			later := binary.BigEndian.Uint16(rest[2:4])&0xfff8 != 0
			next, rest = rest[0], rest[8:]
			if later {
				t.Proto = next
				return length, t, nil
			}
			continue
		}
		t.Proto = next
		parsePorts(&t, rest)
		return length, t, nil
	}
}

func parsePorts(t *flowlog.Tuple, l4 []byte) {
	switch t.Proto {
	case flowlog.ProtoTCP, flowlog.ProtoUDP, 132: // SCTP's ports sit where TCP's do
		if len(l4) >= 4 {
			t.SrcPort, t.DstPort = binary.BigEndian.Uint16(l4[0:2]), binary.BigEndian.Uint16(l4[2:4])
		}
	case flowlog.ProtoICMP, flowlog.ProtoICMPv6:
		if len(l4) >= 6 {
			t.SrcPort, t.DstPort = flowlog.ICMPPorts(binary.BigEndian.Uint16(l4[4:6]), l4[0], l4[1])
		}
	}
}
