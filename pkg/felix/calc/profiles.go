package calc

import (
	"reflect"
	"slices"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/api"
)

// profileCalc keeps every profile, starting with the built-in projectcalico-default-allow. A
// profile is active while a local endpoint lists it. As in Project Calico, an active profile
// that does not exist (not stored, or deleted while endpoints still name it) is sent with a
// drop-all rule in each direction, and so is one that failed validation: either stops the
// endpoint's profile walk there (a later profile never decides), which keeps every ID an
// endpoint refers to defined in the dataplane. labelsToApply go to the item registry for label
// inheritance (those of an invalid profile as written: they are plain strings to selectors).
type profileCalc struct {
	log      zerolog.Logger
	profiles map[string]*api.ProfileSpec
	invalid  map[string]string              // profile -> why it failed validation
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
		invalid:  map[string]string{},
		refs:     map[string]map[string]struct{}{},
		dirty:    map[string]struct{}{},
		rendered: map[string]*renderedRules{},
		ipsets:   ipsets,
		registry: registry,
	}
}

// update records a profile (spec nil when deleted; invalid non-nil when it failed validation).
// Project Calico's built-in projectcalico-default-allow (allow all, never stored in etcd)
// always exists: as Project Calico's client, we ignore a key of that name.
func (c *profileCalc) update(name string, spec *api.ProfileSpec, invalid error) {
	if api.IsDefaultAllowProfile(name) {
		c.log.Warn().Str("profile", name).Msg("Ignoring a stored profile with the name of the built-in allow-all profile")
		return
	}
	delete(c.invalid, name)
	if spec == nil {
		delete(c.profiles, name)
		c.registry.setProfileLabels(name, nil)
	} else {
		c.profiles[name] = spec
		c.registry.setProfileLabels(name, spec.LabelsToApply)
		if invalid != nil {
			c.invalid[name] = "profile failed validation: " + invalid.Error()
		}
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
	prof := c.dropAll(name)
	if prof == nil {
		spec := c.profiles[name]
		prof = &Profile{InboundRules: r.renderRules("ingress", spec.Ingress), OutboundRules: r.renderRules("egress", spec.Egress)}
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

// dropAll returns the drop-all rules that stand for an active profile that does not exist
// (logged here) or failed validation (logged with its key as it arrives), or nil for a valid
// one. An invalid profile's rules carry the reason, so that the dataplane reports them.
func (c *profileCalc) dropAll(name string) *Profile {
	deny := Rule{Action: RuleDeny}
	if why, bad := c.invalid[name]; bad {
		deny.Invalid = why
	} else if c.profiles[name] == nil {
		c.log.Warn().Str("profile", name).
			Msg("Endpoints name a profile that does not exist; it drops all traffic in both directions")
	} else {
		return nil
	}
	return &Profile{InboundRules: []Rule{deny}, OutboundRules: []Rule{deny}}
}
