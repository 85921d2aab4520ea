package nflog

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/calico-host/calico-host/pkg/flowlog"
)

func ipv4(proto uint8, fragOff uint16, l4 []byte) []byte {
	b := make([]byte, 20, 20+len(l4))
	b[0] = 0x45
	binary.BigEndian.PutUint16(b[2:], uint16(20+len(l4)))
	binary.BigEndian.PutUint16(b[6:], fragOff)
	b[9] = proto
	copy(b[12:], []byte{10, 65, 0, 1})
	copy(b[16:], []byte{10, 65, 0, 2})
	return append(b, l4...)
}

func ipv6(next uint8, payload []byte) []byte {
	b := make([]byte, 40, 40+len(payload))
	b[0] = 0x60
	binary.BigEndian.PutUint16(b[4:], uint16(len(payload)))
	b[6] = next
	a1, a2 := netip.MustParseAddr("fd5c::1").As16(), netip.MustParseAddr("fd5c::2").As16()
	copy(b[8:], a1[:])
	copy(b[24:], a2[:])
	return append(b, payload...)
}

func TestParseIP(t *testing.T) {
	v4a, v4b := netip.MustParseAddr("10.65.0.1"), netip.MustParseAddr("10.65.0.2")
	v6a, v6b := netip.MustParseAddr("fd5c::1"), netip.MustParseAddr("fd5c::2")
	ports := []byte{0x9c, 0x40, 0x00, 0x50, 0, 0, 0, 0} // 40000 -> 80
	hopByHopHdr := []byte{6, 0, 0, 0, 0, 0, 0, 0}       // next TCP, 8 bytes
	fragFirst := []byte{17, 0, 0, 1, 0, 0, 0, 1}        // next UDP, offset 0, more fragments
	fragLater := []byte{17, 0, 0, 0x10, 0, 0, 0, 1}     // offset 2 (x8)
	cases := []struct {
		name   string
		pkt    []byte
		length int
		want   flowlog.Tuple
	}{
		{"v4 tcp", ipv4(6, 0, ports), 28, flowlog.Tuple{Src: v4a, Dst: v4b, Proto: 6, SrcPort: 40000, DstPort: 80}},
		{"v4 icmp echo", ipv4(1, 0, []byte{8, 0, 0, 0, 0x12, 0x34, 0, 1}), 28,
			flowlog.Tuple{Src: v4a, Dst: v4b, Proto: 1, SrcPort: 0x1234, DstPort: 2048}},
		{"v4 later fragment", ipv4(17, 5, ports), 28, flowlog.Tuple{Src: v4a, Dst: v4b, Proto: 17}},
		{"v4 truncated l4", ipv4(6, 0, ports[:2]), 22, flowlog.Tuple{Src: v4a, Dst: v4b, Proto: 6}},
		{"v6 udp", ipv6(17, ports), 48, flowlog.Tuple{Src: v6a, Dst: v6b, Proto: 17, SrcPort: 40000, DstPort: 80}},
		{"v6 hop-by-hop then tcp", ipv6(0, append(hopByHopHdr, ports...)), 56,
			flowlog.Tuple{Src: v6a, Dst: v6b, Proto: 6, SrcPort: 40000, DstPort: 80}},
		{"v6 first fragment", ipv6(44, append(fragFirst, ports...)), 56,
			flowlog.Tuple{Src: v6a, Dst: v6b, Proto: 17, SrcPort: 40000, DstPort: 80}},
		{"v6 later fragment", ipv6(44, append(fragLater, ports...)), 56, flowlog.Tuple{Src: v6a, Dst: v6b, Proto: 17}},
		{"v6 icmp echo reply", ipv6(58, []byte{129, 0, 0, 0, 0, 7, 0, 1}), 48,
			flowlog.Tuple{Src: v6a, Dst: v6b, Proto: 58, SrcPort: 7, DstPort: 129 << 8}},
	}
	for _, c := range cases {
		n, tu, err := ParseIP(c.pkt)
		if err != nil || n != c.length || tu != c.want {
			t.Errorf("%s: %d %+v %v; want %d %+v", c.name, n, tu, err, c.length, c.want)
		}
	}
	for _, bad := range [][]byte{nil, {0x45, 0}, {0x75}, append([]byte{0x60}, make([]byte, 20)...), {0x41, 0, 0, 20, 0, 0, 0, 0, 0, 6, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8}} {
		if _, _, err := ParseIP(bad); err == nil {
			t.Errorf("ParseIP(% x) accepted", bad)
		}
	}
}

// FuzzParseIP: whatever NFLOG copies, parsing never panics.
func FuzzParseIP(f *testing.F) {
	f.Add(ipv4(6, 0, []byte{1, 2, 3, 4}))
	f.Add(ipv6(0, []byte{6, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4}))
	f.Fuzz(func(t *testing.T, b []byte) { _, _, _ = ParseIP(b) })
}
