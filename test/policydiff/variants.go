package policydiff

// Variant is a set of known divergences of our felix from Project Calico. Each one has a
// regression test in known_test.go; the evaluator can model it so that the differential test
// can tell a known divergence from a new one.
type Variant struct {
	// NegatedNetsOtherFamily: a rule whose notNets (source or destination) hold only CIDRs of
	// the other IP family. Project Calico leaves such a rule out of that family's ruleset
	// altogether (felix/rules/policy.go FilterRuleToIPVersion: filterNets reports "filtered
	// all" for a non-empty list with no CIDR of the family, negated or not), so for example
	// "Allow, destination notNets [fd5c:1:1::/64]" never matches an IPv4 packet. Our felix
	// treats the list as no constraint and applies the rule to the other family.
	NegatedNetsOtherFamily bool
}

// knownVariant is every known divergence at once.
var knownVariant = Variant{NegatedNetsOtherFamily: true}
