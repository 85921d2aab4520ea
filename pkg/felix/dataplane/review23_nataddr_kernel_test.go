package dataplane

import (
	"net/netip"
	"testing"
)

// TestKernelNATOutgoingMappedAddress (review of issue 23, point 2): NATOutgoingAddress
// ::ffff:198.18.0.9 (an IPv4-mapped address: FelixConfiguration's validation and felix's
// parser take it, see config's TestNATOutgoingAddressMapped) reaches the IPv4 table's NAT
// outgoing chain, a static chain, as a 16-byte SNAT target: the batch is refused and, with no
// quarantinable value in it, no apply ever succeeds: one FelixConfiguration field freezes every
// host it applies to.
func TestKernelNATOutgoingMappedAddress(t *testing.T) {
	tp := newTopology(t)
	tp.addWorkload(t, "a", ifA, ipA)
	startDataplane(t, tp, Config{NATOutgoingAddress: netip.MustParseAddr("::ffff:198.18.0.9")},
		natPool(false), egressAll(), kwep("a", ifA, ipA))
}
