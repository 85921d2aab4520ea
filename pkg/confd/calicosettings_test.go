package confd

import (
	"bytes"
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/api"
)

// peersByComment indexes a family's sessions by their BGPPeer.
func peersByComment(f *Family) map[string]Peer {
	out := map[string]Peer{}
	for _, p := range f.Peers {
		out[p.Comment.String()] = p
	}
	return out
}

// TestLocalASNumber: a peerIP peering uses the BGPPeer's localASNumber, and decides iBGP/eBGP
// (next hop keep, filter peer types, route reflection) with it; peer-node peerings do not take
// it, as in Project Calico.
func TestLocalASNumber(t *testing.T) {
	in := testInputs(
		bgpConfig("default", api.BGPConfigurationSpec{NodeToNodeMeshEnabled: api.Bool(false)}),
		withCluster(testNode("a", "198.18.2.1/24", "", nil), "198.18.255.1"),
		testNode("b", "198.18.2.2/24", "", map[string]string{"peer": "yes"}),
		bgpPeer("as-65100", api.BGPPeerSpec{Node: "a", PeerIP: "198.18.2.254", ASNumber: asn(65100), LocalASNumber: asn(65100),
			KeepOriginalNextHop: true}),
		bgpPeer("ebgp-local", api.BGPPeerSpec{Node: "a", PeerIP: "198.18.2.253", ASNumber: asn(64512), LocalASNumber: asn(65100),
			KeepOriginalNextHop: true, Filters: []string{"f"}}),
		bgpPeer("nodes", api.BGPPeerSpec{Node: "a", PeerSelector: "peer == 'yes'", LocalASNumber: asn(65100)}),
		&api.BGPFilter{ObjectMeta: api.ObjectMeta{Name: "f"}, Spec: api.BGPFilterSpec{
			ImportV4: []api.BGPFilterRule{{Action: "Reject", PeerType: "iBGP"}}}},
	)
	got := peersByComment(build(in, "a").Families[0])
	same, ebgp, nodes := got["BGPPeer as-65100"], got["BGPPeer ebgp-local"], got["BGPPeer nodes"]
	if same.LocalAS != 65100 || same.NextHop != "" || !same.RRClient {
		t.Errorf("peer in the local AS it names: local as %d, next hop %q, rr client %t; want 65100, iBGP (no keep), rr client",
			same.LocalAS, same.NextHop, same.RRClient)
	}
	if ebgp.LocalAS != 65100 || ebgp.NextHop != NextHopKeep || ebgp.RRClient || strs(ebgp.ImportFilters)[0] != "'bgp_f_importFilterV4'(false)" {
		t.Errorf("eBGP through localASNumber: %+v", ebgp)
	}
	if nodes.LocalAS != 0 {
		t.Errorf("a peerSelector peering took localASNumber %d", nodes.LocalAS)
	}
}

// TestKeepaliveTime: keepaliveTime is rounded to seconds; BIRD takes 1 to the hold time, other
// values are left out with a warning.
func TestKeepaliveTime(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		hold string
		want uint32
		warn bool
	}{
		{10 * time.Second, "", 10, false},
		{1400 * time.Millisecond, "", 1, false},
		{240 * time.Second, "", 240, false},
		{241 * time.Second, "", 0, true},
		{2 * time.Second, "3", 2, false},
		{4 * time.Second, "3", 0, true},
		{0, "", 0, true},
	} {
		in := testInputs(testNode("a", "198.18.2.1/24", "", nil),
			bgpPeer("p", api.BGPPeerSpec{PeerIP: "198.18.2.254", ASNumber: asn(65001), KeepaliveTime: api.Dur(tc.d)}))
		m := Build(in, BuildOptions{NodeName: "a", Vars: map[string]string{"hold_time": tc.hold}})
		p := peersByComment(m.Families[0])["BGPPeer p"]
		if p.KeepaliveTime != tc.want || (len(m.Warnings) > 0) != tc.warn {
			t.Errorf("keepaliveTime %s hold %q: %d (warnings %v), want %d (warning %t)", tc.d, tc.hold, p.KeepaliveTime, strs(m.Warnings), tc.want, tc.warn)
		}
	}
}

// TestReachableBy: a peering with reachableBy gets a static route to the peer through it; a
// peerIP whose reachableBy is of the other family makes no session (Project Calico skips it).
func TestReachableBy(t *testing.T) {
	in := testInputs(
		bgpConfig("default", api.BGPConfigurationSpec{NodeToNodeMeshEnabled: api.Bool(false)}),
		testNode("a", "198.18.2.1/24", "fd5c:2::1/64", nil),
		bgpPeer("far", api.BGPPeerSpec{PeerIP: "198.18.9.1", ASNumber: asn(65001), ReachableBy: "198.18.2.254"}),
		bgpPeer("far-port", api.BGPPeerSpec{PeerIP: "198.18.9.1:1179", ASNumber: asn(65001), ReachableBy: "198.18.2.253"}),
		bgpPeer("far6", api.BGPPeerSpec{PeerIP: "fd5c:9::1", ASNumber: asn(65001), ReachableBy: "fd5c:2::fe"}),
		bgpPeer("mixed", api.BGPPeerSpec{PeerIP: "198.18.9.2", ASNumber: asn(65001), ReachableBy: "fd5c:2::fe"}),
	)
	m := build(in, "a")
	var routes []string
	for _, f := range m.Families {
		for _, r := range f.PeerRoutes {
			routes = append(routes, r.Dest.String()+" via "+r.Via.String()+" ("+r.Comment.String()+")")
		}
	}
	want := []string{"198.18.9.1/32 via 198.18.2.254 (BGPPeer far)", "fd5c:9::1/128 via fd5c:2::fe (BGPPeer far6)"}
	if d := cmp.Diff(want, routes); d != "" {
		t.Errorf("peer routes (-want +got):\n%s", d)
	}
	if _, ok := peersByComment(m.Families[0])["BGPPeer mixed"]; ok {
		t.Error("a peering whose reachableBy is of the other family was made")
	}
	w := strings.Join(strs(m.Warnings), "\n")
	if !strings.Contains(w, "BGPPeer mixed: reachableBy fd5c:2::fe is not of the peer IP's family") ||
		!strings.Contains(w, "BGPPeer far-port: a route to 198.18.9.1 via 198.18.2.254 exists already; not via 198.18.2.253") {
		t.Errorf("warnings:\n%s", w)
	}
}

// TestReversePeeringAndLocalWorkloads: the remote node of a peering peers back unless the
// BGPPeer's reversePeering is Manual; a BGPPeer with a localWorkloadSelector and no local workloads
// makes no sessions (and none in reverse).
func TestReversePeeringAndLocalWorkloads(t *testing.T) {
	base := []any{
		bgpConfig("default", api.BGPConfigurationSpec{NodeToNodeMeshEnabled: api.Bool(false)}),
		testNode("a", "198.18.2.1/24", "", map[string]string{"role": "a"}),
		testNode("b", "198.18.2.2/24", "", nil),
	}
	for _, tc := range []struct {
		name  string
		peer  api.BGPPeerSpec
		node  string
		want  []peerSummary
		extra []any
	}{
		{"auto: b peers back", api.BGPPeerSpec{Node: "a", PeerIP: "198.18.2.2", ASNumber: asn(64512)}, "b",
			[]peerSummary{{Name: "Node_198_18_2_1", AS: "64512"}}, nil},
		{"Auto spelled out", api.BGPPeerSpec{Node: "a", PeerIP: "198.18.2.2", ASNumber: asn(64512), ReversePeering: "Auto"}, "b",
			[]peerSummary{{Name: "Node_198_18_2_1", AS: "64512"}}, nil},
		{"manual: no reverse session", api.BGPPeerSpec{Node: "a", PeerIP: "198.18.2.2", ASNumber: asn(64512), ReversePeering: "Manual"}, "b", nil, nil},
		{"manual: the forward session stays", api.BGPPeerSpec{Node: "a", PeerIP: "198.18.2.2", ASNumber: asn(64512), ReversePeering: "Manual"}, "a",
			[]peerSummary{{Name: "Node_198_18_2_2", AS: "64512"}}, nil},
		{"local workloads: no session", api.BGPPeerSpec{NodeSelector: "all()", LocalWorkloadSelector: "app == 'bgp'", ASNumber: asn(65001)}, "a", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := build(testInputs(append(append([]any{}, base...), bgpPeer("p", tc.peer))...), tc.node)
			if d := cmp.Diff(tc.want, summarize(m.Families[0])); d != "" {
				t.Errorf("peers (-want +got):\n%s", d)
			}
		})
	}
}

// TestServiceLoadBalancerAggregation: load balancer ranges are advertised while aggregation is
// Enabled (the default) and not when Disabled; single external and load balancer addresses are
// never advertised globally (Project Calico advertises them per Kubernetes service).
func TestServiceLoadBalancerAggregation(t *testing.T) {
	spec := func(agg *string) api.BGPConfigurationSpec {
		return api.BGPConfigurationSpec{ServiceLoadBalancerAggregation: agg,
			ServiceClusterIPs:      []api.ServiceIPBlock{{CIDR: "10.96.0.10/32"}},
			ServiceExternalIPs:     []api.ServiceIPBlock{{CIDR: "198.51.100.0/24"}, {CIDR: "198.51.101.7/32"}},
			ServiceLoadBalancerIPs: []api.ServiceIPBlock{{CIDR: "203.0.113.0/24"}, {CIDR: "203.0.114.9/32"}, {CIDR: "fd5c:b::/64"}}}
	}
	for _, tc := range []struct {
		agg    *string
		v4, v6 []string
	}{
		{nil, []string{"10.96.0.10/32", "198.51.100.0/24", "203.0.113.0/24"}, []string{"fd5c:b::/64"}},
		{api.Str("Enabled"), []string{"10.96.0.10/32", "198.51.100.0/24", "203.0.113.0/24"}, []string{"fd5c:b::/64"}},
		{api.Str("Disabled"), []string{"10.96.0.10/32", "198.51.100.0/24"}, nil},
	} {
		m := build(testInputs(testNode("a", "198.18.0.1/24", "", nil), bgpConfig("default", spec(tc.agg))), "a")
		if d := cmp.Diff(tc.v4, strs(m.Families[0].StaticRoutes)); d != "" {
			t.Errorf("aggregation %v v4 (-want +got):\n%s", tc.agg, d)
		}
		if d := cmp.Diff(tc.v6, strs(m.Families[1].StaticRoutes)); d != "" {
			t.Errorf("aggregation %v v6 (-want +got):\n%s", tc.agg, d)
		}
	}
}

// TestProgramClusterRoutes: BIRD programs the routes of unencapsulated pools unless the global
// programClusterRoutes leaves them to felix (Disabled, EnabledIPIPOnly), and those of IPIP pools
// (through tunl0; CrossSubnet: unless the next hop is in the node's network) when it says so
// (Enabled, EnabledIPIPOnly); VXLAN pools' routes never; export is unchanged; routes through
// tunl0 are felix's (never exported to iBGP peers) unless BIRD programs them.
func TestProgramClusterRoutes(t *testing.T) {
	pools := []any{
		ipPool("plain", api.IPPoolSpec{CIDR: "10.65.0.0/16"}),
		ipPool("vxlan", api.IPPoolSpec{CIDR: "10.66.0.0/16", VXLANMode: "Always"}),
		ipPool("ipip", api.IPPoolSpec{CIDR: "10.67.0.0/16", IPIPMode: "CrossSubnet"}),
	}
	for _, tc := range []struct {
		value       *string
		plain, ipip bool
	}{{nil, true, false}, {api.Str("EnabledNoEncapOnly"), true, false}, {api.Str("Enabled"), true, true},
		{api.Str("Disabled"), false, false}, {api.Str("EnabledIPIPOnly"), false, true}} {
		objs := append([]any{testNode("a", "198.18.0.1/24", "", nil),
			bgpConfig("default", api.BGPConfigurationSpec{ProgramClusterRoutes: tc.value})}, pools...)
		m := build(testInputs(objs...), "a")
		got := map[string]bool{}
		for _, p := range m.Families[0].Pools {
			got[p.Name.String()] = p.ProgramKernel
			if !p.Export {
				t.Errorf("%v: pool %s not exported", tc.value, p.Name)
			}
			if tunnel := p.Tunnel != ""; tunnel != (p.Name.String() == "ipip" && tc.ipip) {
				t.Errorf("%v: pool %s tunnel %q", tc.value, p.Name, p.Tunnel)
			}
			if p.Tunnel != "" && (p.Tunnel != TunnelCrossSubnet || p.LocalSubnet != netip.MustParsePrefix("198.18.0.0/24")) {
				t.Errorf("%v: pool %s tunnel %q unless within %v", tc.value, p.Name, p.Tunnel, p.LocalSubnet)
			}
		}
		if want := map[string]bool{"plain": tc.plain, "vxlan": false, "ipip": tc.ipip}; !cmp.Equal(want, got) {
			t.Errorf("programClusterRoutes %v: kernel programming %v, want %v", tc.value, got, want)
		}
		if m.BIRDProgramsIPIP != tc.ipip {
			t.Errorf("programClusterRoutes %v: BIRD programs IPIP %v", tc.value, m.BIRDProgramsIPIP)
		}
	}
}

// TestSyncReportsUnimplementedSettingsOnce: each sync reports the BGP settings calico-host does
// not implement, but logs each only once.
func TestSyncReportsUnimplementedSettingsOnce(t *testing.T) {
	requireBIRD(t)
	var buf bytes.Buffer
	in := testInputs(testNode("a", "198.18.2.1/24", "", nil),
		bgpConfig("default", api.BGPConfigurationSpec{BindMode: "NodeIP"}),
		bgpPeer("tor", api.BGPPeerSpec{PeerIP: "198.18.2.254", ASNumber: asn(65001), SourceAddress: "None"}))
	e := NewEngine(testConfig(t.TempDir()), "a", ExecRunner, zerolog.New(&buf))
	for range 2 {
		if _, err := e.Sync(context.Background(), in); err != nil {
			t.Fatal(err)
		}
	}
	want := `"object":"BGPPeer tor","field":"spec.sourceAddress","value":"None"`
	if n := strings.Count(buf.String(), want); n != 1 {
		t.Errorf("%s logged %d times, want once:\n%s", want, n, buf.String())
	}
}
