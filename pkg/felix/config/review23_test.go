package config

import (
	"net/netip"
	"testing"
)

// TestNATOutgoingAddressMapped (review of issue 23): an IPv4-mapped NATOutgoingAddress is its
// IPv4 address, as Project Calico's parser takes it (see the dataplane's
// TestKernelNATOutgoingMappedAddress for what a 16-byte one did).
func TestNATOutgoingAddressMapped(t *testing.T) {
	c, problems := Resolve(ds("NATOutgoingAddress", "::ffff:198.18.0.9"))
	if a := c.NATOutgoingAddress; len(problems) != 0 || a != netip.MustParseAddr("198.18.0.9") {
		t.Errorf("NATOutgoingAddress ::ffff:198.18.0.9 is taken as %s (problems %v), want 198.18.0.9", a, problems)
	}
}
