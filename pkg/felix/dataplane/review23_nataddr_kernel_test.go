package dataplane

import (
	"net/netip"
	"testing"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/rules"
	"github.com/calico-host/calico-host/pkg/nft"
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

// TestKernelServiceCIDRMapped (review of issue 23, point 2): BGPConfiguration default with a
// service cluster IP block written as an IPv4-mapped prefix (::ffff:198.19.96.0/120, valid)
// reaches the IPv4 table's service loop chain (a static chain) as an IPv6 match: the batch is
// refused and no later apply succeeds; a deny written afterwards is never enforced.
func TestKernelServiceCIDRMapped(t *testing.T) {
	tp := newTopology(t)
	a := tp.addWorkload(t, "a", ifA, ipA)
	listenTCP(t, tp.host, "198.18.0.1", 8080)
	ka, va := rawWEP("a", ifA, ipA, "", `"allow-all"`)
	f := startEtcdFelix(t, tp, map[string]string{ka: va,
		"profiles/allow-all": `{"kind":"Profile","apiVersion":"projectcalico.org/v3","metadata":{"name":"allow-all"},
		  "spec":{"ingress":[{"action":"Allow"}],"egress":[{"action":"Allow"}]}}`})
	f.apply(f.put("bgpconfigurations/default", `{"kind":"BGPConfiguration","apiVersion":"projectcalico.org/v3",
	  "metadata":{"name":"default"},"spec":{"serviceClusterIPs":[{"cidr":"::ffff:198.19.96.0/120"}]}}`))
	f.apply(f.put("globalnetworkpolicies/deny-a", `{"kind":"GlobalNetworkPolicy","apiVersion":"projectcalico.org/v3",
	  "metadata":{"name":"deny-a"},"spec":{"selector":"all()","types":["Egress"],"egress":[{"action":"Deny"}]}}`))
	check(t, "a deny written after the BGPConfiguration", expectation{"a -> host:8080", func() bool { return canTCP(t, a, "198.18.0.1", 8080) }, false})
}

// TestKernelFailsafeMappedNetOnlyItself (review of issue 23, point 2): a failsafe entry whose
// network is IPv4-mapped (tcp:::ffff:198.18.0.0/120:7001) cannot be rendered into the IPv4
// failsafe chain; it alone should fail closed, the other failsafe entries (tcp:22) staying open.
func TestKernelFailsafeMappedNetOnlyItself(t *testing.T) {
	tp := newTopology(t)
	for _, port := range []int{22, 7001} {
		listenTCP(t, tp.host, "0.0.0.0", port)
	}
	hep := calc.HostEndpointUpdate{Endpoint: &calc.HostEndpoint{Name: "host1-eth0", InterfaceName: "eth0"}}
	cfg := Config{FailsafeInbound: []rules.ProtoPort{{Protocol: nft.ProtoTCP, Port: 22},
		{Protocol: nft.ProtoTCP, Port: 7001, Net: netip.MustParsePrefix("::ffff:198.18.0.0/120")}}, FailsafeOutbound: []rules.ProtoPort{}}
	startDataplane(t, tp, cfg, hep)
	check(t, "a failsafe entry with an IPv4-mapped network",
		expectation{"in 22 (another failsafe entry)", func() bool { return canTCP(t, tp.fabric, "198.18.0.1", 22) }, true})
}
