package api

import (
	"fmt"
	"regexp"
)

func validateBGPFilter(e *errs, s *BGPFilterSpec) {
	validateFilterRules(e, "spec.exportV4", s.ExportV4, 4)
	validateFilterRules(e, "spec.importV4", s.ImportV4, 4)
	validateFilterRules(e, "spec.exportV6", s.ExportV6, 6)
	validateFilterRules(e, "spec.importV6", s.ImportV6, 6)
}

// Unsupported lists the settings of a rule that are valid for Project Calico but that
// calico-host cannot enforce with Project Calico's meaning, with their field paths relative to
// the rule. calicoctl refuses to write them; calico-confd applies no part of a filter direction
// that has them, and the sessions using it exchange nothing in that direction.
//
//   - prefixLength with matchOperator Equal or NotEqual: BIRD 2 compares a prefix and a prefix set
//     as never equal, where Project Calico's BIRD stops the filter with an error (rejecting the
//     route); neither is a prefix-length match.
func (r *BGPFilterRule) Unsupported() []FieldError {
	if r.PrefixLength != nil && (r.MatchOperator == "Equal" || r.MatchOperator == "NotEqual") {
		return []FieldError{{Field: "prefixLength", Message: "a prefix length range cannot be applied with matchOperator " + r.MatchOperator}}
	}
	return nil
}

// Unsupported returns a *ValidationError listing the settings of r that are valid but that
// calico-host cannot enforce with Project Calico's meaning (see BGPFilterRule.Unsupported), or
// nil. Writers (calicoctl) refuse such objects.
func Unsupported(r Resource) error {
	if c, ok := r.(*IPAMConfiguration); ok && c.Spec.IPCooldownSeconds != 0 {
		return &ValidationError{Kind: "IPAMConfiguration", Name: c.Name, Errors: []FieldError{{Field: "spec.ipCooldownSeconds",
			Message: "IP cooldown is not implemented by calico-host's IPAM, which would reuse released addresses at once (not supported by calico-host)"}}}
	}
	f, ok := r.(*BGPFilter)
	if !ok {
		return nil
	}
	var list []FieldError
	for _, d := range []struct {
		field string
		rules []BGPFilterRule
	}{{"spec.exportV4", f.Spec.ExportV4}, {"spec.importV4", f.Spec.ImportV4}, {"spec.exportV6", f.Spec.ExportV6}, {"spec.importV6", f.Spec.ImportV6}} {
		for i := range d.rules {
			for _, u := range d.rules[i].Unsupported() {
				list = append(list, FieldError{Field: fmt.Sprintf("%s[%d].%s", d.field, i, u.Field), Message: u.Message + " (not supported by calico-host)"})
			}
		}
	}
	if len(list) == 0 {
		return nil
	}
	return &ValidationError{Kind: "BGPFilter", Name: f.Name, Errors: list}
}

// interfacePattern is Project Calico's grammar of an interface name pattern (BGPFilter rules,
// BGPConfiguration ignoredInterfaces): up to 15 characters, "*" as a wildcard.
var interfacePattern = regexp.MustCompile(`^[a-zA-Z0-9_.*-]{1,15}$`)

// IsInterfacePattern reports whether s is an interface name pattern Project Calico accepts.
func IsInterfacePattern(s string) bool { return interfacePattern.MatchString(s) }

// validateFilterRules checks rules as Project Calico does. A source on an import rule is
// redundant there (imported routes come from BGP peers) but valid.
func validateFilterRules(e *errs, field string, rules []BGPFilterRule, version int) {
	for i := range rules {
		r, f := &rules[i], fmt.Sprintf("%s[%d]", field, i)
		validateOneOf(e, f+".action", r.Action, "Accept", "Reject")
		validateFilterMatch(e, f, r, version)
		if r.Source != "" {
			validateOneOf(e, f+".source", r.Source, "RemotePeers")
		}
		if r.Interface != "" && !IsInterfacePattern(r.Interface) {
			e.add(f+".interface", "invalid interface pattern %q", r.Interface)
		}
		if r.PeerType != "" {
			validateOneOf(e, f+".peerType", r.PeerType, "eBGP", "iBGP")
		}
		validateRange(e, f+".priority", r.Priority, 1, 2147483646)
		if r.Communities != nil {
			if len(r.Communities.Values) != 1 {
				e.add(f+".communities.values", "exactly one community value is required, not %d", len(r.Communities.Values))
			}
			for j, c := range r.Communities.Values {
				validateCommunity(e, fmt.Sprintf("%s.communities.values[%d]", f, j), c)
			}
		}
		validateFilterOperations(e, f, r)
	}
}

// validateFilterMatch checks the CIDR match: cidr and matchOperator go together, and a prefix
// length range needs a cidr and stays within the family's bits.
func validateFilterMatch(e *errs, f string, r *BGPFilterRule, version int) {
	if r.CIDR != "" {
		validateNets(e, f+".cidr", []string{r.CIDR}, version)
	}
	if (r.CIDR == "") != (r.MatchOperator == "") {
		e.add(f, "cidr and matchOperator must be set together")
	}
	if r.MatchOperator != "" {
		validateOneOf(e, f+".matchOperator", r.MatchOperator, "Equal", "NotEqual", "In", "NotIn")
	}
	if pl := r.PrefixLength; pl != nil {
		if r.CIDR == "" {
			e.add(f+".prefixLength", "prefixLength requires cidr")
		}
		bits := 32
		if version == 6 {
			bits = 128
		}
		validateRange(e, f+".prefixLength.min", pl.Min, 0, bits)
		validateRange(e, f+".prefixLength.max", pl.Max, 0, bits)
	}
}

func validateFilterOperations(e *errs, f string, r *BGPFilterRule) {
	if len(r.Operations) > 0 && r.Action != "Accept" {
		e.add(f+".operations", "operations may only be used with action Accept")
	}
	if len(r.Operations) > 10 {
		e.add(f+".operations", "at most 10 operations are allowed, not %d", len(r.Operations))
	}
	for j, op := range r.Operations {
		of := fmt.Sprintf("%s.operations[%d]", f, j)
		n := 0
		if op.AddCommunity != nil {
			n++
			validateCommunity(e, of+".addCommunity.value", op.AddCommunity.Value)
		}
		if op.PrependASPath != nil {
			n++
			if l := len(op.PrependASPath.Prefix); l < 1 || l > 10 {
				e.add(of+".prependASPath.prefix", "1 to 10 AS numbers are required, not %d", l)
			}
		}
		if op.SetPriority != nil {
			n++
			v := op.SetPriority.Value
			validateRange(e, of+".setPriority.value", &v, 1, 2147483646)
		}
		if n != 1 {
			e.add(of, "exactly one operation must be set, not %d", n)
		}
	}
}
