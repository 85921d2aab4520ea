package calc

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/syncer"
)

func felixConfig(name string, spec api.FelixConfigurationSpec) syncer.Update {
	return up(resKey("felixconfigurations", "", name), &api.FelixConfiguration{ObjectMeta: api.ObjectMeta{Name: name}, Spec: spec})
}

// TestConfigFacts: calc reports this host's FelixConfiguration specs as decoded (felix's config
// package resolves them) and ClusterInformation in its Facts, and the Node's facts to the
// dataplane (ConfigUpdate), only when they change.
func TestConfigFacts(t *testing.T) {
	p := func(s string) api.Port { v, _ := api.ParsePort(s); return v }
	global := felixConfig("default", api.FelixConfigurationSpec{
		InterfacePrefix:           "cali,tap",
		ReportingInterval:         api.Dur(30 * time.Second),
		FailsafeInboundHostPorts:  &[]api.ProtoPort{{Protocol: "TCP", Port: 22}},
		FailsafeOutboundHostPorts: &[]api.ProtoPort{},
		NATPortRange:              ptr(p("32768:65535")),
		LogSeverityScreen:         "Info",
	})
	perHost := felixConfig("node.h1", api.FelixConfigurationSpec{LogSeverityScreen: "Debug", ReportingInterval: api.Dur(0),
		NFTablesMode: api.Str("Auto")})
	other := felixConfig("node.h2", api.FelixConfigurationSpec{LogSeverityScreen: "Warning", HealthPort: api.Int(1)})
	ci := up(resKey("clusterinformations", "", "default"), &api.ClusterInformation{Spec: api.ClusterInformationSpec{
		ClusterGUID: "abc", ClusterType: "bgp,openstack", CalicoVersion: "v3.30.0", DatastoreReady: api.Bool(true)}})
	h1 := &api.Node{Spec: api.NodeSpec{BGP: &api.NodeBGPSpec{IPv4Address: "198.18.0.1/24", IPv6Address: "fd00::1/64"},
		IPv4VXLANTunnelAddr: "10.65.0.0", VXLANTunnelMACAddr: "66:aa:bb:cc:dd:ee"}}
	g, m := newTestGraph("h1"), newModel()
	if f := g.Facts(); f.InSync || f.Config.ClusterInfo || f.Config.DatastoreReady {
		t.Errorf("facts before the snapshot: %+v", f)
	}
	snapshot(g, global, perHost, other, ci, up(resKey("nodes", "", "h1"), h1))
	flushInto(t, g, m)
	wantFacts := DatastoreConfig{
		Global: &global.Value.(*api.FelixConfiguration).Spec, Node: &perHost.Value.(*api.FelixConfiguration).Spec,
		ClusterInfo: true, ClusterGUID: "abc", ClusterType: "bgp,openstack", CalicoVersion: "v3.30.0", DatastoreReady: true,
		VXLANTunnelMAC: "66:aa:bb:cc:dd:ee",
	}
	if f := g.Facts(); f.Config != wantFacts || !f.InSync || f.SyncerStatus != syncer.InSync {
		t.Errorf("facts %+v, want config %+v", f, wantFacts)
	}
	want := &ConfigUpdate{
		HostIPv4: netip.MustParsePrefix("198.18.0.1/24"), HostIPv6: netip.MustParsePrefix("fd00::1/64"),
		VXLANTunnelAddrV4: netip.MustParseAddr("10.65.0.0"), VXLANTunnelMAC: "66:aa:bb:cc:dd:ee",
		VXLANTunnelMACV6: (&nodeInfo{name: "h1"}).vxlanMAC(6),
	}
	if diff := cmp.Diff(want, m.Config, addrCmp, prefixCmp); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
	steps := []struct {
		name  string
		ups   []syncer.Update
		check func(f DatastoreConfig) bool
	}{
		{"unrelated change", []syncer.Update{felixConfig("node.h2", api.FelixConfigurationSpec{})},
			func(f DatastoreConfig) bool { return f == wantFacts }},
		{"per-host config deleted", []syncer.Update{del(resKey("felixconfigurations", "", "node.h1"))},
			func(f DatastoreConfig) bool { return f.Node == nil && f.Global.LogSeverityScreen == "Info" }},
		{"datastore not ready", []syncer.Update{up(resKey("clusterinformations", "", "default"), &api.ClusterInformation{
			Spec: api.ClusterInformationSpec{DatastoreReady: api.Bool(false)}})},
			func(f DatastoreConfig) bool { return f.ClusterInfo && !f.DatastoreReady && f.ClusterGUID == "" }},
		{"cluster information deleted", []syncer.Update{del(resKey("clusterinformations", "", "default"))},
			func(f DatastoreConfig) bool { return !f.ClusterInfo && !f.DatastoreReady }},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			feed(g, st.ups...)
			if batch := flushInto(t, g, m); len(batch) > 0 {
				t.Errorf("a configuration change sent %v to the dataplane", batch)
			}
			if f := g.Facts().Config; !st.check(f) {
				t.Errorf("facts = %+v", f)
			}
		})
	}
	feed(g, up(resKey("nodes", "", "h1"), &api.Node{Spec: api.NodeSpec{BGP: &api.NodeBGPSpec{IPv4Address: "198.18.0.2/24"}}}))
	if batch := flushInto(t, g, m); !slices.ContainsFunc(batch, func(u Update) bool { _, ok := u.(ConfigUpdate); return ok }) ||
		m.Config.HostIPv4 != netip.MustParsePrefix("198.18.0.2/24") {
		t.Errorf("Node change: batch %v, config %+v", batch, m.Config)
	}
}
