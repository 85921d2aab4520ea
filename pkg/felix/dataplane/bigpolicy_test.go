package dataplane

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/felix/calc"
)

// sparsePorts returns n single ports that are not adjacent (2, 4, 6, ...), so that rendering
// cannot merge them into ranges.
func sparsePorts(n int) []calc.PortRange {
	out := make([]calc.PortRange, n)
	for i := range out {
		p := uint16(2 * (i + 1))
		out[i] = calc.PortRange{First: p, Last: p}
	}
	return out
}

// TestKernelSixThousandPorts: a policy whose one rule lists 6,000 single destination ports
// (valid for calicoctl) is programmed and enforced exactly: a listed port passes, the unlisted
// port next to it is dropped; and a workload added afterwards is still programmed.
func TestKernelSixThousandPorts(t *testing.T) {
	tp := newTopology(t)
	a := tp.addWorkload(t, "a", ifA, ipA)
	b := tp.addWorkload(t, "b", ifB, ipB)
	listenTCP(t, b, ipB, 8000)
	listenTCP(t, b, ipB, 8001)
	listenTCP(t, b, ipB, 11998)
	big := gnpID("big")
	k := startDataplane(t, tp, Config{},
		policy(big, []calc.Rule{{Action: calc.RuleAllow, Protocol: 6, DstPorts: sparsePorts(6000)}}, nil),
		egressAll(),
		kwep("a", ifA, ipA),
		kwep("b", ifB, ipB, tier("default", ids(big), nil)))
	tcp := func(port int) func() bool { return func() bool { return canTCP(t, a, ipB, port) } }
	check(t, "6,000 ports",
		expectation{"tcp 8000 (listed)", tcp(8000), true},
		expectation{"tcp 11998 (listed, last)", tcp(11998), true},
		expectation{"tcp 8001 (not listed)", tcp(8001), false})
	c := tp.addWorkload(t, "c", "cali0000000000c", "10.65.0.3")
	listenTCP(t, c, "10.65.0.3", 8001)
	k.send(profile("open", []calc.Rule{allow()}, []calc.Rule{allow()}),
		wep("c", "cali0000000000c", []string{"10.65.0.3/32"}, withProfiles("open")))
	k.requireProgrammed()
	check(t, "new workload",
		expectation{"tcp to c", func() bool { return canTCP(t, a, "10.65.0.3", 8001) }, true})
}

func sparseNets(n int, v6 bool) []netip.Prefix {
	out := make([]netip.Prefix, n)
	for i := range out {
		if v6 {
			out[i] = netip.MustParsePrefix(fmt.Sprintf("fd5c:%x:%x::/64", i/65536, (2*i)%65536))
		} else {
			out[i] = netip.MustParsePrefix(fmt.Sprintf("10.%d.%d.%d/32", 66+i/32768, (i/128)%256, (2*i)%256))
		}
	}
	return out
}

// TestKernelLargeLists: rules with tens of thousands of ports and nets (v4 and v6, positive and
// negated, source and destination) are accepted by the kernel.
func TestKernelLargeLists(t *testing.T) {
	applyTimeout = 2 * time.Minute // 20,000-element lists: seconds on a quiet machine, more on a loaded one
	t.Cleanup(func() { applyTimeout = 10 * time.Second })
	tp := newTopology(t)
	tp.addWorkload(t, "b", ifB, ipB)
	k := startDataplane(t, tp, Config{IPv6Support: true}, egressAll(), kwep("b", ifB, ipB))
	for i, r := range []calc.Rule{
		{Action: calc.RuleAllow, Protocol: 6, DstPorts: sparsePorts(20000)},
		{Action: calc.RuleAllow, Protocol: 6, SrcPorts: sparsePorts(6000), DstPorts: sparsePorts(6000), NotDstPorts: sparsePorts(6000), NotSrcPorts: sparsePorts(6000)},
		{Action: calc.RuleDeny, Protocol: 17, SrcNets: append(sparseNets(30000, false), sparseNets(30000, true)...), NotDstNets: sparseNets(30000, false)},
		{Action: calc.RuleDeny, DstNets: sparseNets(60000, false)},
	} {
		id := gnpID(fmt.Sprint("big", i))
		t.Logf("variant %d", i)
		k.send(policy(id, []calc.Rule{r}, []calc.Rule{r}), kwep("b", ifB, ipB, tier("default", ids(id), ids(id))))
		k.requireProgrammed()
	}
}
