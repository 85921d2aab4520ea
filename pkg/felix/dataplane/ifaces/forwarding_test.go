package ifaces

import "testing"

func TestEnableForwarding(t *testing.T) {
	for _, ipv6 := range []bool{false, true} {
		f := NewFakeSysctl()
		if err := EnableForwarding(f, ipv6); err != nil {
			t.Fatal(err)
		}
		if f.Values["net/ipv4/ip_forward"] != "1" {
			t.Errorf("ipv6=%v: ip_forward = %q", ipv6, f.Values["net/ipv4/ip_forward"])
		}
		if got := f.Values["net/ipv6/conf/all/forwarding"]; (got == "1") != ipv6 {
			t.Errorf("ipv6=%v: IPv6 forwarding = %q", ipv6, got)
		}
	}
	f := NewFakeSysctl()
	f.Missing["net/ipv6"] = true
	if err := EnableForwarding(f, true); err != nil {
		t.Errorf("a kernel without IPv6 must not be an error: %v", err)
	}
}
