package calc

import (
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/syncer"
)

func felixConfig(name string, spec api.FelixConfigurationSpec) syncer.Update {
	return up(resKey("felixconfigurations", "", name), &api.FelixConfiguration{ObjectMeta: api.ObjectMeta{Name: name}, Spec: spec})
}

// TestConfigSpecs: calc reports this host's FelixConfiguration specs as decoded (felix's config
// package resolves them), ClusterInformation and the Node's facts, and only when they change.
func TestConfigSpecs(t *testing.T) {
	p := func(s string) api.Port { v, _ := api.ParsePort(s); return v }
	global := felixConfig("default", api.FelixConfigurationSpec{
		InterfacePrefix:        "cali,tap",
		ReportingInterval:      api.Dur(30 * time.Second),
		ReportingTTL:           api.Dur(90 * time.Second),
		EndpointReportingDelay: api.Dur(time.Second),
		FailsafeInboundHostPorts: &[]api.ProtoPort{{Protocol: "TCP", Port: 22}, {Protocol: "UDP", Port: 68},
			{Protocol: "TCP", Port: 179, Net: "10.0.0.0/8"}, {Protocol: "tcp", Port: 22, Net: "fd00::/8"}},
		FailsafeOutboundHostPorts:   &[]api.ProtoPort{},
		NFTablesMode:                api.Str("Enabled"),
		VXLANVNI:                    api.Int(4096),
		VXLANEnabled:                api.Bool(true),
		IPIPEnabled:                 api.Bool(false),
		HealthPort:                  api.Int(9099),
		ExternalNodesCIDRList:       &[]string{"198.18.0.0/16", "198.19.0.0/16"},
		NATPortRange:                ptr(p("32768:65535")),
		LogSeverityScreen:           "Info",
		DefaultEndpointToHostAction: "Accept",
	})
	perHost := felixConfig("node.h1", api.FelixConfigurationSpec{LogSeverityScreen: "Debug", ReportingInterval: api.Dur(0),
		NFTablesMode: api.Str("Auto")})
	other := felixConfig("node.h2", api.FelixConfigurationSpec{LogSeverityScreen: "Warning", HealthPort: api.Int(1)})
	ci := up(resKey("clusterinformations", "", "default"), &api.ClusterInformation{Spec: api.ClusterInformationSpec{
		ClusterGUID: "abc", ClusterType: "bgp,openstack", CalicoVersion: "v3.30.0", DatastoreReady: api.Bool(true)}})
	h1 := &api.Node{Spec: api.NodeSpec{BGP: &api.NodeBGPSpec{IPv4Address: "198.18.0.1/24", IPv6Address: "fd00::1/64"},
		IPv4VXLANTunnelAddr: "10.65.0.0", VXLANTunnelMACAddr: "66:aa:bb:cc:dd:ee"}}
	g, m := newTestGraph("h1"), newModel()
	snapshot(g, global, perHost, other, ci, up(resKey("nodes", "", "h1"), h1))
	flushInto(t, g, m)
	want := &ConfigUpdate{
		Global: &global.Value.(*api.FelixConfiguration).Spec, Node: &perHost.Value.(*api.FelixConfiguration).Spec,
		ClusterGUID: "abc", ClusterType: "bgp,openstack", CalicoVersion: "v3.30.0", DatastoreReady: true,
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
		sent  bool
		check func(c *ConfigUpdate) bool
	}{
		{"unrelated change sends nothing", []syncer.Update{felixConfig("node.h2", api.FelixConfigurationSpec{})}, false, nil},
		{"per-host config deleted", []syncer.Update{del(resKey("felixconfigurations", "", "node.h1"))}, true,
			func(c *ConfigUpdate) bool { return c.Node == nil && c.Global.LogSeverityScreen == "Info" }},
		{"datastore not ready", []syncer.Update{up(resKey("clusterinformations", "", "default"), &api.ClusterInformation{
			Spec: api.ClusterInformationSpec{DatastoreReady: api.Bool(false)}})}, true,
			func(c *ConfigUpdate) bool { return !c.DatastoreReady && c.ClusterGUID == "" }},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			feed(g, st.ups...)
			batch := flushInto(t, g, m)
			if (len(batch) > 0) != st.sent {
				t.Fatalf("batch = %v, want sent=%v", batch, st.sent)
			}
			if st.check != nil && !st.check(m.Config) {
				t.Errorf("config = %+v", m.Config)
			}
		})
	}
}
