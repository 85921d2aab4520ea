package confd

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/syncer"
)

func testWorkload(node, name string, labels map[string]string, profiles []string, nets ...string) *api.WorkloadEndpoint {
	return &api.WorkloadEndpoint{
		ObjectMeta: api.ObjectMeta{Name: name, Namespace: "default", Labels: labels},
		Spec:       api.WorkloadEndpointSpec{Node: node, Orchestrator: "cni", IPNetworks: nets, Profiles: profiles},
	}
}

// TestLocalWorkloadPeers: a BGPPeer with a localWorkloadSelector peers with the workloads on this
// node that it selects (their first address of each family), passively, in its asNumber; each
// workload with the first such BGPPeer by name only; never with other nodes' workloads.
func TestLocalWorkloadPeers(t *testing.T) {
	base := []any{
		bgpConfig("default", api.BGPConfigurationSpec{NodeToNodeMeshEnabled: api.Bool(false)}),
		testNode("a", "198.18.2.1/24", "fd5c:ff::1/64", map[string]string{"rack": "r1"}),
		testNode("b", "198.18.2.2/24", "", nil),
		&api.Profile{ObjectMeta: api.ObjectMeta{Name: "bgp-profile"}, Spec: api.ProfileSpec{LabelsToApply: map[string]string{"app": "bgp", "tier": "x"}}},
	}
	bgpApp := map[string]string{"app": "bgp"}
	for _, tc := range []struct {
		name string
		objs []any
		v4   []peerSummary
		v6   []string
		warn string
	}{
		{"global BGPPeer, workload on this node", []any{
			bgpPeer("w", api.BGPPeerSpec{LocalWorkloadSelector: "app == 'bgp'", ASNumber: asn(65003)}),
			testWorkload("a", "a-cni-1-eth0", bgpApp, nil, "10.65.0.5/32", "10.65.0.6/32", "fd5c::5/128")},
			[]peerSummary{{Name: "Local_Workload_10_65_0_5", AS: "65003", Passive: true}}, []string{"Local_Workload_fd5c__5"}, ""},
		{"workload on another node", []any{
			bgpPeer("w", api.BGPPeerSpec{LocalWorkloadSelector: "app == 'bgp'", ASNumber: asn(65003)}),
			testWorkload("b", "b-cni-1-eth0", bgpApp, nil, "10.65.1.5/32")}, nil, nil, ""},
		{"selector does not match", []any{
			bgpPeer("w", api.BGPPeerSpec{LocalWorkloadSelector: "app == 'other'", ASNumber: asn(65003)}),
			testWorkload("a", "a-cni-1-eth0", bgpApp, nil, "10.65.0.5/32")}, nil, nil, ""},
		{"BGPPeer for another node", []any{
			bgpPeer("w", api.BGPPeerSpec{Node: "b", LocalWorkloadSelector: "app == 'bgp'", ASNumber: asn(65003)}),
			testWorkload("a", "a-cni-1-eth0", bgpApp, nil, "10.65.0.5/32")}, nil, nil, ""},
		{"nodeSelector matches this node", []any{
			bgpPeer("w", api.BGPPeerSpec{NodeSelector: "rack == 'r1'", LocalWorkloadSelector: "app == 'bgp'", ASNumber: asn(65003)}),
			testWorkload("a", "a-cni-1-eth0", bgpApp, nil, "10.65.0.5/32")},
			[]peerSummary{{Name: "Local_Workload_10_65_0_5", AS: "65003", Passive: true}}, nil, ""},
		{"the first BGPPeer by name wins", []any{
			bgpPeer("z", api.BGPPeerSpec{LocalWorkloadSelector: "app == 'bgp'", ASNumber: asn(65009)}),
			bgpPeer("m", api.BGPPeerSpec{LocalWorkloadSelector: "has(app)", ASNumber: asn(65005)}),
			testWorkload("a", "a-cni-1-eth0", bgpApp, nil, "10.65.0.5/32")},
			[]peerSummary{{Name: "Local_Workload_10_65_0_5", AS: "65005", Passive: true}}, nil, ""},
		{"labels inherited from a profile", []any{
			bgpPeer("w", api.BGPPeerSpec{LocalWorkloadSelector: "app == 'bgp' && tier == 'x'", ASNumber: asn(65003)}),
			testWorkload("a", "a-cni-1-eth0", nil, []string{"bgp-profile"}, "10.65.0.5/32")},
			[]peerSummary{{Name: "Local_Workload_10_65_0_5", AS: "65003", Passive: true}}, nil, ""},
		{"a workload's own label wins over its profile's", []any{
			bgpPeer("w", api.BGPPeerSpec{LocalWorkloadSelector: "app == 'bgp'", ASNumber: asn(65003)}),
			testWorkload("a", "a-cni-1-eth0", map[string]string{"app": "web"}, []string{"bgp-profile"}, "10.65.0.5/32")}, nil, nil, ""},
		{"a bad ipNetworks entry: no session", []any{
			bgpPeer("w", api.BGPPeerSpec{LocalWorkloadSelector: "app == 'bgp'", ASNumber: asn(65003)}),
			testWorkload("a", "a-cni-1-eth0", bgpApp, nil, "10.65.0.5/32", "10.65.0.x")}, nil, nil,
			`BGPPeer w: workload default/a-cni-1-eth0 has a bad ipNetworks entry "10.65.0.x"; no session with it`},
		{"no address yet", []any{
			bgpPeer("w", api.BGPPeerSpec{LocalWorkloadSelector: "app == 'bgp'", ASNumber: asn(65003)}),
			testWorkload("a", "a-cni-1-eth0", bgpApp, nil)}, nil, nil,
			"BGPPeer w: workload default/a-cni-1-eth0 has no address yet; no session with it"},
		{"a workload claiming a node's address gets no session", []any{
			bgpPeer("w", api.BGPPeerSpec{LocalWorkloadSelector: "app == 'bgp'", ASNumber: asn(65003)}),
			testWorkload("a", "a-cni-1-eth0", bgpApp, nil, "198.18.2.2/32")}, nil, nil,
			"BGPPeer w: workload default/a-cni-1-eth0 claims 198.18.2.2, a node's BGP address; no session with it"},
		{"a workload claiming a BGPPeer's address does not replace its session", []any{
			bgpPeer("a-wl", api.BGPPeerSpec{LocalWorkloadSelector: "app == 'bgp'", ASNumber: asn(65003)}),
			bgpPeer("tor", api.BGPPeerSpec{Node: "a", PeerIP: "198.18.2.254", ASNumber: asn(65100)}),
			testWorkload("a", "a-cni-1-eth0", bgpApp, nil, "198.18.2.254/32")},
			[]peerSummary{{Name: "Node_198_18_2_254", AS: "65100"}}, nil, ""},
		{"a link-local IPv6 address is left out", []any{
			bgpPeer("w", api.BGPPeerSpec{LocalWorkloadSelector: "app == 'bgp'", ASNumber: asn(65003)}),
			testWorkload("a", "a-cni-1-eth0", bgpApp, nil, "10.65.0.5/32", "fe80::5/128")},
			[]peerSummary{{Name: "Local_Workload_10_65_0_5", AS: "65003", Passive: true}}, nil,
			"BGPPeer w: workload default/a-cni-1-eth0: BIRD cannot peer with fe80::5; no session with it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := build(testInputs(append(append([]any{}, base...), tc.objs...)...), "a")
			if d := cmp.Diff(tc.v4, summarize(m.Families[0])); d != "" {
				t.Errorf("v4 peers (-want +got):\n%s", d)
			}
			var v6 []string
			for _, p := range m.Families[1].Peers {
				v6 = append(v6, p.Name.Name())
			}
			if d := cmp.Diff(tc.v6, v6); d != "" {
				t.Errorf("v6 peers (-want +got):\n%s", d)
			}
			if w := strings.Join(strs(m.Warnings), "\n"); tc.warn != "" && !strings.Contains(w, tc.warn) || tc.warn == "" && w != "" {
				t.Errorf("warnings:\n%s\nwant %q", w, tc.warn)
			}
			// No other node peers with a's workloads (and none peers back); b with its own.
			onB := 0
			if tc.name == "workload on another node" {
				onB = 1
			}
			if b := build(testInputs(append(append([]any{}, base...), tc.objs...)...), "b"); len(b.Families[0].Peers) != onB {
				t.Errorf("node b has sessions %v", summarize(b.Families[0]))
			}
		})
	}
}

// TestLocalWorkloadPeerSettings: a workload session takes asNumber, localASNumber and filters
// from its BGPPeer and nothing else (Project Calico): no source address, password, timers,
// next hop or TTL security; on a route reflector, an iBGP workload is a client.
func TestLocalWorkloadPeerSettings(t *testing.T) {
	in := testInputs(
		bgpConfig("default", api.BGPConfigurationSpec{NodeToNodeMeshEnabled: api.Bool(false)}),
		withCluster(testNode("a", "198.18.2.1/24", "", nil), "198.18.255.1"),
		&api.BGPFilter{ObjectMeta: api.ObjectMeta{Name: "f"}, Spec: api.BGPFilterSpec{
			ImportV4: []api.BGPFilterRule{{CIDR: "10.65.0.0/16", MatchOperator: "In", Action: "Accept"}}}},
		bgpPeer("ebgp", api.BGPPeerSpec{LocalWorkloadSelector: "app == 'e'", ASNumber: asn(65003), LocalASNumber: asn(65100),
			Filters: []string{"f"}, KeepaliveTime: &api.Duration{Duration: 10e9}, MaxRestartTime: &api.Duration{Duration: 30e9},
			NextHopMode: "Self", TTLSecurity: api.Int(2), SourceAddress: "UseNodeIP"}),
		bgpPeer("ibgp", api.BGPPeerSpec{LocalWorkloadSelector: "app == 'i'", ASNumber: asn(64512)}),
		testWorkload("a", "e", map[string]string{"app": "e"}, nil, "10.65.0.5/32"),
		testWorkload("a", "i", map[string]string{"app": "i"}, nil, "10.65.0.6/32"),
	)
	m := build(in, "a")
	if len(m.Families[0].Peers) != 2 {
		t.Fatalf("peers %v, warnings %v", summarize(m.Families[0]), strs(m.Warnings))
	}
	e, i := m.Families[0].Peers[0], m.Families[0].Peers[1]
	if e.Name.Name() != "Local_Workload_10_65_0_5" || e.LocalAS != 65100 || !e.Passive || e.SourceAddress.IsValid() ||
		e.KeepaliveTime != 0 || e.GracefulRestartTime != 0 || e.NextHop != "" || e.TTLSecurity != 0 || e.RRClient {
		t.Errorf("eBGP workload session %+v", e)
	}
	if got := strs(e.ImportFilters); len(got) != 1 || !strings.Contains(got[0], "bgp_f_importFilterV4") {
		t.Errorf("import filter calls %v", got)
	}
	if !i.RRClient || i.RRClusterID.String() != "198.18.255.1" {
		t.Errorf("iBGP workload session on a route reflector: %+v", i)
	}
}

// TestStoreKeepsLocalWorkloads: the store keeps this node's workloads only; a workload or
// profile change asks for a render only while a BGPPeer peers with local workloads, and never
// for another node's workload.
func TestStoreKeepsLocalWorkloads(t *testing.T) {
	key := func(name string) string {
		return datastore.ResourcePrefix + "workloadendpoints/default/" + name
	}
	s := NewStore("a")
	local, other := testWorkload("a", "w1", nil, nil, "10.65.0.5/32"), testWorkload("b", "w2", nil, nil, "10.65.1.5/32")
	profile := syncer.Update{ID: datastore.IDOf(datastore.ResourcePrefix + "profiles/p"), Value: &api.Profile{ObjectMeta: api.ObjectMeta{Name: "p"}}}
	if s.Apply(syncer.Message{Updates: []syncer.Update{{ID: datastore.IDOf(key("w1")), Value: local}, profile}}) {
		t.Error("a workload and a profile asked for a render without a BGPPeer peering with workloads")
	}
	if len(s.Inputs().Workloads) != 1 || len(s.Inputs().Profiles) != 1 {
		t.Fatalf("not kept: %v %v", s.Inputs().Workloads, s.Inputs().Profiles)
	}
	s.Apply(syncer.Message{Updates: []syncer.Update{{ID: datastore.IDOf(datastore.ResourcePrefix + "bgppeers/w"),
		Value: bgpPeer("w", api.BGPPeerSpec{LocalWorkloadSelector: "all()", ASNumber: asn(65010)})}}})
	if !s.Apply(syncer.Message{Updates: []syncer.Update{{ID: datastore.IDOf(key("w1")), Value: local}}}) {
		t.Error("a local workload did not ask for a render")
	}
	if !s.Apply(syncer.Message{Updates: []syncer.Update{profile}}) {
		t.Error("a profile did not ask for a render")
	}
	if s.Apply(syncer.Message{Updates: []syncer.Update{{ID: datastore.IDOf(key("w2")), Value: other}}}) {
		t.Error("another node's workload asked for a render")
	}
	if got := len(s.Inputs().Workloads); got != 1 {
		t.Errorf("%d workloads kept, want 1", got)
	}
	moved := testWorkload("b", "w1", nil, nil, "10.65.0.5/32")
	if !s.Apply(syncer.Message{Updates: []syncer.Update{{ID: datastore.IDOf(key("w1")), Value: moved}}}) || len(s.Inputs().Workloads) != 0 {
		t.Errorf("a workload that moved away is still kept: %v", s.Inputs().Workloads)
	}
	if s.Apply(syncer.Message{Updates: []syncer.Update{{ID: datastore.IDOf(key("w1"))}}}) {
		t.Error("deleting a workload that is not kept asked for a render")
	}
	// The BGPPeer stops selecting workloads: workloads and profiles no longer ask for renders.
	s.Apply(syncer.Message{Updates: []syncer.Update{{ID: datastore.IDOf(datastore.ResourcePrefix + "bgppeers/w"),
		Value: bgpPeer("w", api.BGPPeerSpec{ASNumber: asn(65010), PeerIP: "198.18.2.9"})}}})
	if s.Apply(syncer.Message{Updates: []syncer.Update{{ID: datastore.IDOf(key("w1")), Value: local}, profile}}) {
		t.Error("a workload asked for a render after the last workload-selecting BGPPeer changed")
	}
}

// TestWorkloadInjection: WorkloadEndpoints written straight to etcd (as a hostile writer could)
// whose ipNetworks entry, or whose key, carries a line break and a BGP session. Neither reaches
// BIRD: neither is a valid workload, so neither gets a session, while a valid workload next to
// them gets exactly its own, and `bird -p` accepts the result.
func TestWorkloadInjection(t *testing.T) {
	kvs := baseKVs()
	kvs[datastore.ResourcePrefix+"bgppeers/w"] = `{"kind":"BGPPeer","apiVersion":"projectcalico.org/v3","metadata":{"name":"w"},` +
		`"spec":{"localWorkloadSelector":"app == 'bgp'","asNumber":65010}}`
	wep := func(name, nets string) string {
		return `{"kind":"WorkloadEndpoint","apiVersion":"projectcalico.org/v3","metadata":{"name":"` + name +
			`","namespace":"default","labels":{"app":"bgp"}},"spec":{"orchestrator":"cni","workload":"w","endpoint":"eth0",` +
			`"node":"host-a","interfaceName":"cali1","ipNetworks":` + nets + `}}`
	}
	kvs[datastore.ResourcePrefix+"workloadendpoints/default/host--a-cni-bad-eth0"] =
		wep("host--a-cni-bad-eth0", `["10.65.0.7/32\n}\n`+strings.ReplaceAll(evilBGP, `"`, `\"`)+` #"]`)
	kvs[datastore.ResourcePrefix+"workloadendpoints/default/x\n"+evilBGP+" #"] = wep("x", `["10.65.0.8/32"]`)
	kvs[datastore.ResourcePrefix+"workloadendpoints/default/host--a-cni-good-eth0"] = wep("host--a-cni-good-eth0", `["10.65.0.9/32"]`)
	cfg, log, err := runOnceFromEtcd(t, "host-a", kvs)
	if err != nil {
		t.Fatalf("render: %v\n%s", err, log)
	}
	text := renderedText(t, cfg)
	got := parseDeclarations(text)
	want := baseDecls
	want.Protocols = append([]string{"bgp Local_Workload_10_65_0_9"}, want.Protocols...)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("declarations (-want +got):\n%s\n%s", diff, text)
	}
	for _, key := range []string{"workloadendpoints/default/host--a-cni-bad-eth0", `workloadendpoints/default/x\nprotocol bgp evil`} {
		if !strings.Contains(log, key) {
			t.Errorf("the bad workload %s is not logged with its key:\n%s", key, log)
		}
	}
	if strings.Contains(text, "\nprotocol bgp evil") {
		t.Errorf("the injected session is in the configuration:\n%s", text)
	}
}
