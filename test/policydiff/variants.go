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

	// NotSelectorFolded: an entity rule with both a selector (including the namespace
	// restriction libcalico-go adds for a NetworkPolicy) and a notSelector. Project Calico
	// matches "address in the IP set of the selector AND address not in the IP set of the
	// notSelector", each set being the union of the addresses of the endpoints and the nets of
	// the network sets it picks. Our felix renders one set of the items matching
	// "selector && !notSelector", so an address that a network set (or another endpoint)
	// picked by the notSelector covers is no longer excluded.
	NotSelectorFolded bool

	// NotICMPTypeAndCodeSkipped: a rule with notICMP giving both a type and a code. Project
	// Calico matches ICMP packets other than that type and code. Our felix logs "a negated ICMP
	// type and code match is not supported" and leaves the whole rule out, so a Deny rule of
	// that shape denies nothing.
	NotICMPTypeAndCodeSkipped bool
}

// knownVariant is every known divergence at once.
var knownVariant = Variant{NegatedNetsOtherFamily: true, NotSelectorFolded: true, NotICMPTypeAndCodeSkipped: true}

// singleVariants names each known divergence alone, to count what each one explains.
var singleVariants = map[string]Variant{
	"NegatedNetsOtherFamily":    {NegatedNetsOtherFamily: true},
	"NotSelectorFolded":         {NotSelectorFolded: true},
	"NotICMPTypeAndCodeSkipped": {NotICMPTypeAndCodeSkipped: true},
}
