package confd

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rs/zerolog"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/datastore/etcdtest"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// conformanceCase is one behaviour of Project Calico's confd, with data of our own: objects and
// block affinities of node (state by CIDR) as written into etcd, and what the model built from
// them must mean.
type conformanceCase struct {
	name       string
	node       string
	objects    []api.Resource
	affinities map[string]string
	check      func(t *testing.T, m *Model)
}

// TestConformance writes each case into a real etcd, reads it back through confd's syncer (so
// through decoding and validation), builds the model, renders it with the shipped templates
// (checked by bird -p) and checks the model's meaning: sessions and their settings, blocks,
// routes and filter decisions. The real-BIRD tests (bgp_*_netns_test.go) check the behaviours
// where routes move.
func TestConformance(t *testing.T) {
	requireBIRD(t)
	srv := etcdtest.Start(t)
	cli := srv.Client()
	for _, tc := range conformanceCases() {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := cli.Delete(context.Background(), "/calico/", clientv3.WithPrefix()); err != nil {
				t.Fatal(err)
			}
			st := store{t: t, cli: cli}
			st.put(tc.objects...)
			for cidr, state := range tc.affinities {
				v, _ := json.Marshal(api.BlockAffinity{State: state})
				st.putRaw(datastore.AffinityKey(tc.node, cidr), string(v))
			}
			in := syncedInputs(t, cli, tc.node)
			if _, err := NewEngine(testConfig(t.TempDir()), tc.node, ExecRunner, zerolog.Nop()).Sync(context.Background(), in); err != nil {
				t.Fatalf("render or bird -p: %v", err)
			}
			tc.check(t, build(in, tc.node))
		})
	}
}

// syncedInputs runs confd's syncer for node until it is in sync and returns the inputs.
func syncedInputs(t *testing.T, cli *clientv3.Client, node string) *Inputs {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	msgs := make(chan syncer.Message, 16)
	go syncer.New(datastore.NewFromEtcd(cli), SyncerConfig(node), zerolog.Nop()).Run(ctx, msgs)
	s := NewStore(node)
	for {
		select {
		case <-ctx.Done():
			t.Fatal("confd's syncer never got in sync")
		case m := <-msgs:
			if s.Apply(m); s.HasSnapshot() && m.Status == syncer.InSync {
				return s.Inputs()
			}
		}
	}
}

func globalBGP(spec api.BGPConfigurationSpec) *api.BGPConfiguration {
	return bgpConfig("default", spec)
}

// sessions summarises a family's sessions by name.
func sessions(f *Family) map[string]string {
	out := map[string]string{}
	for _, p := range f.Peers {
		s := fmt.Sprintf("%s as %d", p.IP, p.AS)
		if p.SourceAddress.IsValid() {
			s += " from " + p.SourceAddress.String()
		}
		for _, f := range []struct {
			name string
			on   bool
		}{{" passive", p.Passive}, {" internal", p.Internal}, {" capped", p.CapPriority}} {
			if f.on {
				s += f.name
			}
		}
		out[p.Name.Name()] = s
	}
	return out
}

func wantEqual[T any](t *testing.T, what string, want, got T) {
	t.Helper()
	if d := cmp.Diff(want, got, cmp.Comparer(func(a, b netip.Addr) bool { return a == b }),
		cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); d != "" {
		t.Errorf("%s (-want +got):\n%s", what, d)
	}
}

func conformanceCases() []conformanceCase {
	mesh := globalBGP(api.BGPConfigurationSpec{})
	noMesh := globalBGP(api.BGPConfigurationSpec{NodeToNodeMeshEnabled: api.Bool(false)})
	a := func() *api.Node {
		return testNode("a", "198.18.0.1/24", "fd5c:ff::1/64", map[string]string{"rack": "r1"})
	}
	b := func() *api.Node {
		return testNode("b", "198.18.0.2/24", "fd5c:ff::2/64", map[string]string{"rack": "r1"})
	}
	pfx := netip.MustParsePrefix
	return []conformanceCase{{
		name: "a pending affinity is not this host's block; pendingDeletion keeps its blackhole, unaggregated",
		node: "a", objects: []api.Resource{mesh, a()},
		affinities: map[string]string{"10.65.0.0/26": "", "10.65.0.64/26": "confirmed", "10.65.0.128/26": "pending",
			"10.65.0.192/26": "pendingDeletion", "10.65.1.7/32": ""},
		check: func(t *testing.T, m *Model) {
			wantEqual(t, "blocks", []Block{
				{CIDR: pfx("10.65.0.0/26"), State: "confirmed", Aggregate: true, Blackhole: true},
				{CIDR: pfx("10.65.0.64/26"), State: "confirmed", Aggregate: true, Blackhole: true},
				{CIDR: pfx("10.65.0.192/26"), State: "pendingDeletion", Blackhole: true},
				{CIDR: pfx("10.65.1.7/32"), State: "confirmed", Aggregate: true},
			}, m.Families[0].Blocks)
		},
	}, {
		name: "tunnel routes are kept from iBGP peers (the AS the node uses on the session), not from eBGP ones",
		node: "a", objects: []api.Resource{mesh, a(), b(),
			bgpPeer("tor", api.BGPPeerSpec{PeerIP: "198.18.0.254", ASNumber: asn(65001)}),
			bgpPeer("tor-local-as", api.BGPPeerSpec{PeerIP: "198.18.0.253", ASNumber: asn(65001), LocalASNumber: asn(65001)})},
		check: func(t *testing.T, m *Model) {
			wantEqual(t, "sessions", map[string]string{
				"Mesh_198_18_0_2":     "198.18.0.2 as 64512 from 198.18.0.1 passive internal",
				"Global_198_18_0_254": "198.18.0.254 as 65001 from 198.18.0.1",
				"Global_198_18_0_253": "198.18.0.253 as 65001 from 198.18.0.1 internal",
			}, sessions(m.Families[0]))
			if m.BIRDProgramsIPIP {
				t.Error("BIRD programs IPIP routes by default (felix does)")
			}
		},
	}, {
		name: "a peering by peerSelector connects from both ends; a peerIP that is a node's is one-way",
		node: "a", objects: []api.Resource{noMesh, a(), b(), testNode("c", "198.18.0.3/24", "", map[string]string{"rack": "r2"}),
			bgpPeer("racks", api.BGPPeerSpec{PeerSelector: "rack == 'r1'"}),
			bgpPeer("to-c", api.BGPPeerSpec{PeerIP: "198.18.0.3", ASNumber: asn(64512)})},
		check: func(t *testing.T, m *Model) {
			wantEqual(t, "sessions", map[string]string{
				"Global_198_18_0_2": "198.18.0.2 as 64512 from 198.18.0.1 internal",
				"Global_198_18_0_3": "198.18.0.3 as 64512 from 198.18.0.1 passive internal",
			}, sessions(m.Families[0]))
		},
	}, {
		name: "BGPFilter priority and setPriority are the LOCAL_PREF that carries the priority",
		node: "a", objects: []api.Resource{noMesh, a(),
			&api.BGPFilter{ObjectMeta: api.ObjectMeta{Name: "prio"}, Spec: api.BGPFilterSpec{
				ExportV4: []api.BGPFilterRule{{Action: "Reject", Priority: api.Int(512)}},
				ImportV4: []api.BGPFilterRule{{Action: "Accept", Operations: []api.BGPFilterOperation{{SetPriority: &api.BGPFilterSetPriority{Value: 100}}}}}}},
			bgpPeer("tor", api.BGPPeerSpec{PeerIP: "198.18.0.254", ASNumber: asn(65001), Filters: []string{"prio"}})},
		check: func(t *testing.T, m *Model) {
			rules := map[string]string{}
			for _, f := range m.Families[0].Filters {
				rules[f.Direction] = f.Rules[0].String()
			}
			wantEqual(t, "rules", map[string]string{
				"export": "if ((defined(bgp_local_pref)&&(bgp_local_pref = 2147483135))) then { reject; }",
				"import": "bgp_local_pref = 2147483547; accept;",
			}, rules)
			p := m.Families[0].Peers[0]
			if p.ImportNone || p.ExportNone || len(p.ImportFilters) != 1 || len(p.ExportFilters) != 1 {
				t.Errorf("session %s does not apply the filter: %+v", p.Name, p)
			}
		},
	}, {
		name: "bindMode NodeIP: every session listens on, and so connects from, the node's address",
		node: "a", objects: []api.Resource{globalBGP(api.BGPConfigurationSpec{BindMode: "NodeIP", ListenPort: 1179}), a(), b(),
			bgpPeer("tor", api.BGPPeerSpec{PeerIP: "[2001:db8::1]:1180", ASNumber: asn(65001), SourceAddress: "None"})},
		check: func(t *testing.T, m *Model) {
			wantEqual(t, "IPv6 sessions", map[string]string{
				"Mesh_fd5c_ff__2":              "fd5c:ff::2 as 64512 from fd5c:ff::1 passive internal",
				"Global_2001_db8__1_port_1180": "2001:db8::1 as 65001 from fd5c:ff::1",
			}, sessions(m.Families[1]))
			if !m.StrictBind || m.ListenPort != 1179 {
				t.Errorf("strict bind %v, listen port %d", m.StrictBind, m.ListenPort)
			}
		},
	}, {
		name: "a peerIP without asNumber peers in the AS of the node with that address; no node, no session",
		node: "a", objects: []api.Resource{noMesh, a(), withAS(b(), 65002),
			bgpPeer("to-b", api.BGPPeerSpec{PeerIP: "fd5c:ff::2"}),
			bgpPeer("to-nobody", api.BGPPeerSpec{PeerIP: "fd5c:ff::99"}),
			bgpPeer("ttl-only", api.BGPPeerSpec{Node: "a", TTLSecurity: api.Int(1)})},
		check: func(t *testing.T, m *Model) {
			wantEqual(t, "IPv6 sessions", map[string]string{"Global_fd5c_ff__2": "fd5c:ff::2 as 65002 from fd5c:ff::1 passive"}, sessions(m.Families[1]))
			wantEqual(t, "IPv4 sessions", map[string]string{}, sessions(m.Families[0]))
		},
	}, {
		name: "service ranges: entries without a CIDR are ignored; a node excluded from load balancers advertises none",
		node: "a", objects: []api.Resource{globalBGP(api.BGPConfigurationSpec{
			ServiceClusterIPs:      []api.ServiceIPBlock{{CIDR: "10.96.0.0/16"}, {}},
			ServiceLoadBalancerIPs: []api.ServiceIPBlock{{}, {CIDR: "198.51.100.0/24"}}}),
			testNode("a", "198.18.0.1/24", "", map[string]string{excludeLabel: "true"})},
		check: func(t *testing.T, m *Model) {
			wantEqual(t, "service ranges", []netip.Prefix{pfx("10.96.0.0/16"), pfx("198.51.100.0/24")}, m.Families[0].ServiceRanges)
			wantEqual(t, "advertised", []netip.Prefix(nil), m.Families[0].StaticRoutes)
			wantEqual(t, "warnings", []Comment(nil), m.Warnings)
		},
	}, {
		name: "programClusterRoutes Enabled: BIRD programs IPIP pools' routes through tunl0 (CrossSubnet: outside the node's network)",
		node: "a", objects: []api.Resource{globalBGP(api.BGPConfigurationSpec{ProgramClusterRoutes: api.Str("Enabled")}), a(),
			ipPool("always", api.IPPoolSpec{CIDR: "10.65.0.0/16", IPIPMode: "Always"}),
			ipPool("cross", api.IPPoolSpec{CIDR: "10.66.0.0/16", IPIPMode: "CrossSubnet"}),
			ipPool("vxlan", api.IPPoolSpec{CIDR: "10.67.0.0/16", VXLANMode: "Always"})},
		check: func(t *testing.T, m *Model) {
			var got []string
			for _, p := range m.Families[0].Pools {
				got = append(got, p.Name.String()+" "+p.Tunnel+" "+p.LocalSubnet.String()+map[bool]string{true: " programmed", false: ""}[p.ProgramKernel])
			}
			wantEqual(t, "pools", []string{"always always 198.18.0.0/24 programmed",
				"cross crossSubnet 198.18.0.0/24 programmed", "vxlan  invalid Prefix"}, got)
			if !m.BIRDProgramsIPIP || !m.Families[0].KernelPoolRules {
				t.Errorf("BIRD programs IPIP %v, kernel pool rules %v", m.BIRDProgramsIPIP, m.Families[0].KernelPoolRules)
			}
		},
	}, {
		name: "a node without an IPv4 address has no IPv4 pool rules in its kernel filter",
		node: "a", objects: []api.Resource{mesh, testNode("a", "", "fd5c:ff::1/64", nil), ipPool("v4", api.IPPoolSpec{CIDR: "10.65.0.0/16", IPIPMode: "Always"})},
		check: func(t *testing.T, m *Model) {
			if m.Families[0].KernelPoolRules || !m.Families[1].KernelPoolRules {
				t.Errorf("kernel pool rules: IPv4 %v, IPv6 %v", m.Families[0].KernelPoolRules, m.Families[1].KernelPoolRules)
			}
		},
	}, {
		name: "a local workload's routes never outrank the host's; other sessions keep their priorities",
		node: "a", objects: []api.Resource{mesh, a(), b(),
			bgpPeer("wl", api.BGPPeerSpec{LocalWorkloadSelector: "bgp == 'yes'", ASNumber: asn(64512)}),
			&api.WorkloadEndpoint{ObjectMeta: api.ObjectMeta{Name: "a-cni-wl1-eth0", Namespace: "ns", Labels: map[string]string{"bgp": "yes"}},
				Spec: api.WorkloadEndpointSpec{Orchestrator: "cni", Workload: "wl1", ContainerID: "wl1", Node: "a", Endpoint: "eth0",
					InterfaceName: "cali1", IPNetworks: []string{"10.65.0.5/32"}}}},
		check: func(t *testing.T, m *Model) {
			wantEqual(t, "sessions", map[string]string{
				"Mesh_198_18_0_2":          "198.18.0.2 as 64512 from 198.18.0.1 passive internal",
				"Local_Workload_10_65_0_5": "10.65.0.5 as 64512 passive internal capped",
			}, sessions(m.Families[0]))
		},
	}, {
		name: "a WireGuard node leaves routes via the other WireGuard nodes to felix; a reflector passes on service ranges",
		node: "a", objects: []api.Resource{
			globalBGP(api.BGPConfigurationSpec{ServiceExternalIPs: []api.ServiceIPBlock{{CIDR: "203.0.113.7/32"}}}),
			withWireguard(withCluster(a(), "224.0.0.1")), withWireguard(b()), testNode("c", "198.18.0.3/24", "", nil)},
		check: func(t *testing.T, m *Model) {
			wantEqual(t, "WireGuard peers", []netip.Addr{netip.MustParseAddr("198.18.0.2")}, m.Families[0].WireguardPeers)
			wantEqual(t, "reflected services", []netip.Prefix{pfx("203.0.113.7/32")}, m.Families[0].ReflectedServices)
		},
	}}
}

func withWireguard(n *api.Node) *api.Node {
	n.Spec.Wireguard = &api.NodeWireguard{InterfaceIPv4Address: "10.65.9.1"}
	return n
}
