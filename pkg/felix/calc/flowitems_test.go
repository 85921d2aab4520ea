package calc

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/calico-host/calico-host/pkg/api"
)

// itemLog records what an ItemObserver is told.
type itemLog struct {
	items map[string]*ItemInfo
	tiers map[string][]TierInfo
}

func (l *itemLog) ItemChanged(id string, info *ItemInfo) {
	if info == nil {
		delete(l.items, id)
		return
	}
	l.items[id] = info
}

func (l *itemLog) LocalTiers(id string, tiers []TierInfo) {
	if tiers == nil {
		delete(l.tiers, id)
		return
	}
	l.tiers[id] = tiers
}

// TestItemObserver: an observer added late learns every endpoint (local or not) and network
// set with its name, namespace, addresses and labels, and the tiers of local
// endpoints; then label changes, policy changes and removals.
func TestItemObserver(t *testing.T) {
	g := newTestGraph("h1")
	snapshot(g,
		wep("prod", "h1", "web", map[string]string{"app": "web"}, []string{"10.65.0.1/32"}),
		wep("prod", "h2", "db", map[string]string{"app": "db"}, []string{"10.65.1.1/32"}),
		gns("ext", map[string]string{"kind": "ext"}, "192.0.2.0/24"),
		gnp("allow-web", api.GlobalNetworkPolicySpec{Selector: "app == 'web'", Ingress: []api.Rule{rule("Allow")}}))
	m := newModel()
	flushInto(t, g, m)
	obs := &itemLog{items: map[string]*ItemInfo{}, tiers: map[string][]TierInfo{}}
	g.observeItems(obs)
	web, db, ext := obs.items["w:prod/"+api.WorkloadEndpointName("h1", "cni", "web", "eth0")], obs.items["w:prod/"+api.WorkloadEndpointName("h2", "cni", "db", "eth0")], obs.items["g:ext"]
	if web == nil || db == nil || ext == nil {
		t.Fatalf("items %v", obs.items)
	}
	if web.Name != "web" || web.Namespace != "prod" || !web.Local || web.Labels["app"] != "web" || db.Local || db.Name != "db" ||
		ext.Kind != ItemNetworkSet || ext.Name != "ext" || ext.Nets[0].String() != "192.0.2.0/24" {
		t.Errorf("web %+v, db %+v, ext %+v", web, db, ext)
	}
	if ts := obs.tiers["w:prod/"+api.WorkloadEndpointName("h1", "cni", "web", "eth0")]; len(ts) != 1 || len(ts[0].IngressPolicies) != 1 {
		t.Errorf("tiers %+v", obs.tiers)
	}
	feed(g, wep("prod", "h2", "db", map[string]string{"app": "db2"}, []string{"10.65.1.1/32"}), del(resKey("globalnetworksets", "", "ext")))
	flushInto(t, g, m)
	if obs.items["w:prod/"+api.WorkloadEndpointName("h2", "cni", "db", "eth0")].Labels["app"] != "db2" || obs.items["g:ext"] != nil {
		t.Errorf("after changes: %v", obs.items)
	}
}

// TestItemLabelsAreOwn: flow logs carry an endpoint's own labels (with the
// projectcalico.org/namespace and orchestrator labels a WorkloadEndpoint carries), never the
// labels it inherits from its profiles or namespace, as Project Calico's felix reports them
// (the endpoint's GetLabels). Seen against Project Calico's Goldmane: the profile's
// "calico-net=" and "pcns.projectcalico.org/name=default" were in our flows' labels.
func TestItemLabelsAreOwn(t *testing.T) {
	g := newTestGraph("h1")
	snapshot(g,
		profile("kns.prod", map[string]string{"team": "red"}, nil, nil),
		profile("net1", map[string]string{"net1": ""}, nil, nil),
		wep("prod", "h1", "web", map[string]string{"app": "web"}, []string{"10.65.0.1/32"}, withProfiles("net1")))
	flushInto(t, g, newModel())
	obs := &itemLog{items: map[string]*ItemInfo{}, tiers: map[string][]TierInfo{}}
	g.observeItems(obs)
	web := obs.items["w:prod/"+api.WorkloadEndpointName("h1", "cni", "web", "eth0")]
	if web == nil {
		t.Fatalf("items %v", obs.items)
	}
	want := map[string]string{"app": "web", "projectcalico.org/namespace": "prod", "projectcalico.org/orchestrator": "cni"}
	if !maps.Equal(web.Labels, want) {
		t.Errorf("labels %v, want %v", web.Labels, want)
	}
}

// TestHostEndpointItemNamedByNode: flow logs name a host endpoint by its node, with no
// namespace, as Project Calico's felix does (the aggregated name of a HostEndpointKey is its
// Hostname; several host endpoints of one node are one name).
func TestHostEndpointItemNamedByNode(t *testing.T) {
	g := newTestGraph("h1")
	snapshot(g,
		hep("h1-eth0", "h1", "eth0", map[string]string{"role": "host"}, []string{"198.18.0.1"}),
		hep("h2-eth0", "h2", "eth0", nil, []string{"198.18.0.2"}))
	flushInto(t, g, newModel())
	obs := &itemLog{items: map[string]*ItemInfo{}, tiers: map[string][]TierInfo{}}
	g.observeItems(obs)
	var got []string
	for _, it := range obs.items {
		if it.Kind == ItemHostEndpoint {
			got = append(got, fmt.Sprintf("%s %q local=%v %v", it.Name, it.Namespace, it.Local, it.Labels))
		}
	}
	slices.Sort(got)
	want := []string{`h1 "" local=true map[role:host]`, `h2 "" local=false map[]`}
	if !slices.Equal(got, want) {
		t.Errorf("host endpoint items %q, want %q", got, want)
	}
}
