package calc

import "testing"

func TestItemInherits(t *testing.T) {
	it := &item{parents: []string{"net1"}, ns: "ns-1", sa: "build.bot"}
	for name, want := range map[string]bool{
		"net1": true, "net2": false,
		"kns.ns-1": true, "kns.ns-2": false, "kns.ns": false,
		"ksa.ns-1.build.bot": true, "ksa.ns-1.build": false, "ksa.ns-1.build.bot2": false, "ksa.ns-2.build.bot": false,
		"ksa.ns-1": false, "kns.": false, "ksa.": false,
	} {
		if got := it.inherits(name); got != want {
			t.Errorf("inherits(%q) = %v, want %v", name, got, want)
		}
	}
	if (&item{parents: []string{"net1"}}).inherits("kns.") {
		t.Errorf("an item without a namespace inherits kns.")
	}
}

// TestProfileLabelsReachInheritingItems: a namespace profile's labels change the flattened labels
// of the items in that namespace, and of no other.
func TestProfileLabelsReachInheritingItems(t *testing.T) {
	r := newItemRegistry(newLabelIndex(func(string, string, bool) {}), newLabelIndex(func(string, string, bool) {}),
		func(string, *item, *item) {})
	r.update("a", &item{kind: itemWorkload, own: map[string]string{"app": "web"}, ns: "ns-1", local: true})
	r.update("b", &item{kind: itemWorkload, own: map[string]string{"app": "web"}, ns: "ns-2", local: true})
	r.setProfileLabels("kns.ns-1", map[string]string{"team": "red"})
	if got := r.items["a"].flat["pcns.team"]; got != "red" {
		t.Errorf("a in ns-1: pcns.team = %q, want red", got)
	}
	if got, ok := r.items["b"].flat["pcns.team"]; ok {
		t.Errorf("b in ns-2 took ns-1's labels: pcns.team = %q", got)
	}
	if got := r.polIndex.items["a"].labels["pcns.team"]; got != "red" {
		t.Errorf("the policy index has a's old labels")
	}
}
