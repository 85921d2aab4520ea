package policydiff

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/calico-host/calico-host/pkg/api"
)

// Shrinking: given a universe and one packet whose fate on the real felix differs from the
// evaluator's, drop objects, rules and rule fields one at a time, keeping each removal after
// which the real felix still disagrees with the evaluator, until no removal keeps the
// disagreement. The harness objects (control tier, sentinels) and the local endpoints stay.

// clone deep-copies a universe (through JSON).
func (u *Universe) clone() *Universe {
	b, err := json.Marshal(u)
	if err != nil {
		panic(err)
	}
	var c Universe
	if err := json.Unmarshal(b, &c); err != nil {
		panic(err)
	}
	return &c
}

// edit is one candidate simplification; it reports false when it does not apply.
type edit func(u *Universe) bool

// edits lists the candidate simplifications of a universe, biggest first.
func edits(u *Universe) []edit {
	var out []edit
	for i := range u.GNPs {
		out = append(out, func(u *Universe) bool {
			if i >= len(u.GNPs) || u.GNPs[i].Spec.Tier == controlTier {
				return false
			}
			u.GNPs = remove(u.GNPs, i)
			return true
		})
	}
	for i := range u.NPs {
		out = append(out, func(u *Universe) bool { u.NPs = remove(u.NPs, i); return true })
	}
	for i := range u.GNSs {
		out = append(out, func(u *Universe) bool { u.GNSs = remove(u.GNSs, i); return true })
	}
	for i := range u.NSs {
		out = append(out, func(u *Universe) bool { u.NSs = remove(u.NSs, i); return true })
	}
	for i := range u.WEPs {
		out = append(out, func(u *Universe) bool {
			if i >= len(u.WEPs) || u.WEPs[i].Spec.Node == localNode {
				return false
			}
			u.WEPs = remove(u.WEPs, i)
			return true
		})
	}
	for i := range u.HEPs {
		out = append(out, func(u *Universe) bool { u.HEPs = remove(u.HEPs, i); return true })
	}
	for i := range u.GNPs {
		out = append(out, func(u *Universe) bool {
			return i < len(u.GNPs) && u.GNPs[i].Spec.Tier != controlTier && clearFlag(&u.GNPs[i].Spec.ApplyOnForward)
		})
	}
	out = append(out, ruleEdits(u)...)
	out = append(out, endpointEdits(u)...)
	return append(out, hostEndpointEdits(u)...)
}

func remove[T any](s []T, i int) []T {
	if i >= len(s) {
		return s
	}
	return append(append([]T(nil), s[:i]...), s[i+1:]...)
}

// ruleLists returns pointers to every rule list of the random objects.
func ruleLists(u *Universe) []*[]api.Rule {
	var out []*[]api.Rule
	for _, p := range u.GNPs {
		if p.Spec.Tier != controlTier {
			out = append(out, &p.Spec.Ingress, &p.Spec.Egress)
		}
	}
	for _, p := range u.NPs {
		out = append(out, &p.Spec.Ingress, &p.Spec.Egress)
	}
	for _, p := range u.Profiles {
		out = append(out, &p.Spec.Ingress, &p.Spec.Egress)
	}
	return out
}

// ruleEdits removes whole rules, then single match fields (keeping every rule valid).
func ruleEdits(u *Universe) []edit {
	var out []edit
	for li, l := range ruleLists(u) {
		for ri := range *l {
			out = append(out, func(u *Universe) bool {
				r := ruleAt(u, li, ri)
				if r == nil {
					return false
				}
				l := ruleLists(u)[li]
				*l = remove(*l, ri)
				return true
			})
			for _, f := range fieldClearers {
				out = append(out, func(u *Universe) bool {
					r := ruleAt(u, li, ri)
					return r != nil && f(r)
				})
			}
		}
	}
	return out
}

// ruleAt is rule ri of rule list li, or nil when an earlier edit removed it.
func ruleAt(u *Universe, li, ri int) *api.Rule {
	lists := ruleLists(u)
	if li >= len(lists) || ri >= len(*lists[li]) {
		return nil
	}
	return &(*lists[li])[ri]
}

// fieldClearers each clear one match field of a rule if that keeps it valid.
var fieldClearers = []func(r *api.Rule) bool{
	func(r *api.Rule) bool { return clear(&r.Source.Selector) },
	func(r *api.Rule) bool { return clear(&r.Source.NotSelector) },
	func(r *api.Rule) bool { return clear(&r.Source.NamespaceSelector) },
	func(r *api.Rule) bool { return clear(&r.Destination.Selector) },
	func(r *api.Rule) bool { return clear(&r.Destination.NotSelector) },
	func(r *api.Rule) bool { return clear(&r.Destination.NamespaceSelector) },
	func(r *api.Rule) bool { return clearList(&r.Source.Nets) },
	func(r *api.Rule) bool { return clearList(&r.Source.NotNets) },
	func(r *api.Rule) bool { return clearList(&r.Destination.Nets) },
	func(r *api.Rule) bool { return clearList(&r.Destination.NotNets) },
	func(r *api.Rule) bool { return clearList(&r.Source.Ports) },
	func(r *api.Rule) bool { return clearList(&r.Source.NotPorts) },
	func(r *api.Rule) bool { return clearList(&r.Destination.Ports) },
	func(r *api.Rule) bool { return clearList(&r.Destination.NotPorts) },
	func(r *api.Rule) bool { return clearPtr(&r.ICMP) },
	func(r *api.Rule) bool { return clearPtr(&r.NotICMP) },
	func(r *api.Rule) bool { return clearPtr(&r.NotProtocol) },
	func(r *api.Rule) bool { return clearPtr(&r.IPVersion) },
	func(r *api.Rule) bool {
		if r.ICMP != nil || r.NotICMP != nil || len(r.Source.Ports)+len(r.Source.NotPorts)+len(r.Destination.Ports)+len(r.Destination.NotPorts) > 0 {
			return false // ports and ICMP fields need the protocol
		}
		return clearPtr(&r.Protocol)
	},
}

func clear(s *string) bool {
	if *s == "" {
		return false
	}
	*s = ""
	return true
}

func clearFlag(b *bool) bool {
	if !*b {
		return false
	}
	*b = false
	return true
}

func clearList[T any](l *[]T) bool {
	if len(*l) == 0 {
		return false
	}
	*l = nil
	return true
}

func clearPtr[T any](p **T) bool {
	if *p == nil {
		return false
	}
	*p = nil
	return true
}

// endpointEdits drop endpoint labels, ports and profile references, and unused profiles.
func endpointEdits(u *Universe) []edit {
	var out []edit
	for wi, w := range u.WEPs {
		for _, k := range sortedLabelKeys(w.Labels) {
			if k == api.LabelNamespace || k == "projectcalico.org/orchestrator" || k == "sentinel" {
				continue
			}
			out = append(out, func(u *Universe) bool {
				if wi >= len(u.WEPs) {
					return false
				}
				if _, ok := u.WEPs[wi].Labels[k]; !ok {
					return false
				}
				delete(u.WEPs[wi].Labels, k)
				return true
			})
		}
		out = append(out, func(u *Universe) bool { return wi < len(u.WEPs) && clearList(&u.WEPs[wi].Spec.Ports) })
		out = append(out, func(u *Universe) bool { return wi < len(u.WEPs) && clearList(&u.WEPs[wi].Spec.Profiles) })
	}
	for pi := range u.Profiles {
		out = append(out, func(u *Universe) bool {
			if pi >= len(u.Profiles) {
				return false
			}
			name := u.Profiles[pi].Name
			for _, w := range u.WEPs {
				if slices.Contains(w.Spec.Profiles, name) {
					return false // still referenced
				}
			}
			for _, h := range u.HEPs {
				if slices.Contains(h.Spec.Profiles, name) {
					return false
				}
			}
			u.Profiles = remove(u.Profiles, pi)
			return true
		})
	}
	return out
}

// hostEndpointEdits drop host endpoint labels (not hep, which the harness selects on),
// profile references and expected IPs.
func hostEndpointEdits(u *Universe) []edit {
	var out []edit
	for hi, h := range u.HEPs {
		for _, k := range sortedLabelKeys(h.Labels) {
			out = append(out, func(u *Universe) bool {
				if hi >= len(u.HEPs) {
					return false
				}
				if _, ok := u.HEPs[hi].Labels[k]; !ok {
					return false
				}
				delete(u.HEPs[hi].Labels, k)
				return true
			})
		}
		out = append(out, func(u *Universe) bool { return hi < len(u.HEPs) && clearList(&u.HEPs[hi].Spec.Profiles) })
		out = append(out, func(u *Universe) bool { return hi < len(u.HEPs) && clearList(&u.HEPs[hi].Spec.ExpectedIPs) })
	}
	return out
}

func sortedLabelKeys(m map[string]string) []string {
	var keys []string
	for _, k := range []string{"a", "b", "c"} {
		if _, ok := m[k]; ok {
			keys = append(keys, k)
		}
	}
	return keys
}

// Shrink reduces a universe while the real felix keeps disagreeing with the evaluator on p.
// It returns the smallest universe found and the number of dataplane runs it took.
func (rn *runner) Shrink(ctx context.Context, u *Universe, p Probe, budget int) (*Universe, int, error) {
	runs := 0
	for changed := true; changed && runs < budget; {
		changed = false
		for _, e := range edits(u) {
			if ctx.Err() != nil {
				return u, runs, ctx.Err()
			}
			if runs >= budget {
				break
			}
			c := u.clone()
			if !e(c) {
				continue
			}
			runs++
			still, err := rn.disagrees(ctx, c, p, runs)
			if err != nil {
				return u, runs, err
			}
			if still {
				u, changed = c, true
			}
		}
	}
	return u, runs, nil
}

// disagrees applies u and reports whether felix's fate for p differs from the evaluator's.
func (rn *runner) disagrees(ctx context.Context, u *Universe, p Probe, n int) (bool, error) {
	ev, err := NewEvaluator(u)
	if err != nil {
		return false, fmt.Errorf("shrunk universe: %w", err)
	}
	// Scenario indexes from 50000 on keep the sentinel ports of shrinking apart.
	sc := &scenario{Index: 50000 + n%10000, U: u, Ev: ev}
	setSentinelPort(u, sc.Index)
	sc.add(Probe{Packet: p.Packet, From: p.From, To: p.To})
	out, err := rn.Run(ctx, sc)
	if err != nil {
		return false, err
	}
	return out[0].Mismatch(), nil
}

// setSentinelPort points the universe's sentinel policy at the scenario's sentinel port.
func setSentinelPort(u *Universe, idx int) {
	for _, p := range u.GNPs {
		if p.Name == controlTier+".sentinel" {
			p.Spec.Ingress = sentinelIngress(idx)
		}
	}
}
