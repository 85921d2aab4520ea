package nlhandle

import (
	"net"
	"net/netip"
	"testing"
)

func TestConversions(t *testing.T) {
	for _, tc := range []struct {
		in   *net.IPNet
		want string
	}{
		{&net.IPNet{IP: net.ParseIP("198.18.0.1"), Mask: net.CIDRMask(24, 32)}, "198.18.0.1/24"}, // 16-byte IPv4
		{&net.IPNet{IP: net.ParseIP("198.18.0.1").To4(), Mask: net.CIDRMask(32, 32)}, "198.18.0.1/32"},
		{&net.IPNet{IP: net.ParseIP("fd5c::1"), Mask: net.CIDRMask(64, 128)}, "fd5c::1/64"},
		{&net.IPNet{IP: net.ParseIP("::ffff:198.18.0.1"), Mask: net.CIDRMask(128, 128)}, "::ffff:198.18.0.1/128"},
	} {
		p, ok := Prefix(tc.in)
		if !ok || p.String() != tc.want {
			t.Errorf("Prefix(%v) = %v, %v; want %s", tc.in, p, ok, tc.want)
		}
		if back, _ := Prefix(IPNet(p)); back != p {
			t.Errorf("IPNet(%v) does not convert back: %v", p, back)
		}
	}
	if _, ok := Prefix(nil); ok {
		t.Error("Prefix(nil) is valid")
	}
	if _, ok := Prefix(&net.IPNet{IP: net.IP{1, 2, 3}}); ok {
		t.Error("a 3-byte address is valid")
	}
	if a := Addr(net.ParseIP("198.18.0.1")); a != netip.MustParseAddr("198.18.0.1") {
		t.Errorf("Addr = %v", a)
	}
	if a := Addr(nil); a.IsValid() {
		t.Errorf("Addr(nil) = %v", a)
	}
}
