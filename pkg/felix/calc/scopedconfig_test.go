package calc

import (
	"slices"
	"testing"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// scoped is a selector-scoped FelixConfiguration (sel "" = no nodeSelector) created at created.
func scoped(name, sel, created, logLevel string) syncer.Update {
	fc := &api.FelixConfiguration{ObjectMeta: api.ObjectMeta{Name: name, CreationTimestamp: created},
		Spec: api.FelixConfigurationSpec{LogSeverityScreen: logLevel}}
	if sel != "" {
		fc.Spec.NodeSelector = &sel
	}
	return up(resKey("felixconfigurations", "", name), fc)
}

func labelledNode(name string, labels map[string]string) syncer.Update {
	return up(resKey("nodes", "", name), &api.Node{ObjectMeta: api.ObjectMeta{Name: name, Labels: labels}})
}

// TestSelectorScopedConfig: the selector-scoped FelixConfiguration whose nodeSelector matches
// this host's Node labels is reported (the oldest by creationTimestamp, then by name, when
// several match), and follows changes of the labels, of the configurations and their deletion.
// One with an invalid selector, one without a selector, one named default or node.<x>, and a
// Node without labels never match.
func TestSelectorScopedConfig(t *testing.T) {
	g := newTestGraph("h1")
	snapshot(g,
		scoped("gpu-new", "role == 'gpu'", "2026-02-01T00:00:00Z", "Debug"),
		scoped("gpu-old", "role == 'gpu'", "2025-02-01T00:00:00Z", "Warning"),
		scoped("gpu-old-b", "role == 'gpu'", "2025-02-01T00:00:00Z", "Error"),
		scoped("storage", "role == 'storage'", "2026-01-01T00:00:00Z", "Error"),
		scoped("broken", "role == ", "2020-01-01T00:00:00Z", "Fatal"),
		scoped("nosel", "", "2020-01-01T00:00:00Z", "Fatal"),
		scoped("node.h9", "all()", "2020-01-01T00:00:00Z", "Fatal"),
		felixConfig("default", api.FelixConfigurationSpec{LogSeverityScreen: "Info"}),
		labelledNode("h1", map[string]string{"role": "gpu"}),
		labelledNode("h2", map[string]string{"role": "storage"}))
	g.Flush()
	steps := []struct {
		name        string
		ups         []syncer.Update
		want, level string
		matches     int
	}{
		{"oldest of three matches, then by name", nil, "gpu-old", "Warning", 3},
		{"the oldest deleted", []syncer.Update{del(resKey("felixconfigurations", "", "gpu-old"))}, "gpu-old-b", "Error", 2},
		{"node labels change", []syncer.Update{labelledNode("h1", map[string]string{"role": "storage"})}, "storage", "Error", 1},
		{"another node's labels change", []syncer.Update{labelledNode("h2", map[string]string{"role": "gpu"})}, "storage", "Error", 1},
		{"the matching one's selector changes", []syncer.Update{scoped("storage", "role == 'none'", "2026-01-01T00:00:00Z", "Error")}, "", "", 0},
		{"its selector becomes invalid", []syncer.Update{scoped("gpu-new", "role ==", "2026-02-01T00:00:00Z", "Debug"),
			labelledNode("h1", map[string]string{"role": "gpu"})}, "gpu-old-b", "Error", 1},
		{"node without labels", []syncer.Update{labelledNode("h1", nil)}, "", "", 0},
		{"all() matches empty labels", []syncer.Update{labelledNode("h1", map[string]string{}),
			scoped("all", "all()", "2027-01-01T00:00:00Z", "Trace")}, "all", "Trace", 1},
		{"node deleted", []syncer.Update{del(resKey("nodes", "", "h1"))}, "", "", 0},
	}
	for _, st := range steps {
		feed(g, st.ups...)
		g.Flush()
		f := g.Facts().Config
		level := ""
		if f.Scoped != nil {
			level = f.Scoped.LogSeverityScreen
		}
		if f.ScopedName != st.want || level != st.level || f.ScopedMatches != st.matches {
			t.Errorf("%s: scoped %q (%q, %d matches), want %q (%q, %d)", st.name, f.ScopedName, level, f.ScopedMatches, st.want, st.level, st.matches)
		}
		if f.Global == nil || f.Global.LogSeverityScreen != "Info" || f.Node != nil {
			t.Errorf("%s: default or node config disturbed: %+v", st.name, f)
		}
	}
}

// TestServiceCIDRs: the service CIDRs of BGPConfiguration default (cluster, external, load
// balancer; empty ones skipped) go to the dataplane when they change; other BGPConfigurations
// do not count.
func TestServiceCIDRs(t *testing.T) {
	bgp := func(name string, cluster, external, lb []string) syncer.Update {
		blocks := func(cs []string) []api.ServiceIPBlock {
			var out []api.ServiceIPBlock
			for _, c := range cs {
				out = append(out, api.ServiceIPBlock{CIDR: c})
			}
			return out
		}
		return up(resKey("bgpconfigurations", "", name), &api.BGPConfiguration{ObjectMeta: api.ObjectMeta{Name: name},
			Spec: api.BGPConfigurationSpec{ServiceClusterIPs: blocks(cluster), ServiceExternalIPs: blocks(external), ServiceLoadBalancerIPs: blocks(lb)}})
	}
	g, m := newTestGraph("h1"), newModel()
	snapshot(g, bgp("default", []string{"198.19.96.0/24", ""}, []string{"198.19.97.0/24"}, []string{"fd5c:96::/112"}),
		bgp("node.h1", []string{"198.19.98.0/24"}, nil, nil))
	flushInto(t, g, m)
	if want := []string{"198.19.96.0/24", "198.19.97.0/24", "fd5c:96::/112"}; !slices.Equal(m.Services, want) {
		t.Errorf("services %v, want %v", m.Services, want)
	}
	feed(g, bgp("node.h1", nil, nil, nil))
	if batch := flushInto(t, g, m); len(batch) != 0 {
		t.Errorf("another BGPConfiguration sent %v", batch)
	}
	feed(g, del(resKey("bgpconfigurations", "", "default")))
	if batch := flushInto(t, g, m); len(batch) != 1 || m.Services != nil {
		t.Errorf("after deleting default: batch %v, services %v", batch, m.Services)
	}
}
