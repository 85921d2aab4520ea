package confd

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/netnstest"
)

// TestRealBGPProgramsIPIPRoutes: with BGPConfiguration programClusterRoutes Enabled, BIRD
// programs the routes of an IPIP pool through tunl0, to the block owner's address, onlink (as
// Project Calico's BIRD does with krt_tunnel); with ipipMode CrossSubnet and the owner in this
// host's network, directly through eth0; with the default (EnabledNoEncapOnly) not at all (felix
// programs them). This kernel has no IPIP driver: a veth named tunl0 stands in for the tunnel
// device (BIRD only needs an interface of that name).
func TestRealBGPProgramsIPIPRoutes(t *testing.T) {
	rig := newBGPRig(t, 2)
	t.Log("the kernel has no ipip module: a veth named tunl0 stands in for the IPIP device")
	st, h1, h2 := rig.st, rig.hosts[0], rig.hosts[1]
	cfg := defaultBGP(true, 0, false)
	cfg.Spec.ProgramClusterRoutes = api.Str("Enabled")
	pool := pool4()
	pool.Spec.IPIPMode = api.EncapAlways
	st.put(cfg, pool)
	rig.nodes()
	rig.ownBlocks(block4)
	for _, h := range rig.hosts {
		netnstest.Run(t, "ip", "-n", h.ns, "link", "add", "tunl0", "type", "veth", "peer", "name", "tunl0-peer")
		netnstest.Run(t, "ip", "-n", h.ns, "link", "set", "tunl0-peer", "up")
		netnstest.Run(t, "ip", "-n", h.ns, "link", "set", "tunl0", "up")
	}
	rig.start()
	kernelRoute := func(want string) func() error {
		return func() error {
			got := strings.Join(strings.Fields(netnstest.Run(t, "ip", "-n", h1.ns, "route", "show", block4(2), "proto", "bird")), " ")
			if got != want {
				return fmt.Errorf("host-1's route to host-2's block: %q, want %q", got, want)
			}
			return nil
		}
	}
	waitUntil(t, 30*time.Second, "through tunl0", kernelRoute(fmt.Sprintf("%s via %s dev tunl0 metric 1024 onlink", block4(2), h2.v4)))

	pool.Spec.IPIPMode = api.EncapCrossSubnet // host-2 is in host-1's network
	st.put(pool)
	waitUntil(t, 30*time.Second, "directly (CrossSubnet)", kernelRoute(fmt.Sprintf("%s via %s dev eth0 metric 1024", block4(2), h2.v4)))

	cfg.Spec.ProgramClusterRoutes = nil
	st.put(cfg)
	waitUntil(t, 30*time.Second, "left to felix", kernelRoute(""))
}
