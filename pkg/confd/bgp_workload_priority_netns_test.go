package confd

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/netnstest"
)

// TestRealBGPWorkloadCannotOutrankHost: host-1 has a default route as DHCP installs them (metric
// 100). A local workload peering over iBGP (the BGPPeer's asNumber is the node's AS) announces a
// default route with LOCAL_PREF 2147483647 (metric 0 under Project Calico's conversion). host-1
// takes the route, but at the normal priority (metric 1024): traffic still leaves by the
// host's own default route.
func TestRealBGPWorkloadCannotOutrankHost(t *testing.T) {
	rig := newBGPRig(t, 1)
	h1 := rig.hosts[0]
	netnstest.Run(t, "ip", "-n", h1.ns, "route", "add", "default", "via", "198.18.10.254", "dev", "eth0", "proto", "dhcp", "metric", "100")
	wl := workloadWithBIRD(t, h1, 64512, "0.0.0.0/0", "filter { if source = RTS_STATIC then { bgp_local_pref = 2147483647; accept; } reject; }")
	rig.st.put(defaultBGP(true, 0, false), pool4(),
		peer("routers", api.BGPPeerSpec{LocalWorkloadSelector: "role == 'router'", ASNumber: asn(64512)}), routerWorkload(h1))
	rig.nodes()
	rig.ownBlocks(block4)
	rig.start()
	startBIRD(t, wl)
	waitUntil(t, 30*time.Second, "the workload's session", wantSessions(h1, pname(PeerLocalWorkload, wlAddr, 0)))
	waitUntil(t, 30*time.Second, "host-1 programs the workload's default route", func() error {
		got := strings.Join(strings.Fields(netnstest.Run(t, "ip", "-n", h1.ns, "route", "show", "default", "proto", "bird")), " ")
		if !strings.HasPrefix(got, "default via "+wlAddr) {
			return fmt.Errorf("BIRD's default route: %q", got)
		}
		return nil
	})
	if got := netnstest.Run(t, "ip", "-n", h1.ns, "route", "show", "default", "proto", "bird"); !strings.Contains(got, "metric 1024") {
		t.Errorf("the workload's default route is not at the normal priority: %q", got)
	}
	if got := netnstest.Run(t, "ip", "-n", h1.ns, "route", "get", "203.0.113.1"); !strings.Contains(got, "via 198.18.10.254 dev eth0") {
		t.Errorf("traffic leaves by the workload's route, not the host's DHCP default: %q", got)
	}
}
