package confd

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/netnstest"
)

// Addresses of the local workload test: the workload's address is in host-1's block, it
// advertises a prefix of its own, and the node's side of its interface has the peering address
// (what Project Calico's felix assigns from BGPConfiguration localWorkloadPeeringIPV4).
const (
	wlAddr    = "10.65.1.2"
	wlPrefix  = "10.65.200.0/24"
	peeringIP = "169.254.0.179"
)

// TestRealBGPLocalWorkload runs host-1 (calico-confd and BIRD in a network namespace) and a
// workload namespace on a veth from host-1, running its own BIRD in AS 65010 that connects to
// the node's peering address. A BGPPeer whose localWorkloadSelector selects the workload makes
// host-1's BIRD peer with it: the session is Established, host-1 routes the workload's prefix
// via the workload, and the workload learns host-1's block. When the workload's labels no
// longer match, the session goes away and so does the route.
func TestRealBGPLocalWorkload(t *testing.T) {
	rig := newBGPRig(t, 1)
	st, h1 := rig.st, rig.hosts[0]
	wl := workloadNamespace(t, h1)

	wep := routerWorkload(h1)
	st.put(defaultBGP(true, 0, false), pool4(),
		peer("routers", api.BGPPeerSpec{LocalWorkloadSelector: "role == 'router'", ASNumber: asn(65010)}), wep)
	rig.nodes()
	rig.ownBlocks(block4)
	rig.start()
	startBIRD(t, wl)

	session := pname(PeerLocalWorkload, wlAddr, 0)
	waitUntil(t, 30*time.Second, "host-1's session with the workload", wantSessions(h1, session))
	waitUntil(t, 30*time.Second, "the workload's session with host-1", wantSessions(wl, "node"))
	waitUntil(t, 30*time.Second, "host-1 routes the workload's prefix via the workload",
		wantRoutes(t, h1, "-4", map[string]string{wlPrefix: "via " + wlAddr}))
	waitUntil(t, 30*time.Second, "the workload learns host-1's block via the peering address",
		wantRoutes(t, wl, "-4", map[string]string{block4(1): "via " + peeringIP}))
	if out := netnstest.Run(t, "ip", "netns", "exec", h1.ns, "ss", "-Htn", "state", "established", "sport", "= :179"); !strings.Contains(out, peeringIP+":179") {
		t.Errorf("the session is not on the peering address: %q", out)
	}

	// The workload's labels change: no BGPPeer selects it, so no session and no route.
	wep.Labels = map[string]string{"role": "web"}
	st.put(wep)
	waitUntil(t, 30*time.Second, "host-1 drops the session", wantSessions(h1))
	waitUntil(t, 30*time.Second, "host-1 drops the workload's prefix", wantRoutes(t, h1, "-4", nil, wlPrefix))
	peers, _ := os.ReadFile(filepath.Join(h1.dir, "bird_peers.cfg"))
	if strings.Contains(string(peers), "Local_Workload") {
		t.Errorf("a session with the workload is still configured:\n%s", peers)
	}
}

// routerWorkload is the endpoint of the workload on host h, labelled role=router.
func routerWorkload(h *testHost) *api.WorkloadEndpoint {
	return &api.WorkloadEndpoint{
		ObjectMeta: api.ObjectMeta{Name: "host--1-cni-wl1-eth0", Namespace: "default", Labels: map[string]string{"role": "router"}},
		Spec: api.WorkloadEndpointSpec{Orchestrator: "cni", Workload: "wl1", ContainerID: "wl1", Node: h.name, Endpoint: "eth0",
			InterfaceName: "cali1wl", IPNetworks: []string{wlAddr + "/32"}}}
}

// workloadNamespace makes a workload namespace on a veth from host h (cali1wl on the node,
// eth0 in the workload), routed as felix routes workloads, with the peering address on the
// node's side, and writes the workload's BIRD configuration: AS 65010, announcing wlPrefix.
func workloadNamespace(t *testing.T, h *testHost) *testHost {
	return workloadWithBIRD(t, h, 65010, wlPrefix, "where source = RTS_STATIC")
}

// workloadWithBIRD is workloadNamespace with the workload's AS, the prefix it announces and
// its export filter.
func workloadWithBIRD(t *testing.T, h *testHost, as uint32, prefix, export string) *testHost {
	t.Helper()
	wl := &testHost{name: "workload", ns: netnstest.New(t, "confd-wl").Name, dir: t.TempDir()}
	netnstest.Run(t, "ip", "-n", h.ns, "link", "add", "cali1wl", "type", "veth", "peer", "name", "eth0", "netns", wl.ns)
	netnstest.Run(t, "ip", "-n", h.ns, "addr", "add", peeringIP+"/32", "dev", "cali1wl")
	netnstest.Run(t, "ip", "-n", h.ns, "link", "set", "cali1wl", "up")
	netnstest.Run(t, "ip", "-n", h.ns, "route", "add", wlAddr+"/32", "dev", "cali1wl")
	netnstest.Run(t, "ip", "-n", wl.ns, "addr", "add", wlAddr+"/32", "dev", "eth0")
	netnstest.Run(t, "ip", "-n", wl.ns, "link", "set", "eth0", "up")
	netnstest.Run(t, "ip", "-n", wl.ns, "route", "add", peeringIP+"/32", "dev", "eth0")
	cfg := fmt.Sprintf(`router id %s;
protocol device { scan time 2; }
protocol kernel { ipv4 { import all; export filter { if source = RTS_BGP then accept; reject; }; }; learn; scan time 2; }
protocol static { ipv4; route %s blackhole; }
protocol bgp node {
  local %s as %d;
  neighbor %s as 64512;
  multihop;
  connect retry time 1;
  error wait time 1,2;
  hold time 3;
  ipv4 { import all; export %s; };
}
`, wlAddr, prefix, wlAddr, as, peeringIP, export)
	writeFile(t, filepath.Join(wl.dir, "bird.cfg"), cfg)
	return wl
}
