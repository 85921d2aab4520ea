package confd

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/netnstest"
)

func hostNode(h *testHost, labels map[string]string, clusterID string) *api.Node {
	n := &api.Node{ObjectMeta: api.ObjectMeta{Name: h.name, Labels: labels}}
	n.Spec.BGP = &api.NodeBGPSpec{IPv4Address: h.v4 + "/24", IPv6Address: h.v6 + "/64", RouteReflectorClusterID: clusterID}
	return n
}

func defaultBGP(mesh bool, listenPort uint16, meshPassword bool) *api.BGPConfiguration {
	c := &api.BGPConfiguration{ObjectMeta: api.ObjectMeta{Name: "default"},
		Spec: api.BGPConfigurationSpec{ASNumber: asn(64512), NodeToNodeMeshEnabled: api.Bool(mesh), LogSeverityScreen: "Info",
			ListenPort: listenPort}}
	if meshPassword {
		c.Spec.NodeMeshPassword = &api.BGPPassword{SecretKeyRef: &api.SecretKeyRef{Name: "bgp", Key: "mesh"}}
	}
	return c
}

// blocks: host-N owns 10.65.N.0/26 and fd5c:1:0:N::/122.
func block4(i int) string { return fmt.Sprintf("10.65.%d.0/26", i) }
func block6(i int) string { return fmt.Sprintf("fd5c:1:0:%d::/122", i) }

// TestRealBGP runs three hosts, each with calico-confd and BIRD in its own network namespace on
// a shared bridge, against an embedded etcd, through a sequence of topologies:
// full mesh (IPv4 and IPv6) -> route reflector -> a BGPFilter rejecting a block -> filter
// removed -> full mesh again -> a broken template on one host -> a Node deleted.
func TestRealBGP(t *testing.T) {
	rig := newBGPRig(t, 3)
	st, hosts := rig.st, rig.hosts
	h1, h2, h3 := hosts[0], hosts[1], hosts[2]

	mesh := defaultBGP(true, 0, false)
	mesh.Spec.IPv4NormalRoutePriority = api.Int(2000) // IPv6 keeps Project Calico's 1024
	st.put(mesh, pool4(), pool6())
	rig.nodes()
	rig.ownBlocks(block4, block6)
	start := rig.start() // each host on its own copy of the templates: host-2's are broken later

	meshNames := func(self *testHost) []string {
		var out []string
		for _, o := range hosts {
			if o != self {
				out = append(out, pname(PeerMesh, o.v4, 0), pname(PeerMesh, o.v6, 0))
			}
		}
		return out
	}
	// meshRoutes: every other host's blocks via its address, our own as a blackhole.
	checkMeshRoutes := func(what string) {
		for i, h := range hosts {
			want4, want6 := map[string]string{block4(i + 1): "blackhole"}, map[string]string{block6(i + 1): "blackhole"}
			for j, o := range hosts {
				if o != h {
					want4[block4(j+1)] = "via " + o.v4
					want6[block6(j+1)] = "via " + o.v6
				}
			}
			took := waitUntil(t, 30*time.Second, what+": "+h.name+" IPv4 routes", wantRoutes(t, h, "-4", want4))
			waitUntil(t, 30*time.Second, what+": "+h.name+" IPv6 routes", wantRoutes(t, h, "-6", want6))
			t.Logf("%s: %s routes in place (+%s)", what, h.name, took.Round(time.Millisecond))
		}
	}

	// 1. Full mesh.
	for _, h := range hosts {
		waitUntil(t, 30*time.Second, "mesh sessions of "+h.name, wantSessions(h, meshNames(h)...))
	}
	t.Logf("mesh: all sessions Established %s after BIRD started", time.Since(start).Round(time.Millisecond))
	// calico-confd's metrics ask BIRD: 2 peers x 2 families, all Established.
	if got, want := sessionMetrics(t, h1.socket()), "calico_confd_bgp_sessions state=Established 4\ncalico_confd_bird_up 1\n"; got != want {
		t.Errorf("session metrics of host-1:\n%s\nwant\n%s", got, want)
	}
	checkMeshRoutes("mesh")
	t.Logf("mesh: host-2 kernel routes from BIRD: %v %v", h2.birdRoutes(t, "-4"), h2.birdRoutes(t, "-6"))
	// BGP routes enter the kernel at the normal route priority, as Project Calico's BIRD puts them
	// (BIRD's own default, 32, would beat the host's DHCP or static routes).
	for fam, want := range map[string]string{"-4": "metric 2000", "-6": "metric 1024"} {
		dst := map[string]string{"-4": block4(1), "-6": block6(1)}[fam]
		if got := netnstest.Run(t, "ip", "-n", h2.ns, fam, "route", "show", dst, "proto", "bird"); !strings.Contains(got, want) {
			out, _ := exec.Command("birdc", "-s", h2.socket(), "show", "route", "all", "for", dst).CombinedOutput()
			t.Errorf("host-2 route to %s: %q, want %s\n%s", dst, got, want, out)
		}
	}

	// 2. Route reflector: host-1 reflects (cluster 224.0.0.1), the others peer with it by selector;
	// everybody listens on port 1179 now.
	phase := time.Now()
	st.put(defaultBGP(false, 1179, false), hostNode(h1, map[string]string{"rr": "true"}, "224.0.0.1"),
		&api.BGPPeer{ObjectMeta: api.ObjectMeta{Name: "to-rr"}, Spec: api.BGPPeerSpec{NodeSelector: "all()", PeerSelector: "rr == 'true'"}})
	waitUntil(t, 30*time.Second, "RR sessions of host-1", wantSessions(h1,
		pname(PeerNode, h2.v4, 1179), pname(PeerNode, h3.v4, 1179), pname(PeerNode, h2.v6, 1179), pname(PeerNode, h3.v6, 1179)))
	for _, h := range []*testHost{h2, h3} {
		waitUntil(t, 30*time.Second, "RR client sessions of "+h.name, wantSessions(h, pname(PeerNode, h1.v4, 1179), pname(PeerNode, h1.v6, 1179)))
	}
	if out := netnstest.Run(t, "ip", "netns", "exec", h1.ns, "ss", "-Htln", "sport", "= :1179"); !strings.Contains(out, ":1179") {
		t.Errorf("host-1's BIRD does not listen on port 1179: %q", out)
	}
	// Reflected routes keep the originating host as next hop.
	waitUntil(t, 30*time.Second, "host-2 learns host-3's block through the reflector",
		wantRoutes(t, h2, "-4", map[string]string{block4(3): "via " + h3.v4, block4(1): "via " + h1.v4}))
	waitUntil(t, 30*time.Second, "host-3 learns host-2's IPv6 block through the reflector",
		wantRoutes(t, h3, "-6", map[string]string{block6(2): "via " + h2.v6}))
	if route := h2.birdCommand(t, "show route for "+block4(3)); !strings.Contains(route, "["+pname(PeerNode, h1.v4, 1179)+" ") {
		t.Errorf("host-2's route to host-3's block does not come from the reflector:\n%s", route)
	}
	t.Logf("route reflector: reconverged in %s; host-2 routes %v", time.Since(phase).Round(time.Millisecond), h2.birdRoutes(t, "-4"))
	peers, _ := os.ReadFile(filepath.Join(h1.dir, "bird_peers.cfg"))
	if !strings.Contains(string(peers), "rr cluster id 224.0.0.1") {
		t.Errorf("host-1 is not configured as a route reflector:\n%s", peers)
	}

	// 3. A BGPFilter on the peering rejects host-3's block: nobody else routes to it any more.
	phase = time.Now()
	st.put(&api.BGPFilter{ObjectMeta: api.ObjectMeta{Name: "no-host-3-block"}, Spec: api.BGPFilterSpec{
		ExportV4: []api.BGPFilterRule{{Action: "Reject", MatchOperator: "Equal", CIDR: block4(3)}}}},
		&api.BGPPeer{ObjectMeta: api.ObjectMeta{Name: "to-rr"}, Spec: api.BGPPeerSpec{NodeSelector: "all()",
			PeerSelector: "rr == 'true'", Filters: []string{"no-host-3-block"}}})
	waitUntil(t, 30*time.Second, "host-1 loses host-3's block", wantRoutes(t, h1, "-4", map[string]string{block4(2): "via " + h2.v4}, block4(3)))
	waitUntil(t, 30*time.Second, "host-2 loses host-3's block", wantRoutes(t, h2, "-4", map[string]string{block4(1): "via " + h1.v4}, block4(3)))
	waitUntil(t, 10*time.Second, "host-3 keeps its own block", wantRoutes(t, h3, "-4", map[string]string{block4(3): "blackhole"}))
	t.Logf("filter: block withdrawn in %s", time.Since(phase).Round(time.Millisecond))

	// 4. Filter removed: the route comes back.
	st.put(&api.BGPPeer{ObjectMeta: api.ObjectMeta{Name: "to-rr"}, Spec: api.BGPPeerSpec{NodeSelector: "all()", PeerSelector: "rr == 'true'"}})
	waitUntil(t, 30*time.Second, "host-2 relearns host-3's block", wantRoutes(t, h2, "-4", map[string]string{block4(3): "via " + h3.v4}))

	// 5. Back to the full mesh, on port 179, now with a TCP MD5 password read from a file.
	phase = time.Now()
	st.del("BGPPeer", "to-rr")
	st.put(defaultBGP(true, 0, true), hostNode(h1, nil, ""))
	for _, h := range hosts {
		waitUntil(t, 30*time.Second, "mesh sessions again on "+h.name, wantSessions(h, meshNames(h)...))
	}
	checkMeshRoutes("mesh again")
	if peers, _ := os.ReadFile(filepath.Join(h3.dir, "bird_peers.cfg")); strings.Count(string(peers), `password "mesh-pa55word";`) != 4 {
		t.Errorf("the mesh sessions have no password:\n%s", peers)
	}
	t.Logf("back to mesh: reconverged in %s", time.Since(phase).Round(time.Millisecond))

	// 6. A broken template on host-2: its files stay, BIRD keeps its sessions; a good template
	// and the next change recover.
	badPeers := filepath.Join(h2.dir, "templates", "bird_peers.cfg.template")
	good, _ := os.ReadFile(badPeers)
	before, _ := os.ReadFile(filepath.Join(h2.dir, "bird_ipam.cfg"))
	writeFile(t, badPeers, string(good)+"\nprotocol nonsense {}\n")
	st.put(&api.IPPool{ObjectMeta: api.ObjectMeta{Name: "extra"}, Spec: api.IPPoolSpec{CIDR: "10.65.128.0/24"}})
	waitUntil(t, 10*time.Second, "host-1 renders the new pool", func() error {
		data, _ := os.ReadFile(filepath.Join(h1.dir, "bird_ipam.cfg"))
		if !strings.Contains(string(data), "10.65.128.0/24") {
			return fmt.Errorf("no new pool yet")
		}
		return nil
	})
	time.Sleep(time.Second) // host-2 has had time to try (and fail)
	if after, _ := os.ReadFile(filepath.Join(h2.dir, "bird_ipam.cfg")); string(after) != string(before) {
		t.Errorf("host-2 installed files although bird -p rejects its configuration")
	}
	if err := wantSessions(h2, meshNames(h2)...)(); err != nil {
		t.Errorf("host-2's BIRD lost its sessions after a bad render: %v", err)
	}
	writeFile(t, badPeers, string(good))
	st.put(&api.IPPool{ObjectMeta: api.ObjectMeta{Name: "extra2"}, Spec: api.IPPoolSpec{CIDR: "10.65.129.0/24"}})
	waitUntil(t, 15*time.Second, "host-2 recovers on the next change", func() error {
		data, _ := os.ReadFile(filepath.Join(h2.dir, "bird_ipam.cfg"))
		if !strings.Contains(string(data), "10.65.128.0/24") || !strings.Contains(string(data), "10.65.129.0/24") {
			return fmt.Errorf("pools not rendered yet")
		}
		return nil
	})

	// 7. Deleting host-3's Node removes its sessions and routes everywhere.
	phase = time.Now()
	st.del("Node", h3.name)
	for _, pair := range [][2]*testHost{{h1, h2}, {h2, h1}} {
		h, other := pair[0], pair[1]
		waitUntil(t, 30*time.Second, h.name+" drops host-3's sessions",
			wantSessions(h, pname(PeerMesh, other.v4, 0), pname(PeerMesh, other.v6, 0)))
		waitUntil(t, 30*time.Second, h.name+" drops host-3's routes", wantRoutes(t, h, "-4", nil, block4(3)))
		waitUntil(t, 30*time.Second, h.name+" drops host-3's IPv6 routes", wantRoutes(t, h, "-6", nil, block6(3)))
	}
	t.Logf("node deleted: sessions and routes gone in %s", time.Since(phase).Round(time.Millisecond))

	// Nothing BIRD did escaped the namespaces: the test machine has no routes of ours.
	if out, _ := exec.Command("ip", "route", "show", "proto", "bird").CombinedOutput(); strings.Contains(string(out), "10.65.") {
		t.Errorf("BIRD routes in the test machine's own table:\n%s", out)
	}
}
