package calc

import (
	"reflect"
	"slices"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/api"
)

// profileCalc keeps every profile, starting with the built-in projectcalico-default-allow. A
// profile is active while a local endpoint lists it; an
// active profile that does not exist is sent with no rules (it matches nothing, so the endpoint
// falls through to its final drop, as it would without the profile), which keeps every ID an
// endpoint refers to defined in the dataplane. labelsToApply go to the item registry for
// label inheritance.
type profileCalc struct {
	log      zerolog.Logger
	profiles map[string]*api.ProfileSpec
	refs     map[string]map[string]struct{} // profile -> local endpoint item IDs
	dirty    map[string]struct{}
	rendered map[string]*renderedRules
	ipsets   *ipSetCalc
	registry *itemRegistry
}

func newProfileCalc(log zerolog.Logger, ipsets *ipSetCalc, registry *itemRegistry) *profileCalc {
	builtin := api.DefaultAllowProfileSpec()
	return &profileCalc{
		log:      log,
		profiles: map[string]*api.ProfileSpec{api.DefaultAllowProfileName: &builtin},
		refs:     map[string]map[string]struct{}{},
		dirty:    map[string]struct{}{},
		rendered: map[string]*renderedRules{},
		ipsets:   ipsets,
		registry: registry,
	}
}

// update records a profile (spec nil when deleted). Project Calico's built-in
// projectcalico-default-allow (allow all, never stored in etcd) always exists: as Project
// Calico's client, we ignore a key of that name.
func (c *profileCalc) update(name string, spec *api.ProfileSpec) {
	if api.IsDefaultAllowProfile(name) {
		c.log.Warn().Str("profile", name).Msg("Ignoring a stored profile with the name of the built-in allow-all profile")
		return
	}
	if spec == nil {
		delete(c.profiles, name)
		c.registry.setProfileLabels(name, nil)
	} else {
		c.profiles[name] = spec
		c.registry.setProfileLabels(name, spec.LabelsToApply)
	}
	if _, ok := c.refs[name]; ok {
		c.dirty[name] = struct{}{}
	}
}

// setRefs moves a local endpoint's references from the profiles in prev to those in cur.
func (c *profileCalc) setRefs(itemID string, prev, cur []string) {
	for _, p := range prev {
		if !slices.Contains(cur, p) {
			removeFromSet(c.refs, p, itemID)
			c.dirty[p] = struct{}{}
		}
	}
	for _, p := range cur {
		if !slices.Contains(prev, p) {
			addToSet(c.refs, p, itemID)
			c.dirty[p] = struct{}{}
		}
	}
}

// flush renders the profiles that became active or changed and withdraws unused ones.
func (c *profileCalc) flush() (updates, removes []Update) {
	for _, name := range sortedKeys(c.dirty) {
		prev := c.rendered[name]
		if _, active := c.refs[name]; !active {
			if prev != nil {
				c.ipsets.swapRefs(nil, prev.sets)
				delete(c.rendered, name)
				removes = append(removes, ActiveProfileRemove{Name: name})
			}
			continue
		}
		if u := c.render(name, prev); u != nil {
			updates = append(updates, *u)
		}
	}
	clear(c.dirty)
	return updates, removes
}

func (c *profileCalc) render(name string, prev *renderedRules) *ActiveProfileUpdate {
	r := &ruleRenderer{log: c.log.With().Str("profile", name).Logger(), sets: map[string]ipSetSpec{}}
	prof := &Profile{}
	if spec := c.profiles[name]; spec != nil {
		prof.InboundRules = r.renderRules("ingress", spec.Ingress)
		prof.OutboundRules = r.renderRules("egress", spec.Egress)
	}
	var prevSets map[string]ipSetSpec
	if prev != nil {
		prevSets = prev.sets
	}
	c.ipsets.swapRefs(r.sets, prevSets)
	c.rendered[name] = &renderedRules{sets: r.sets, profile: prof}
	if prev != nil && reflect.DeepEqual(prev.profile, prof) {
		return nil
	}
	return &ActiveProfileUpdate{Name: name, Profile: prof}
}
