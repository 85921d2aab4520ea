package calc

import (
	"cmp"
	"math"
	"slices"

	"github.com/calico-host/calico-host/pkg/api"
)

// tierInfo is a tier as the ordering needs it.
type tierInfo struct {
	order         *float64
	defaultAction string // "Deny" or "Pass"
	missing       bool   // no Tier object (nor an implicit one): after every other tier
}

// missingTier is a tier whose policies exist without its Tier object (never written, deleted,
// or undecodable). As in Project Calico's felix (its policy resolver applies the policies of
// such a tier too, its sorter puts the tier after every known one), the policies apply, after
// every other tier, and what they do not decide is dropped: left out, their deny rules would
// vanish.
var missingTier = tierInfo{defaultAction: api.ActionDeny, missing: true}

// implicitTiers are used when their Tier object is absent: Project Calico's node startup creates
// them, and policies written by tools that do not (networking-calico) still land in default.
var implicitTiers = map[string]tierInfo{
	api.TierDefault: {order: ptr(1e6), defaultAction: api.ActionDeny},
	"kube-admin":    {order: ptr(1e3), defaultAction: api.ActionPass},
	"kube-baseline": {order: ptr(1e7), defaultAction: api.ActionPass},
}

func ptr[T any](v T) *T { return &v }

// tierFromAPI converts a Tier object.
func tierFromAPI(t *api.Tier) tierInfo {
	ti := tierInfo{order: t.Spec.Order, defaultAction: api.ActionDeny}
	if t.Spec.DefaultAction == api.ActionPass {
		ti.defaultAction = api.ActionPass
	}
	return ti
}

func (a tierInfo) equal(b tierInfo) bool {
	return a.defaultAction == b.defaultAction && a.missing == b.missing && (a.order == b.order ||
		a.order != nil && b.order != nil && *a.order == *b.order)
}

// compareTiers orders tiers by order ascending (no order last), then by name; missing tiers
// come after all others.
func compareTiers(an string, a tierInfo, bn string, b tierInfo) int {
	switch {
	case a.missing != b.missing:
		if a.missing {
			return 1
		}
		return -1
	case a.order == nil && b.order != nil:
		return 1
	case a.order != nil && b.order == nil:
		return -1
	case a.order != nil && *a.order != *b.order:
		return cmp.Compare(*a.order, *b.order)
	}
	return cmp.Compare(an, bn)
}

// policyOrder is a policy's order for sorting: +Inf when unset.
func policyOrder(o *float64) float64 {
	if o == nil {
		return math.Inf(1)
	}
	return *o
}

// comparePolicies orders the policies of one tier by order ascending, then by the string
// "<name>/<namespace>/<kind>" (felix's policy sorter, PolKVLess).
func comparePolicies(a, b *policyInfo) int {
	if a.order != b.order {
		return cmp.Compare(a.order, b.order)
	}
	return cmp.Compare(a.sortKey, b.sortKey)
}

// tierLists are the resolved tiers of an endpoint, per kind of policy. Workload endpoints use
// only normal.
type tierLists struct {
	normal, untracked, preDNAT, forward []TierInfo
}

// buildTierLists sorts the given policies and groups them into tiers for
// each kind of policy.
func (c *policyCalc) buildTierLists(pols []*policyInfo, host bool) tierLists {
	slices.SortFunc(pols, func(a, b *policyInfo) int {
		if a.id.Tier != b.id.Tier {
			return compareTiers(a.id.Tier, c.tier(a.id.Tier), b.id.Tier, c.tier(b.id.Tier))
		}
		return comparePolicies(a, b)
	})
	var out tierLists
	for _, p := range pols {
		t := c.tier(p.id.Tier)
		switch {
		case !host:
			out.normal = appendToTier(out.normal, p, t, true)
		case p.view.DoNotTrack:
			out.untracked = appendToTier(out.untracked, p, t, true)
		case p.view.PreDNAT:
			out.preDNAT = appendToTier(out.preDNAT, p, t, false)
		default:
			out.normal = appendToTier(out.normal, p, t, true)
			if p.view.ApplyOnForward {
				out.forward = appendToTier(out.forward, p, t, true)
			}
		}
	}
	return out
}

// appendToTier adds p to the last tier of list, starting a new tier when p's differs.
func appendToTier(list []TierInfo, p *policyInfo, t tierInfo, egress bool) []TierInfo {
	if len(list) == 0 || list[len(list)-1].Name != p.id.Tier {
		list = append(list, TierInfo{Name: p.id.Tier, DefaultAction: t.defaultAction})
	}
	ti := &list[len(list)-1]
	if p.ingress {
		ti.IngressPolicies = append(ti.IngressPolicies, p.id)
	}
	if p.egress && egress {
		ti.EgressPolicies = append(ti.EgressPolicies, p.id)
	}
	return list
}
