package dataplane

import (
	"testing"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/netnstest"
)

// TestKernelEmptySetDenyFollowsDeltas: a deny that needs a member of an IP set is left out
// while the set has none in the table (h-pkt) and an apply after an IP set change skips the
// network step (h-speed). A delta alone that gives the set its first member (an IPv6 member
// first: still none in the ip table) must bring the deny back in the same apply, and the
// delta that removes it must take it out again; a negated lookup of the same set keeps
// matching everything while the set is empty. Real connections between namespaces.
func TestKernelEmptySetDenyFollowsDeltas(t *testing.T) {
	const ifC, ipC = "cali0000000000c", "10.65.0.3"
	tp := newTopology(t)
	a := tp.addWorkload(t, "a", ifA, ipA)
	b := tp.addWorkload(t, "b", ifB, ipB)
	c := tp.addWorkload(t, "c", ifC, ipC)
	listenTCP(t, b, ipB, 8080)
	listenTCP(t, b, ipB, 8081)
	deny, allow8080, notIn := gnpID("deny-x"), gnpID("allow-8080"), gnpID("allow-8081-not-x")
	k := startDataplane(t, tp, Config{},
		calc.IPSetUpdate{ID: "s:x", Type: calc.IPSetNet},
		policySel(deny, "all()", []calc.Rule{{Action: calc.RuleDeny, SrcIPSetIDs: []string{"s:x"}}}, nil),
		policySel(allow8080, "all()", []calc.Rule{{Action: calc.RuleAllow, Protocol: 6, DstPorts: ports(8080)}}, nil),
		policySel(notIn, "all()", []calc.Rule{{Action: calc.RuleAllow, Protocol: 6, DstPorts: ports(8081), NotSrcIPSetIDs: []string{"s:x"}}}, nil),
		egressAll(), kwep("a", ifA, ipA), kwep("c", ifC, ipC),
		kwep("b", ifB, ipB, tier("default", ids(deny, allow8080, notIn), nil)))
	k.requireProgrammed()
	tcp := func(from *netnstest.NS, port int) func() bool {
		return func() bool { return canTCP(t, from, ipB, port) }
	}
	check(t, "s:x empty",
		expectation{"a to 8080", tcp(a, 8080), true},
		expectation{"a to 8081 (not in s:x)", tcp(a, 8081), true})
	k.send(calc.IPSetDelta{ID: "s:x", Added: members("fd5c::1/128")})
	check(t, "s:x with an IPv6 member only",
		expectation{"a to 8080", tcp(a, 8080), true},
		expectation{"a to 8081 (not in s:x)", tcp(a, 8081), true})
	k.send(calc.IPSetDelta{ID: "s:x", Added: members(ipA + "/32")})
	k.requireProgrammed()
	check(t, "a joined s:x by a delta",
		expectation{"a to 8080: denied by deny-x", tcp(a, 8080), false},
		expectation{"a to 8081: denied by deny-x", tcp(a, 8081), false},
		expectation{"c to 8080", tcp(c, 8080), true},
		expectation{"c to 8081 (not in s:x)", tcp(c, 8081), true})
	k.send(calc.IPSetDelta{ID: "s:x", Removed: members(ipA + "/32")})
	check(t, "a left s:x by a delta",
		expectation{"a to 8080", tcp(a, 8080), true},
		expectation{"a to 8081 (not in s:x)", tcp(a, 8081), true})
}
