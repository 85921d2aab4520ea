package api

import "fmt"

func validateBGPFilter(e *errs, s *BGPFilterSpec) {
	validateFilterRules(e, "spec.exportV4", s.ExportV4, 4, false)
	validateFilterRules(e, "spec.importV4", s.ImportV4, 4, true)
	validateFilterRules(e, "spec.exportV6", s.ExportV6, 6, false)
	validateFilterRules(e, "spec.importV6", s.ImportV6, 6, true)
}

func validateFilterRules(e *errs, field string, rules []BGPFilterRule, version int, isImport bool) {
	for i := range rules {
		r, f := &rules[i], fmt.Sprintf("%s[%d]", field, i)
		validateOneOf(e, f+".action", r.Action, "Accept", "Reject")
		validateFilterMatch(e, f, r, version)
		if r.Source != "" {
			if isImport {
				e.add(f+".source", "source is not applicable to import rules")
			} else {
				validateOneOf(e, f+".source", r.Source, "RemotePeers")
			}
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
