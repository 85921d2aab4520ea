package calc

import (
	"testing"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// TestDefaultAllowProfile: Project Calico's built-in projectcalico-default-allow is never in
// etcd, yet an endpoint naming it gets an allow-all profile (one Allow rule each way). A stored
// key of that name does not change it, and deleting that key does not remove it.
func TestDefaultAllowProfile(t *testing.T) {
	name := api.DefaultAllowProfileName
	g, m := newTestGraph("h1"), newModel()
	snapshot(g,
		wep("ns1", "h1", "a", nil, []string{"10.65.0.1/32"}, withProfiles(name)),
		hep("eth0", "h1", "eth0", nil, []string{"198.18.0.1"}, name))
	steps := []struct {
		name string
		ups  []syncer.Update
	}{
		{"not in etcd", nil},
		{"a stored key of that name", []syncer.Update{profile(name, nil, []api.Rule{rule("Deny")}, []api.Rule{rule("Deny")})}},
		{"that key deleted", []syncer.Update{del(resKey("profiles", "", name))}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			feed(g, st.ups...)
			flushInto(t, g, m)
			p := m.Profiles[name]
			if p == nil {
				t.Fatal("the built-in profile was not sent")
			}
			for dir, rules := range map[string][]Rule{"inbound": p.InboundRules, "outbound": p.OutboundRules} {
				if len(rules) != 1 || rules[0].Action != "allow" {
					t.Errorf("%s rules %+v, want one allow rule", dir, rules)
				}
			}
			if w := m.WEPs[wepID("ns1", "a")]; w == nil || len(w.ProfileIDs) != 1 || w.ProfileIDs[0] != name {
				t.Errorf("endpoint %+v", w)
			}
		})
	}
	feed(g, wep("ns1", "h1", "a", nil, []string{"10.65.0.1/32"}), del(resKey("hostendpoints", "", "eth0")))
	flushInto(t, g, m)
	if _, ok := m.Profiles[name]; ok {
		t.Error("the built-in profile stays active after its last endpoint dropped it")
	}
}
