package confd

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/api"
)

// Object builders for model tests.

func testNode(name, v4, v6 string, labels map[string]string) *api.Node {
	n := &api.Node{ObjectMeta: api.ObjectMeta{Name: name, Labels: labels}}
	if v4 != "" || v6 != "" {
		n.Spec.BGP = &api.NodeBGPSpec{IPv4Address: v4, IPv6Address: v6}
	}
	return n
}

func withAS(n *api.Node, as uint32) *api.Node {
	a := api.ASNumber(as)
	n.Spec.BGP.ASNumber = &a
	return n
}

func withCluster(n *api.Node, id string) *api.Node {
	n.Spec.BGP.RouteReflectorClusterID = id
	return n
}

func asn(n uint32) *api.ASNumber { a := api.ASNumber(n); return &a }

// testInputs builds Inputs from objects (and affinities as "cidr=state").
func testInputs(objs ...any) *Inputs {
	in := NewInputs()
	for _, o := range objs {
		switch v := o.(type) {
		case *api.Node:
			in.Nodes[v.Name] = v
		case *api.BGPPeer:
			in.Peers[v.Name] = v
		case *api.BGPFilter:
			in.Filters[v.Name] = v
		case *api.BGPConfiguration:
			in.BGPConfigs[v.Name] = v
		case *api.IPPool:
			in.Pools[v.Name] = v
		case *api.WorkloadEndpoint:
			in.Workloads[v.Namespace+"/"+v.Name] = v
		case *api.Profile:
			in.Profiles[v.Name] = v
		case string:
			cidr, state, _ := strings.Cut(v, "=")
			in.Affinities[cidr] = &api.BlockAffinity{State: state}
		}
	}
	return in
}

func bgpConfig(name string, spec api.BGPConfigurationSpec) *api.BGPConfiguration {
	return &api.BGPConfiguration{ObjectMeta: api.ObjectMeta{Name: name}, Spec: spec}
}

func bgpPeer(name string, spec api.BGPPeerSpec) *api.BGPPeer {
	return &api.BGPPeer{ObjectMeta: api.ObjectMeta{Name: name}, Spec: spec}
}

func ipPool(name string, spec api.IPPoolSpec) *api.IPPool {
	return &api.IPPool{ObjectMeta: api.ObjectMeta{Name: name}, Spec: spec}
}

// peerSummary is the part of a Peer most tests look at.
type peerSummary struct {
	Name, AS string
	Passive  bool
	RR       string // cluster id when RRClient
}

func summarize(f *Family) []peerSummary {
	var out []peerSummary
	for _, p := range f.Peers {
		s := peerSummary{Name: p.Name.Name(), AS: strconv.FormatUint(uint64(p.AS), 10), Passive: p.Passive}
		if p.RRClient {
			s.RR = p.RRClusterID.String()
		}
		out = append(out, s)
	}
	return out
}

func build(in *Inputs, node string) *Model { return Build(in, BuildOptions{NodeName: node}) }

// strs prints values (warnings, prefixes, filter calls) for comparisons.
func strs[T fmt.Stringer](xs []T) []string {
	var out []string
	for _, x := range xs {
		out = append(out, x.String())
	}
	return out
}

// modelOpts compare model values.
var modelOpts = cmp.Options{
	cmp.AllowUnexported(Comment{}, Symbol{}, Text{}, Syntax{}, Community{}),
	cmp.Comparer(func(a, b netip.Addr) bool { return a == b }),
	cmp.Comparer(func(a, b netip.Prefix) bool { return a == b }),
}

func TestMeshPeers(t *testing.T) {
	three := func(extra ...any) *Inputs {
		return testInputs(append([]any{
			testNode("a", "198.18.0.1/24", "", nil),
			testNode("b", "198.18.0.2/24", "", nil),
			withAS(testNode("c", "198.18.0.10/24", "", nil), 64600),
			testNode("no-bgp", "", "", nil),
		}, extra...)...)
	}
	tests := []struct {
		name string
		in   *Inputs
		node string
		want []peerSummary
	}{
		{"mesh by default; the higher address is passive (string order, as Calico)", three(), "b", []peerSummary{
			{Name: "Mesh_198_18_0_1", AS: "64512"},
			// "198.18.0.10" > "198.18.0.2" as strings is false, so b connects to c.
			{Name: "Mesh_198_18_0_10", AS: "64600"},
		}},
		{"the other side of each pair is passive", three(), "a", []peerSummary{
			{Name: "Mesh_198_18_0_10", AS: "64600", Passive: true},
			{Name: "Mesh_198_18_0_2", AS: "64512", Passive: true},
		}},
		{"global AS applies to nodes without one", three(bgpConfig("default", api.BGPConfigurationSpec{ASNumber: asn(65000)})), "c", []peerSummary{
			{Name: "Mesh_198_18_0_1", AS: "65000"},
			{Name: "Mesh_198_18_0_2", AS: "65000", Passive: true},
		}},
		{"mesh disabled", three(bgpConfig("default", api.BGPConfigurationSpec{NodeToNodeMeshEnabled: api.Bool(false)})), "a", nil},
		{"route reflectors are left out of the mesh", testInputs(
			testNode("a", "198.18.0.1/24", "", nil), testNode("b", "198.18.0.2/24", "", nil),
			withCluster(testNode("rr", "198.18.0.3/24", "", nil), "224.0.0.1")), "a",
			[]peerSummary{{Name: "Mesh_198_18_0_2", AS: "64512", Passive: true}}},
		{"a route reflector takes no part in the mesh", testInputs(
			testNode("a", "198.18.0.1/24", "", nil), withCluster(testNode("rr", "198.18.0.3/24", "", nil), "224.0.0.1")), "rr", nil},
		{"unregistered node has no sessions", three(), "new", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := build(tc.in, tc.node)
			if diff := cmp.Diff(tc.want, summarize(m.Families[0])); diff != "" {
				t.Errorf("peers (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMeshUsesPeerListenPortAndMeshSettings(t *testing.T) {
	in := testInputs(
		testNode("a", "198.18.0.1/24", "", nil), testNode("b", "198.18.0.2/24", "", nil),
		bgpConfig("default", api.BGPConfigurationSpec{ListenPort: 1179, NodeMeshMaxRestartTime: api.Dur(90 * time.Second),
			NodeMeshPassword: &api.BGPPassword{SecretKeyRef: &api.SecretKeyRef{Name: "s", Key: "mesh"}}}),
		bgpConfig("node.b", api.BGPConfigurationSpec{ListenPort: 2179}),
	)
	m := Build(in, BuildOptions{NodeName: "a", Password: func(ref *api.SecretKeyRef) (string, error) { return ref.Name + "-" + ref.Key, nil }})
	p := m.Families[0].Peers[0]
	if p.Port != 2179 || p.Password == nil || p.Password.String() != `"s-mesh"` || p.GracefulRestartTime != 90 || p.SourceAddress.String() != "198.18.0.1" {
		t.Errorf("mesh peer = %+v, want port 2179 (b's own), password s-mesh, restart 90, source 198.18.0.1", p)
	}
	if m.ListenPort != 1179 {
		t.Errorf("a listens on %d, want the global 1179", m.ListenPort)
	}
}

func TestRouteReflectorPeerings(t *testing.T) {
	rrLabel := map[string]string{"rr": "true"}
	in := testInputs(
		bgpConfig("default", api.BGPConfigurationSpec{NodeToNodeMeshEnabled: api.Bool(false)}),
		withCluster(testNode("rr1", "198.18.1.1/24", "", rrLabel), "224.0.0.1"),
		withCluster(testNode("rr2", "198.18.1.2/24", "", rrLabel), "224.0.0.1"),
		withCluster(testNode("rr3", "198.18.1.3/24", "", rrLabel), "224.0.0.9"),
		testNode("c1", "198.18.1.11/24", "", nil),
		testNode("c2", "198.18.1.12/24", "", nil),
		bgpPeer("clients", api.BGPPeerSpec{NodeSelector: "!has(rr)", PeerSelector: "rr == 'true'"}),
		bgpPeer("reflectors", api.BGPPeerSpec{NodeSelector: "has(rr)", PeerSelector: "has(rr)"}),
	)
	tests := []struct {
		node string
		want []peerSummary
	}{
		{"c1", []peerSummary{{Name: "Node_198_18_1_1", AS: "64512"}, {Name: "Node_198_18_1_2", AS: "64512"}, {Name: "Node_198_18_1_3", AS: "64512"}}},
		{"rr1", []peerSummary{
			{Name: "Node_198_18_1_11", AS: "64512", RR: "224.0.0.1"},
			{Name: "Node_198_18_1_12", AS: "64512", RR: "224.0.0.1"},
			{Name: "Node_198_18_1_2", AS: "64512"}, // same cluster: plain iBGP
			{Name: "Node_198_18_1_3", AS: "64512", RR: "224.0.0.1"},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.node, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, summarize(build(in, tc.node).Families[0])); diff != "" {
				t.Errorf("peers (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPeerIPWithoutASNumber: a BGPPeer naming a node by address needs no asNumber (Project
// Calico's route-reflector-by-IP peering): the reflector peers back with the other nodes over
// that family only, and the other nodes peer with it in its AS. An address that is no node's
// makes no session.
func TestPeerIPWithoutASNumber(t *testing.T) {
	in := testInputs(
		bgpConfig("default", api.BGPConfigurationSpec{NodeToNodeMeshEnabled: api.Bool(false), ASNumber: asn(64532)}),
		withCluster(testNode("rr", "198.18.1.1/24", "fd5c:ff::1/64", nil), "224.0.0.1"),
		testNode("n1", "198.18.1.2/24", "fd5c:ff::2/64", nil),
		withAS(testNode("n2", "198.18.1.3/24", "fd5c:ff::3/64", nil), 65009),
		bgpPeer("to-rr", api.BGPPeerSpec{PeerIP: "fd5c:ff::1"}),
		bgpPeer("nobody", api.BGPPeerSpec{PeerIP: "fd5c:ff::99"}),
		bgpPeer("n1-to-n2", api.BGPPeerSpec{Node: "n1", PeerIP: "198.18.1.3"}),
	)
	for _, tc := range []struct {
		node     string
		v4, want []peerSummary
	}{
		{"rr", nil, []peerSummary{{Name: "Node_fd5c_ff__2", AS: "64532", RR: "224.0.0.1"}, {Name: "Node_fd5c_ff__3", AS: "65009"}}},
		{"n1", []peerSummary{{Name: "Node_198_18_1_3", AS: "65009"}}, []peerSummary{{Name: "Global_fd5c_ff__1", AS: "64532"}}},
		// n2's AS is not the global one, which the BGPPeer without asNumber names: no reverse peering.
		{"n2", nil, []peerSummary{{Name: "Global_fd5c_ff__1", AS: "64532"}}},
	} {
		m := build(in, tc.node)
		if diff := cmp.Diff(tc.v4, summarize(m.Families[0])); diff != "" {
			t.Errorf("%s: IPv4 peers (-want +got):\n%s", tc.node, diff)
		}
		if diff := cmp.Diff(tc.want, summarize(m.Families[1])); diff != "" {
			t.Errorf("%s: IPv6 peers (-want +got):\n%s", tc.node, diff)
		}
	}
}

func TestExplicitPeers(t *testing.T) {
	base := []any{
		bgpConfig("default", api.BGPConfigurationSpec{NodeToNodeMeshEnabled: api.Bool(false)}),
		testNode("a", "198.18.2.1/24", "fd00::1/64", map[string]string{"rack": "r1"}),
		testNode("b", "198.18.2.2/24", "", map[string]string{"rack": "r2"}),
	}
	tests := []struct {
		name  string
		peers []any
		node  string
		want  []peerSummary
	}{
		{"global peer applies to every node", []any{bgpPeer("tor", api.BGPPeerSpec{PeerIP: "198.18.2.254", ASNumber: asn(65001)})}, "b",
			[]peerSummary{{Name: "Global_198_18_2_254", AS: "65001"}}},
		{"node selector picks nodes", []any{bgpPeer("tor", api.BGPPeerSpec{PeerIP: "198.18.2.254", ASNumber: asn(65001), NodeSelector: "rack == 'r1'"})}, "b", nil},
		{"node selector match is node-specific", []any{bgpPeer("tor", api.BGPPeerSpec{PeerIP: "198.18.2.254", ASNumber: asn(65001), NodeSelector: "rack == 'r1'"})}, "a",
			[]peerSummary{{Name: "Node_198_18_2_254", AS: "65001"}}},
		{"a global peering wins over a node-specific one to the same address", []any{
			bgpPeer("a-specific", api.BGPPeerSpec{PeerIP: "198.18.2.254", ASNumber: asn(65009), Node: "a"}),
			bgpPeer("z-global", api.BGPPeerSpec{PeerIP: "198.18.2.254", ASNumber: asn(65001)}),
		}, "a", []peerSummary{{Name: "Global_198_18_2_254", AS: "65001"}}},
		{"peer port in the name", []any{bgpPeer("tor", api.BGPPeerSpec{PeerIP: "198.18.2.254:1179", ASNumber: asn(65001)})}, "a",
			[]peerSummary{{Name: "Global_198_18_2_254_port_1179", AS: "65001"}}},
		{"global peering to a Calico node is one-way, and reversed on the other node", []any{
			bgpPeer("to-b", api.BGPPeerSpec{PeerIP: "198.18.2.2", ASNumber: asn(64512)})}, "a",
			[]peerSummary{{Name: "Global_198_18_2_2", AS: "64512", Passive: true}}},
		{"a global peering by peerSelector connects from both ends", []any{
			bgpPeer("racks", api.BGPPeerSpec{PeerSelector: "has(rack)"})}, "a",
			[]peerSummary{{Name: "Global_198_18_2_2", AS: "64512"}}},
		{"the remote node peers back", []any{bgpPeer("to-b", api.BGPPeerSpec{PeerIP: "198.18.2.2", ASNumber: asn(64512)})}, "b",
			[]peerSummary{{Name: "Node_198_18_2_1", AS: "64512"}}},
		{"no reverse peering when the AS differs", []any{bgpPeer("to-b", api.BGPPeerSpec{PeerIP: "198.18.2.2", ASNumber: asn(65000)})}, "b", nil},
		{"IPv6 peers are not IPv4 sessions", []any{bgpPeer("v6", api.BGPPeerSpec{PeerIP: "fd00::fe", ASNumber: asn(65001)})}, "a", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := build(testInputs(append(append([]any{}, base...), tc.peers...)...), tc.node)
			if diff := cmp.Diff(tc.want, summarize(m.Families[0])); diff != "" {
				t.Errorf("peers (-want +got):\n%s", diff)
			}
		})
	}
}

func TestExplicitPeerSettings(t *testing.T) {
	pw := func(key string) *api.BGPPassword {
		return &api.BGPPassword{SecretKeyRef: &api.SecretKeyRef{Name: "s", Key: key}}
	}
	passwords := map[string]string{"good": "pa55", "quote": `a"b`}
	in := testInputs(
		testNode("a", "198.18.2.1/24", "", nil),
		bgpPeer("ebgp", api.BGPPeerSpec{PeerIP: "198.18.2.254", ASNumber: asn(65001), KeepOriginalNextHop: true,
			Password: pw("good"), MaxRestartTime: api.Dur(2 * time.Minute), SourceAddress: "None"}),
		bgpPeer("ibgp-keep", api.BGPPeerSpec{PeerIP: "198.18.2.253", ASNumber: asn(64512), KeepOriginalNextHop: true, Password: pw("quote")}),
		bgpPeer("self", api.BGPPeerSpec{PeerIP: "198.18.2.252", ASNumber: asn(65001), NextHopMode: "Self", Password: pw("missing"),
			NumAllowedLocalASNumbers: api.Int(3), TTLSecurity: api.Int(2)}),
	)
	m := Build(in, BuildOptions{NodeName: "a", Password: func(ref *api.SecretKeyRef) (string, error) {
		if p, ok := passwords[ref.Key]; ok {
			return p, nil
		}
		return "", errors.New("no such file")
	}})
	got := map[string]Peer{}
	for _, p := range m.Families[0].Peers {
		got[p.Comment.String()] = p
	}
	checks := []struct {
		peer string
		ok   bool
		what string
	}{
		{"BGPPeer ebgp", got["BGPPeer ebgp"].NextHop == "keep", "eBGP keepOriginalNextHop -> next hop keep"},
		{"BGPPeer ebgp", got["BGPPeer ebgp"].Password != nil && got["BGPPeer ebgp"].Password.String() == `"pa55"`, "password read"},
		{"BGPPeer ebgp", got["BGPPeer ebgp"].GracefulRestartTime == 120, "maxRestartTime in seconds"},
		{"BGPPeer ebgp", !got["BGPPeer ebgp"].SourceAddress.IsValid(), "sourceAddress None"},
		{"BGPPeer ibgp-keep", got["BGPPeer ibgp-keep"].NextHop == "", "keepOriginalNextHop ignored for iBGP"},
		{"BGPPeer ibgp-keep", got["BGPPeer ibgp-keep"].Password == nil, "password with a quote dropped"},
		{"BGPPeer ibgp-keep", got["BGPPeer ibgp-keep"].SourceAddress.String() == "198.18.2.1", "source address defaults to the node IP"},
		{"BGPPeer self", got["BGPPeer self"].NextHop == "self", "nextHopMode Self"},
		{"BGPPeer self", got["BGPPeer self"].AllowLocalAS == 3 && got["BGPPeer self"].TTLSecurity == 2, "allow local as, ttl security"},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s: want %s; got %+v", c.peer, c.what, got[c.peer])
		}
	}
	wantWarnings := []string{
		`BGPPeer ibgp-keep: the password cannot be written into BIRD's configuration (empty, a quote, a backslash or a control character); no password`,
		`BGPPeer self: no password: no such file`,
	}
	if diff := cmp.Diff(wantWarnings, strs(m.Warnings)); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}

func TestFilterRule(t *testing.T) {
	tests := []struct {
		name string
		rule api.BGPFilterRule
		fi   int
		want string // "" for an error
	}{
		{"equal", api.BGPFilterRule{Action: "Accept", MatchOperator: "Equal", CIDR: "10.65.0.0/16"}, 0, "if ((net = 10.65.0.0/16)) then { accept; }"},
		{"not equal", api.BGPFilterRule{Action: "Reject", MatchOperator: "NotEqual", CIDR: "10.65.0.0/16"}, 0, "if ((net != 10.65.0.0/16)) then { reject; }"},
		{"in", api.BGPFilterRule{Action: "Accept", MatchOperator: "In", CIDR: "10.65.0.0/16"}, 0, "if ((net ~ 10.65.0.0/16)) then { accept; }"},
		{"not in, host bits masked", api.BGPFilterRule{Action: "Accept", MatchOperator: "NotIn", CIDR: "10.65.1.1/16"}, 0, "if ((net !~ 10.65.0.0/16)) then { accept; }"},
		{"prefix length range", api.BGPFilterRule{Action: "Accept", MatchOperator: "In", CIDR: "10.65.0.0/16",
			PrefixLength: &api.BGPFilterPrefixLength{Min: api.Int(8), Max: api.Int(26)}}, 0, "if ((net ~ [ 10.65.0.0/16{16,26} ])) then { accept; }"},
		{"prefix length v6 default max", api.BGPFilterRule{Action: "Accept", MatchOperator: "NotIn", CIDR: "fd5c::/16",
			PrefixLength: &api.BGPFilterPrefixLength{Min: api.Int(64)}}, 1, "if ((net !~ [ fd5c::/16{64,128} ])) then { accept; }"},
		{"source and interface", api.BGPFilterRule{Action: "Reject", Source: "RemotePeers", Interface: "eth*"}, 0,
			`if (((defined(source))&&(source ~ [ RTS_BGP ]))&&((defined(ifname))&&(ifname ~ "eth*"))) then { reject; }`},
		{"no match at all", api.BGPFilterRule{Action: "Reject"}, 0, "reject;"},
		{"peer type iBGP", api.BGPFilterRule{Action: "Reject", PeerType: "iBGP"}, 0, "if (is_same_as) then { reject; }"},
		{"peer type eBGP with a CIDR", api.BGPFilterRule{Action: "Accept", PeerType: "eBGP", MatchOperator: "In", CIDR: "10.65.0.0/16"}, 0,
			"if (!is_same_as) then { if ((net ~ 10.65.0.0/16)) then { accept; } }"},
		{"standard community", api.BGPFilterRule{Action: "Reject", Communities: &api.BGPFilterCommunityMatch{Values: []string{"65000:100"}}}, 0,
			"if (((65000, 100) ~ bgp_community)) then { reject; }"},
		{"large community", api.BGPFilterRule{Action: "Accept", Communities: &api.BGPFilterCommunityMatch{Values: []string{"65000:100:4294967295"}}}, 1,
			"if (((65000, 100, 4294967295) ~ bgp_large_community)) then { accept; }"},
		{"AS path prefix", api.BGPFilterRule{Action: "Reject", ASPathPrefix: []api.ASNumber{65000, 4200000000}}, 0,
			"if ((bgp_path ~ [= 65000 4200000000 * =])) then { reject; }"},
		{"every match, in Project Calico's order", api.BGPFilterRule{Action: "Accept", MatchOperator: "In", CIDR: "10.65.0.0/16",
			Source: "RemotePeers", Interface: "eth0", Communities: &api.BGPFilterCommunityMatch{Values: []string{"1:2"}},
			ASPathPrefix: []api.ASNumber{65001}}, 0,
			`if ((net ~ 10.65.0.0/16)&&((defined(source))&&(source ~ [ RTS_BGP ]))&&((defined(ifname))&&(ifname ~ "eth0"))&&((1, 2) ~ bgp_community)&&(bgp_path ~ [= 65001 * =])) then { accept; }`},
		{"operations, prepend in listed order", api.BGPFilterRule{Action: "Accept", MatchOperator: "Equal", CIDR: "10.65.0.0/16", Operations: []api.BGPFilterOperation{
			{AddCommunity: &api.BGPFilterAddCommunity{Value: "65000:200"}},
			{PrependASPath: &api.BGPFilterPrependASPath{Prefix: []api.ASNumber{65001, 65002}}},
			{AddCommunity: &api.BGPFilterAddCommunity{Value: "1:2:3"}}}}, 0,
			"if ((net = 10.65.0.0/16)) then { bgp_community.add((65000, 200)); bgp_path.prepend(65002); bgp_path.prepend(65001); bgp_large_community.add((1, 2, 3)); accept; }"},
		{"operations without a match", api.BGPFilterRule{Action: "Accept", PeerType: "eBGP", Operations: []api.BGPFilterOperation{
			{PrependASPath: &api.BGPFilterPrependASPath{Prefix: []api.ASNumber{65001}}}}}, 0,
			"if (!is_same_as) then { bgp_path.prepend(65001); accept; }"},
		{"priority: the LOCAL_PREF that carries it", api.BGPFilterRule{Action: "Reject", Priority: api.Int(512)}, 1,
			"if ((defined(bgp_local_pref)&&(bgp_local_pref = 2147483135))) then { reject; }"},
		{"priority after every other match", api.BGPFilterRule{Action: "Accept", ASPathPrefix: []api.ASNumber{65001}, Priority: api.Int(1024)}, 0,
			"if ((bgp_path ~ [= 65001 * =])&&(defined(bgp_local_pref)&&(bgp_local_pref = 2147482623))) then { accept; }"},
		{"setPriority", api.BGPFilterRule{Action: "Accept", Operations: []api.BGPFilterOperation{{SetPriority: &api.BGPFilterSetPriority{Value: 5}}}}, 0,
			"bgp_local_pref = 2147483642; accept;"},
		// Refused: never written wider.
		{"priority out of range", api.BGPFilterRule{Action: "Reject", Priority: api.Int(0)}, 0, ""},
		{"setPriority out of range", api.BGPFilterRule{Action: "Accept", Operations: []api.BGPFilterOperation{{SetPriority: &api.BGPFilterSetPriority{Value: 2147483647}}}}, 0, ""},
		{"prefix length with Equal", api.BGPFilterRule{Action: "Accept", MatchOperator: "Equal", CIDR: "10.65.0.0/16",
			PrefixLength: &api.BGPFilterPrefixLength{Max: api.Int(24)}}, 0, ""},
		{"empty prefix length range", api.BGPFilterRule{Action: "Accept", MatchOperator: "In", CIDR: "10.65.0.0/16",
			PrefixLength: &api.BGPFilterPrefixLength{Max: api.Int(8)}}, 0, ""},
		{"wrong family", api.BGPFilterRule{Action: "Accept", MatchOperator: "In", CIDR: "fd5c::/16"}, 0, ""},
		{"quote in interface", api.BGPFilterRule{Action: "Accept", Interface: `eth"0`}, 0, ""},
		{"two communities", api.BGPFilterRule{Action: "Reject", Communities: &api.BGPFilterCommunityMatch{Values: []string{"1:1", "1:2"}}}, 0, ""},
		{"bad community", api.BGPFilterRule{Action: "Reject", Communities: &api.BGPFilterCommunityMatch{Values: []string{"1:2)) || (true"}}}, 0, ""},
		{"unknown peer type", api.BGPFilterRule{Action: "Reject", PeerType: "confederation"}, 0, ""},
		{"operations with Reject", api.BGPFilterRule{Action: "Reject", Operations: []api.BGPFilterOperation{
			{AddCommunity: &api.BGPFilterAddCommunity{Value: "1:1"}}}}, 0, ""},
		{"empty operation", api.BGPFilterRule{Action: "Accept", Operations: []api.BGPFilterOperation{{}}}, 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := filterStatement(tc.rule, tc.fi)
			switch {
			case tc.want == "" && err == nil:
				t.Fatalf("got %s, want an error", got)
			case tc.want != "" && err != nil:
				t.Fatalf("err = %v", err)
			case got.String() != tc.want:
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestFilterFuncNames(t *testing.T) {
	long := strings.Repeat("x", 60)
	name, err := filterFuncName(long, "import", "V4")
	if err != nil || len(name.Name()) > maxSymbolLen {
		t.Errorf("%s (%v) is longer than %d characters", name, err, maxSymbolLen)
	}
	if other, _ := filterFuncName(long+"y", "import", "V4"); other == name {
		t.Errorf("two long names truncate to the same symbol %s", name)
	}
	if got, _ := filterFuncName("f", "export", "V6"); got.String() != "'bgp_f_exportFilterV6'" {
		t.Errorf("short name = %s", got)
	}
}

func TestPeersCallOnlyFiltersWithRulesInTheirFamily(t *testing.T) {
	in := testInputs(
		testNode("a", "198.18.2.1/24", "fd00::1/64", nil),
		bgpPeer("p4", api.BGPPeerSpec{PeerIP: "198.18.2.254", ASNumber: asn(65001), Filters: []string{"v4only", "both", "absent"}}),
		bgpPeer("p6", api.BGPPeerSpec{PeerIP: "fd00::fe", ASNumber: asn(65001), Filters: []string{"v4only", "both"}}),
		&api.BGPFilter{ObjectMeta: api.ObjectMeta{Name: "v4only"}, Spec: api.BGPFilterSpec{
			ImportV4: []api.BGPFilterRule{{Action: "Reject"}}}},
		&api.BGPFilter{ObjectMeta: api.ObjectMeta{Name: "both"}, Spec: api.BGPFilterSpec{
			ExportV4: []api.BGPFilterRule{{Action: "Reject"}}, ExportV6: []api.BGPFilterRule{{Action: "Accept"}}}},
	)
	m := build(in, "a")
	p4, p6 := m.Families[0].Peers[0], m.Families[1].Peers[0]
	if diff := cmp.Diff([]string{"'bgp_v4only_importFilterV4'()"}, strs(p4.ImportFilters)); diff != "" {
		t.Errorf("v4 import filters: %s", diff)
	}
	if diff := cmp.Diff([]string{"'bgp_both_exportFilterV4'()"}, strs(p4.ExportFilters)); diff != "" {
		t.Errorf("v4 export filters: %s", diff)
	}
	if len(p6.ImportFilters) != 0 || !cmp.Equal([]string{"'bgp_both_exportFilterV6'()"}, strs(p6.ExportFilters)) {
		t.Errorf("v6 peer filters = %v / %v", p6.ImportFilters, p6.ExportFilters)
	}
	if !cmp.Equal(strs(m.Warnings), []string{`BGPPeer p4: filter "absent" does not exist; ignored`}) {
		t.Errorf("warnings = %q", m.Warnings)
	}
}

func TestPoolsAndBlocks(t *testing.T) {
	in := testInputs(
		testNode("a", "198.18.0.1/24", "", nil),
		ipPool("plain", api.IPPoolSpec{CIDR: "10.65.0.0/18"}),
		ipPool("vxlan", api.IPPoolSpec{CIDR: "10.65.64.0/18", VXLANMode: "CrossSubnet"}),
		ipPool("ipip", api.IPPoolSpec{CIDR: "10.65.128.0/18", IPIPMode: "Always"}),
		ipPool("noexport", api.IPPoolSpec{CIDR: "10.65.192.0/18", DisableBGPExport: true, VXLANMode: "Never"}),
		ipPool("v6", api.IPPoolSpec{CIDR: "fd5c::/48"}),
		"10.65.1.0/26=confirmed", "10.65.0.0/26=", "10.65.2.0/26=pending", "10.65.3.7/32=confirmed", "fd5c::/122=pendingDeletion",
	)
	m := build(in, "a")
	pfx := netip.MustParsePrefix
	wantPools := []Pool{
		{Name: newComment("plain"), CIDR: pfx("10.65.0.0/18"), Export: true, ProgramKernel: true},
		{Name: newComment("vxlan"), CIDR: pfx("10.65.64.0/18"), Export: true, Reason: newComment("VXLAN routes are programmed by felix")},
		{Name: newComment("ipip"), CIDR: pfx("10.65.128.0/18"), Export: true, Reason: newComment("IPIP routes are programmed by felix")},
		{Name: newComment("noexport"), CIDR: pfx("10.65.192.0/18"), ProgramKernel: true, Reason: newComment("BGP export is disabled")},
	}
	if diff := cmp.Diff(wantPools, m.Families[0].Pools, modelOpts); diff != "" {
		t.Errorf("pools (-want +got):\n%s", diff)
	}
	wantBlocks := []Block{
		{CIDR: pfx("10.65.0.0/26"), State: "confirmed", Aggregate: true, Blackhole: true},
		{CIDR: pfx("10.65.1.0/26"), State: "confirmed", Aggregate: true, Blackhole: true},
		{CIDR: pfx("10.65.3.7/32"), State: "confirmed", Aggregate: true},
	}
	if diff := cmp.Diff(wantBlocks, m.Families[0].Blocks, modelOpts); diff != "" {
		t.Errorf("blocks (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]Block{{CIDR: pfx("fd5c::/122"), State: "pendingDeletion", Blackhole: true}}, m.Families[1].Blocks, modelOpts); diff != "" {
		t.Errorf("v6 blocks (-want +got):\n%s", diff)
	}
}

func TestCommunities(t *testing.T) {
	global := bgpConfig("default", api.BGPConfigurationSpec{
		Communities: []api.Community{{Name: "gold", Value: "64512:100"}, {Name: "big", Value: "1:2:3"}},
		PrefixAdvertisements: []api.PrefixAdvertisement{
			{CIDR: "10.65.0.0/16", Communities: []string{"gold", "65000:7", "nope"}},
			{CIDR: "fd5c::/48", Communities: []string{"big"}},
		},
	})
	node := bgpConfig("node.b", api.BGPConfigurationSpec{
		PrefixAdvertisements: []api.PrefixAdvertisement{{CIDR: "10.65.9.0/24", Communities: []string{"1:1"}}},
	})
	in := testInputs(global, node, testNode("a", "198.18.0.1/24", "", nil), testNode("b", "198.18.0.2/24", "", nil))
	rules := func(rs []CommunityRule) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.CIDR.String()+" "+strings.Join(strs(r.Communities), " "))
		}
		return out
	}
	a := build(in, "a")
	if diff := cmp.Diff([]string{"10.65.0.0/16 (64512, 100) (65000, 7)"}, rules(a.Families[0].Communities)); diff != "" {
		t.Errorf("a v4 (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"fd5c::/48 (1, 2, 3)"}, rules(a.Families[1].Communities)); diff != "" {
		t.Errorf("a v6 (-want +got):\n%s", diff)
	}
	if !a.Families[1].Communities[0].Communities[0].Large {
		t.Errorf("1:2:3 is not a large community")
	}
	if !cmp.Equal(strs(a.Warnings), []string{`BGPConfiguration default: unknown community "nope" for 10.65.0.0/16`}) {
		t.Errorf("warnings = %q", a.Warnings)
	}
	b := build(in, "b")
	if diff := cmp.Diff([]string{"10.65.9.0/24 (1, 1)"}, rules(b.Families[0].Communities)); diff != "" {
		t.Errorf("b uses its own advertisements (-want +got):\n%s", diff)
	}
}

func TestParseCommunity(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{{"1:2", true}, {"65535:65535", true}, {"65536:1", false}, {"4294967295:1:2", true}, {"1:2:3:4", false}, {"a:b", false}, {"01:2", false}} {
		if _, ok := parseCommunity(tc.in); ok != tc.ok {
			t.Errorf("parseCommunity(%q) ok = %v, want %v", tc.in, ok, tc.ok)
		}
	}
}

func TestRouterIDAndLogging(t *testing.T) {
	in := testInputs(testNode("a", "198.18.0.1/24", "", nil), testNode("v6", "", "fd00::6/64", nil),
		bgpConfig("default", api.BGPConfigurationSpec{LogSeverityScreen: "Warning"}),
		bgpConfig("node.v6", api.BGPConfigurationSpec{LogSeverityScreen: "Debug"}))
	tests := []struct {
		node, override, wantID, wantDebug string
	}{
		{"a", "", "198.18.0.1", "{ states }"},
		{"a", "198.18.9.9", "198.18.9.9", "{ states }"},
		{"a", "hash", hashToIPv4("a").String(), "{ states }"},
		{"v6", "", hashToIPv4("v6").String(), "all"},
	}
	for _, tc := range tests {
		m := Build(in, BuildOptions{NodeName: tc.node, RouterID: tc.override})
		if m.RouterID.String() != tc.wantID || m.Debug.String() != tc.wantDebug {
			t.Errorf("%s/%q: router id %s debug %q, want %s %q", tc.node, tc.override, m.RouterID, m.Debug, tc.wantID, tc.wantDebug)
		}
	}
	if id := hashToIPv4("v6"); id == hashToIPv4("a") || strings.HasPrefix(id.String(), "0.") {
		t.Errorf("hash router ids: %s", id)
	}
}

func TestServiceRoutes(t *testing.T) {
	in := testInputs(testNode("a", "198.18.0.1/24", "", nil), bgpConfig("default", api.BGPConfigurationSpec{
		ServiceClusterIPs:      []api.ServiceIPBlock{{CIDR: "10.96.0.0/12"}, {}, {CIDR: "fd00:96::/108"}},
		ServiceExternalIPs:     []api.ServiceIPBlock{{CIDR: "198.51.100.7/24"}},
		ServiceLoadBalancerIPs: []api.ServiceIPBlock{{CIDR: "10.96.0.0/12"}},
	}))
	m := build(in, "a")
	if len(m.Warnings) != 0 {
		t.Errorf("warnings: %v", m.Warnings)
	}
	if diff := cmp.Diff([]string{"10.96.0.0/12", "198.51.100.0/24"}, strs(m.Families[0].StaticRoutes)); diff != "" {
		t.Errorf("v4 (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"fd00:96::/108"}, strs(m.Families[1].StaticRoutes)); diff != "" {
		t.Errorf("v6 (-want +got):\n%s", diff)
	}
	// A node excluded from load balancers advertises none of them, and still keeps routes to
	// them out of its kernel.
	excluded := testNode("a", "198.18.0.1/24", "", map[string]string{"node.kubernetes.io/exclude-from-external-load-balancers": "true"})
	ex := build(testInputs(excluded, in.BGPConfigs["default"]), "a")
	if len(ex.Families[0].StaticRoutes) != 0 || len(ex.Families[1].StaticRoutes) != 0 {
		t.Errorf("an excluded node advertises %v %v", ex.Families[0].StaticRoutes, ex.Families[1].StaticRoutes)
	}
	if diff := cmp.Diff([]string{"10.96.0.0/12", "198.51.100.0/24"}, strs(ex.Families[0].ServiceRanges)); diff != "" {
		t.Errorf("excluded node's service ranges (-want +got):\n%s", diff)
	}
	if len(m.Families[0].ReflectedServices) != 0 {
		t.Errorf("a node that is not a route reflector passes on service routes: %v", m.Families[0].ReflectedServices)
	}
	// A route reflector passes on routes within the load balancer and external IP ranges.
	rr := testNode("a", "198.18.0.1/24", "", nil)
	rr.Spec.BGP.RouteReflectorClusterID = "224.0.0.1"
	in.Nodes["a"] = rr
	m = build(in, "a")
	if diff := cmp.Diff([]string{"10.96.0.0/12", "198.51.100.0/24"}, strs(m.Families[0].ReflectedServices)); diff != "" {
		t.Errorf("reflected v4 service ranges (-want +got):\n%s", diff)
	}
}

// BenchmarkBuild measures the model of one node in a 500-node mesh with 50 explicit peers,
// 20 filters and 50 pools.
func BenchmarkBuild(b *testing.B) {
	objs := []any{}
	for i := 0; i < 500; i++ {
		objs = append(objs, testNode("n"+strconv.Itoa(i), fmt.Sprintf("198.18.%d.%d/16", i/250, i%250+1),
			fmt.Sprintf("fd5c:ff::%x/64", i+1), map[string]string{"rack": "r" + strconv.Itoa(i%10)}))
	}
	for i := 0; i < 50; i++ {
		objs = append(objs, bgpPeer("p"+strconv.Itoa(i), api.BGPPeerSpec{PeerIP: fmt.Sprintf("198.19.0.%d", i+1), ASNumber: asn(65001),
			NodeSelector: "rack == 'r" + strconv.Itoa(i%10) + "'", Filters: []string{"f" + strconv.Itoa(i%20)}}),
			ipPool("pool"+strconv.Itoa(i), api.IPPoolSpec{CIDR: fmt.Sprintf("10.65.%d.0/24", i)}))
	}
	for i := 0; i < 20; i++ {
		objs = append(objs, &api.BGPFilter{ObjectMeta: api.ObjectMeta{Name: "f" + strconv.Itoa(i)}, Spec: api.BGPFilterSpec{
			ExportV4: []api.BGPFilterRule{{Action: "Reject", MatchOperator: "In", CIDR: "10.65.0.0/16"}}}})
	}
	in := testInputs(objs...)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m := build(in, "n7")
		if len(m.Families[0].Peers) != 499+5 {
			b.Fatalf("%d peers", len(m.Families[0].Peers))
		}
	}
}

// TestWireguardPeers: a node running WireGuard leaves the routes via the other WireGuard nodes
// to felix (BIRD does not program them), as Project Calico's kernel filter does; a node without
// WireGuard programs them all. bird -p accepts the result.
func TestWireguardPeers(t *testing.T) {
	wg := func(n *api.Node) *api.Node {
		n.Spec.Wireguard = &api.NodeWireguard{InterfaceIPv4Address: "10.65.0.1"}
		return n
	}
	in := testInputs(wg(testNode("a", "198.18.0.1/24", "fd5c:ff::1/64", nil)), wg(testNode("b", "198.18.0.2/24", "fd5c:ff::2/64", nil)),
		testNode("c", "198.18.0.3/24", "", nil))
	for node, want := range map[string][]string{"a": {"198.18.0.2"}, "b": {"198.18.0.1"}, "c": nil} {
		m := build(in, node)
		var got []string
		for _, ip := range m.Families[0].WireguardPeers {
			got = append(got, ip.String())
		}
		if diff := cmp.Diff(want, got); diff != "" || len(m.Families[1].WireguardPeers) != 0 {
			t.Errorf("%s: WireGuard peers (-want +got):\n%s (IPv6: %v)", node, diff, m.Families[1].WireguardPeers)
		}
	}
	requireBIRD(t)
	if _, err := NewEngine(testConfig(t.TempDir()), "a", ExecRunner, zerolog.Nop()).Sync(context.Background(), in); err != nil {
		t.Fatal(err)
	}
}
