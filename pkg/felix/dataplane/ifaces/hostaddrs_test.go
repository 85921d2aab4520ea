package ifaces

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// TestSetHostAddrs: the wanted addresses are added as /32 and /128; every other address of the
// managed versions goes, except the kernel's fe80::/64; IPv6 is left alone unless managed.
func TestSetHostAddrs(t *testing.T) {
	p := netip.MustParsePrefix
	v4, v6 := netip.MustParseAddr("169.254.0.179"), netip.MustParseAddr("fd5c::179")
	cases := []struct {
		name   string
		have   []netip.Prefix
		want   []netip.Addr
		v6     bool
		result string
	}{
		{"added", []netip.Prefix{p("fe80::1/64")}, []netip.Addr{v4, v6}, true, "[169.254.0.179/32 fd5c::179/128 fe80::1/64]"},
		{"kept", []netip.Prefix{p("169.254.0.179/32")}, []netip.Addr{v4}, true, "[169.254.0.179/32]"},
		{"others removed", []netip.Prefix{p("169.254.0.1/32"), p("10.65.0.1/24"), p("fd5c::1/128"), p("fe80::1/64"), p("fe80::2/128")},
			nil, true, "[fe80::1/64]"},
		{"IPv6 not managed", []netip.Prefix{p("169.254.0.1/32"), p("fd5c::1/128")}, []netip.Addr{v4, v6}, false, "[169.254.0.179/32 fd5c::1/128]"},
	}
	for _, c := range cases {
		f := NewFake()
		f.AddLink("cali1", true, 1500)
		for _, a := range c.have {
			f.AddAddr("cali1", a)
		}
		i := NewInterfaces(f, NewFakeSysctl(), zerolog.Nop(), time.Minute)
		if err := i.SetHostAddrs("cali1", c.want, c.v6); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got, _ := f.InterfaceAddrs("cali1")
		if s := fmt.Sprint(got); s != c.result {
			t.Errorf("%s: addresses %s, want %s", c.name, s, c.result)
		}
		if match := HostAddrsMatch(c.have, c.want, c.v6); match != (c.name == "kept") {
			t.Errorf("%s: HostAddrsMatch says %t", c.name, match)
		}
		if !HostAddrsMatch(got, c.want, c.v6) {
			t.Errorf("%s: HostAddrsMatch says the result %s does not match", c.name, got)
		}
	}
	if err := NewInterfaces(NewFake(), NewFakeSysctl(), zerolog.Nop(), time.Minute).SetHostAddrs("cali9", []netip.Addr{v4}, false); err == nil {
		t.Error("a missing interface was accepted")
	}
}
