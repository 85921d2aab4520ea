package dataplane

import (
	"slices"
	"sort"
	"strings"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/rules"
	"github.com/calico-host/calico-host/pkg/nft"
)

// describe names the source of a chain or set of the tables for the quarantine: its metric
// label (policy, profile, endpoint, set; endpoint or failsafe for a user value of the static
// chains) and a description naming the objects (kind/name). The label is empty for what may not
// be quarantined (the static chains, maps, internal sets).
func (b *rulesetBuilder) describe(kind nft.ObjectKind, name string) (label, what string) {
	switch kind {
	case objectSource:
		return b.describeSource(name)
	case nft.ObjectSet:
		if !b.calcSets[name] {
			return "", ""
		}
		for id, names := range b.setNames {
			if names[0] == name || names[1] == name {
				return "set", "IP set " + id + " (" + name + ")"
			}
		}
	case nft.ObjectChain:
		if e := b.refOf(name); e != nil {
			return describeRef(e.ref)
		}
		if b.wlChains[name] > 0 {
			return "endpoint", "WorkloadEndpoint " + strings.Join(b.wepsUsing(name), ", ")
		}
	}
	return "", ""
}

// refOf finds the group or profile entry a chain belongs to (its own chain or one of the
// protocol chains it split into).
func (b *rulesetBuilder) refOf(name string) *refEntry {
	if e := b.refs[name]; e != nil {
		return e
	}
	for _, e := range b.refs {
		if slices.Contains(e.protoChains[0], name) || slices.Contains(e.protoChains[1], name) {
			return e
		}
	}
	return nil
}

func describeRef(r rules.Ref) (string, string) {
	if r.Profile != "" {
		return "profile", "Profile " + r.Profile
	}
	names := make([]string, len(r.Group))
	for i, id := range r.Group {
		names[i] = policyKind(id) + " " + policyObjectName(id)
	}
	return "policy", strings.Join(names, ", ")
}

// policyKind is the resource kind of a policy ID.
func policyKind(id calc.PolicyID) string {
	if id.Kind == "np" {
		return "NetworkPolicy"
	}
	return "GlobalNetworkPolicy"
}

func policyObjectName(id calc.PolicyID) string {
	if id.Namespace != "" {
		return id.Namespace + "/" + id.Name
	}
	return id.Name
}

// wepsUsing lists the installed endpoints whose chains include name.
func (b *rulesetBuilder) wepsUsing(name string) []string {
	var out []string
	for id, e := range b.weps {
		if !e.installed {
			continue
		}
		for _, wc := range e.ep {
			if wc.Chain != nil && wc.Chain.Name == name {
				out = append(out, id.WorkloadID+"/"+id.EndpointID)
				break
			}
		}
	}
	sort.Strings(out)
	if len(out) > 5 {
		out = append(out[:5], "...")
	}
	return out
}
