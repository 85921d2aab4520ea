package announce

import (
	"encoding/binary"
	"testing"
)

// frame builds an Ethernet frame of type etherType carrying an IPv4-over-Ethernet ARP with the
// given sender and target protocol addresses.
func frame(etherType uint16, spa, tpa [4]byte) []byte {
	f := make([]byte, 14+28)
	copy(f[0:6], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	copy(f[6:12], []byte{0x02, 0, 0, 0, 0, 1})
	binary.BigEndian.PutUint16(f[12:], etherType)
	a := f[14:]
	binary.BigEndian.PutUint16(a[0:], 1)      // Ethernet
	binary.BigEndian.PutUint16(a[2:], 0x0800) // IPv4
	a[4], a[5] = 6, 4
	binary.BigEndian.PutUint16(a[6:], 1) // request
	copy(a[14:18], spa[:])
	copy(a[24:28], tpa[:])
	return f
}

func TestIsAnnouncement(t *testing.T) {
	me, other := [4]byte{10, 65, 0, 7}, [4]byte{10, 65, 0, 1}
	cases := []struct {
		name  string
		frame []byte
		want  bool
	}{
		{"gratuitous ARP", frame(etherTypeARP, me, me), true},
		{"RARP", frame(etherTypeRARP, [4]byte{}, [4]byte{}), true},
		{"ordinary ARP request", frame(etherTypeARP, me, other), false},
		{"IPv4", frame(0x0800, me, me), false},
		{"VLAN-tagged", frame(0x8100, me, me), false},
		{"truncated ARP", frame(etherTypeARP, me, me)[:30], false},
		{"runt", []byte{1, 2, 3}, false},
	}
	for _, c := range cases {
		if got := IsAnnouncement(c.frame); got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}
