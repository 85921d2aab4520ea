package config

import "testing"

// TestNATOutgoingAddressMapped (review of issue 23): an IPv4-mapped NATOutgoingAddress is
// taken as written (see the dataplane's TestKernelNATOutgoingMappedAddress for what it does).
func TestNATOutgoingAddressMapped(t *testing.T) {
	c, problems := Resolve(ds("NATOutgoingAddress", "::ffff:198.18.0.9"))
	a := c.NATOutgoingAddress
	if len(problems) == 0 && a.Is4In6() {
		t.Errorf("NATOutgoingAddress ::ffff:198.18.0.9 is taken as %s with no problem reported", a)
	}
}
