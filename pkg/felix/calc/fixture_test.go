package calc

import (
	"encoding/json"
	"net/netip"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// loadFixture decodes a fixture file as the syncer would (datastore.Decode, then api.SetDefaults
// for resources).
func loadFixture(t *testing.T, path string) []syncer.Update {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var entries []struct {
		Key   string          `json:"key"`
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(raw, &entries); err != nil {
		t.Fatal(err)
	}
	var out []syncer.Update
	for i, e := range entries {
		v, err := datastore.Decode(e.Key, e.Value, int64(i+1))
		if err != nil {
			t.Fatalf("decoding %s: %v", e.Key, err)
		}
		if r, ok := v.(api.Resource); ok {
			api.SetDefaults(r)
		}
		if v != nil {
			out = append(out, syncer.Update{ID: datastore.IDOf(e.Key), Value: v, Revision: int64(i + 1)})
		}
	}
	return out
}

func TestCalicoctlCorpusForHostA(t *testing.T) {
	g, m := newTestGraph("host-a"), newModel()
	snapshot(g, loadFixture(t, "../../../test/fixtures/calicoctl-corpus.json")...)
	flushInto(t, g, m)
	if !m.InSync {
		t.Error("no InSync")
	}
	opts := []cmp.Option{cmpopts.EquateEmpty(), addrCmp, prefixCmp}
	blockBad := PolicyID{Tier: "security", Kind: "gnp", Name: "security.block-bad"}
	allowWeb := PolicyID{Tier: "default", Kind: "gnp", Name: "allow-web"}
	hostProtect := PolicyID{Tier: "default", Kind: "gnp", Name: "host-protect"}
	security := TierInfo{Name: "security", DefaultAction: "Deny", IngressPolicies: []PolicyID{blockBad}}

	wepID := WorkloadEndpointID{OrchestratorID: "openstack", WorkloadID: "openstack/instance-0001", EndpointID: "tap1234abcd"}
	wantWEP := &WorkloadEndpoint{
		Name: "tap1234abcd", Namespace: "openstack", MAC: "fa:16:3e:11:22:33",
		IPv4Nets: pfx("10.65.12.5/32"), IPv6Nets: pfx("fd5c:1:2::5/128"),
		IPv4NAT:                    []NATInfo{{ExtIP: netip.MustParseAddr("198.51.100.10"), IntIP: netip.MustParseAddr("10.65.12.5")}},
		AllowSpoofedSourcePrefixes: pfx("10.99.0.0/24"),
		Tiers: []TierInfo{security, {Name: "default", DefaultAction: "Deny",
			IngressPolicies: []PolicyID{allowWeb}, EgressPolicies: []PolicyID{allowWeb}}},
		ProfileIDs: []string{"openstack-sg-3b2c1f0e"},
	}
	if diff := cmp.Diff(map[WorkloadEndpointID]*WorkloadEndpoint{wepID: wantWEP}, m.WEPs, opts...); diff != "" {
		t.Errorf("workload endpoints (-want +got):\n%s", diff)
	}
	wantHEPs := map[string]*HostEndpoint{
		"host-a-eth0": {Name: "host-a-eth0", InterfaceName: "eth0", ExpectedIPv4Addrs: []netip.Addr{netip.MustParseAddr("198.18.0.1")},
			ProfileIDs: []string{"openstack-sg-3b2c1f0e"}, Tiers: []TierInfo{security},
			PreDNATTiers: []TierInfo{{Name: "default", DefaultAction: "Deny", IngressPolicies: []PolicyID{hostProtect}}}},
		"host-a-all": {Name: "host-a-all", InterfaceName: "*", Tiers: []TierInfo{security}},
	}
	if diff := cmp.Diff(wantHEPs, m.HEPs, opts...); diff != "" {
		t.Errorf("host endpoints (-want +got):\n%s", diff)
	}
	var active []string
	for id := range m.Policies {
		active = append(active, id.Name)
	}
	slices.Sort(active)
	if want := []string{"allow-web", "host-protect", "security.block-bad"}; !slices.Equal(active, want) {
		t.Errorf("active policies = %v, want %v (allow-db matches no endpoint here)", active, want)
	}
	checkAllowWeb(t, m, m.Policies[allowWeb])
	checkCorpusProfileAndNetwork(t, g, m)
}

func checkAllowWeb(t *testing.T, m *dpModel, p *Policy) {
	t.Helper()
	if p == nil || len(p.InboundRules) != 5 || len(p.OutboundRules) != 2 {
		t.Fatalf("allow-web = %+v", p)
	}
	web, named := p.InboundRules[0], p.InboundRules[1]
	if got := m.members(web.SrcIPSetIDs[0]); !slices.Equal(got, []string{"10.65.40.2/32"}) {
		t.Errorf("source selector set = %v, want host-b's endpoint", got)
	}
	if web.SrcIPSetIDs[0] != sel(`role == "client"`) || !slices.Equal(web.NotSrcNets, pfx("10.65.99.0/24")) {
		t.Errorf("first rule = %+v", web)
	}
	if !slices.Equal(web.DstPorts, []PortRange{{80, 80}, {443, 443}, {8000, 8080}}) || len(web.DstNamedPortIPSetIDs) != 0 {
		t.Errorf("numeric alternative = %+v", web)
	}
	if got := m.members(named.DstNamedPortIPSetIDs[0]); !slices.Equal(got, []string{"10.65.12.5,6:8080", "fd5c:1:2::5,6:8080"}) {
		t.Errorf("http-alt named-port set = %v", got)
	}
	icmp, logUDP, deny6 := p.InboundRules[2], p.InboundRules[3], p.InboundRules[4]
	if icmp.IPVersion != 4 || icmp.ICMP == nil || icmp.ICMP.Type != 8 || *icmp.ICMP.Code != 0 {
		t.Errorf("ICMP rule = %+v", icmp)
	}
	if logUDP.Action != RuleLog || !slices.Equal(logUDP.NotDstPorts, []PortRange{{53, 53}}) {
		t.Errorf("log rule = %+v", logUDP)
	}
	if deny6.IPVersion != 6 || deny6.Protocol != 58 {
		t.Errorf("ICMPv6 deny = %+v", deny6)
	}
	if eg := p.OutboundRules[0]; len(m.members(eg.DstIPSetIDs[0])) != 0 ||
		eg.DstIPSetIDs[0] != sel(`(!has(projectcalico.org/namespace)) && (has(db))`) {
		t.Errorf("egress to global has(db) = %+v", eg)
	}
	if eg := p.OutboundRules[1]; eg.NotProtocol != 136 {
		t.Errorf("egress notProtocol = %+v", eg)
	}
}

func checkCorpusProfileAndNetwork(t *testing.T, g *Graph, m *dpModel) {
	t.Helper()
	prof := m.Profiles["openstack-sg-3b2c1f0e"]
	if prof == nil || len(prof.InboundRules) != 2 {
		t.Fatalf("profile = %+v", prof)
	}
	want := []string{"10.65.12.5/32", "198.18.0.1/32", "fd5c:1:2::5/128"}
	if got := m.members(prof.InboundRules[0].SrcIPSetIDs[0]); !slices.Equal(got, want) {
		t.Errorf("profile's has(sg...) set = %v, want %v (inherited labels of the workload and host endpoint)", got, want)
	}
	if len(m.Pools) != 3 || !m.Pools["pool-disabled"].Disabled || m.Pools["pool-v4"].VXLANMode != "CrossSubnet" ||
		!m.Pools["pool-v4"].NATOutgoing || !m.Pools["pool-v6"].DisableBGPExport {
		t.Errorf("pools = %+v", m.Pools)
	}
	if len(m.Hosts) != 2 || m.Hosts["host-b"].IPv4Addr != netip.MustParsePrefix("198.18.1.1/24") {
		t.Errorf("hosts = %+v", m.Hosts)
	}
	f := g.Facts().Config // resolved into felix's parameters by config.TestCalicoctlFixtureResolves
	if f.Global == nil || f.Global.InterfacePrefix != "cali,tap" || f.Global.ReportingInterval.Duration != 30*time.Second ||
		len(*f.Global.FailsafeInboundHostPorts) != 2 || f.Node == nil || f.Node.LogSeverityScreen != "Debug" || *f.Node.NFTablesMode != "Auto" {
		t.Errorf("FelixConfiguration default %+v, node.host-a %+v", f.Global, f.Node)
	}
	if f.ClusterGUID != "051b9357542043f4bb46bc368ac0bf83" || !f.DatastoreReady || f.VXLANTunnelMAC != "66:a1:0b:3c:4d:5e" {
		t.Errorf("facts = %+v", f)
	}
	c := m.Config
	if c.VXLANTunnelMAC != "66:a1:0b:3c:4d:5e" || c.VXLANTunnelAddrV4 != netip.MustParseAddr("10.65.12.0") ||
		c.HostIPv4 != netip.MustParsePrefix("198.18.0.1/24") {
		t.Errorf("config = %+v", c)
	}
}

func TestCNIFixtureRoutes(t *testing.T) {
	ups := loadFixture(t, "../../../test/fixtures/cni-ipam-and-status.json")
	for _, host := range []string{"host-a", "host-b"} {
		g, m := newTestGraph(host), newModel()
		snapshot(g, ups...)
		flushInto(t, g, m)
		want := RouteRemoteWorkload
		if host == "host-a" {
			want = RouteLocalWorkload
		}
		for _, dst := range []string{"10.65.54.0/26", "fd5c:1:2:13f2:fcce:4caf:5a2d:bc40/122"} {
			r := m.Routes[netip.MustParsePrefix(dst)]
			if r == nil || r.Type != want || r.DstNode != "host-a" {
				t.Errorf("%s: route to %s = %+v", host, dst, r)
			}
		}
	}
}
