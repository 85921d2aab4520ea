package confd

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/netnstest"
)

// TestRealBGPTunnelRoutesNotReadvertised: two hosts on VXLAN pools (IPv4 and IPv6) and the
// node-to-node mesh. Each host has felix's routes to the other's blocks through vxlan.calico and
// vxlan-v6.calico, which BIRD's kernel protocol learns. Neither host announces the other's
// block back to it: each exports only its own blocks.
func TestRealBGPTunnelRoutesNotReadvertised(t *testing.T) {
	rig := newBGPRig(t, 2)
	hosts := rig.hosts
	v4, v6 := pool4(), pool6()
	v4.Spec.VXLANMode, v6.Spec.VXLANMode = api.EncapAlways, api.EncapAlways
	rig.st.put(defaultBGP(true, 0, false), v4, v6)
	rig.nodes()
	rig.ownBlocks(block4, block6)
	for i, h := range hosts {
		felixTunnels(t, h, i+1, hosts)
	}
	rig.start()
	h1, h2 := hosts[0], hosts[1]
	waitUntil(t, 30*time.Second, "mesh sessions", wantSessions(h1, pname(PeerMesh, h2.v4, 0), pname(PeerMesh, h2.v6, 0)))
	waitUntil(t, 30*time.Second, "mesh sessions", wantSessions(h2, pname(PeerMesh, h1.v4, 0), pname(PeerMesh, h1.v6, 0)))
	for i, h := range hosts {
		other := hosts[1-i]
		for _, fam := range []struct {
			table, kernel, peer, own, others string
		}{{"master4", "kernel4", other.v4, block4(i + 1), block4(2 - i)}, {"master6", "kernel6", other.v6, block6(i + 1), block6(2 - i)}} {
			// BIRD learnt felix's route to the other host's block...
			waitUntil(t, 30*time.Second, h.name+" learns felix's route to "+fam.others, func() error {
				if got := routesOf(t, h, "table "+fam.table+" protocol "+fam.kernel); got != fam.others {
					return fmt.Errorf("kernel routes %q", got)
				}
				return nil
			})
			// ...and exports to the other host only its own block.
			proto := pname(PeerMesh, fam.peer, 0)
			if got := routesOf(t, h, "table "+fam.table+" export "+proto); got != fam.own {
				t.Errorf("%s exports to %s %q, want only its own block %s", h.name, proto, got, fam.own)
			}
		}
	}
}

// felixTunnels gives host h (number i) what felix programs for VXLAN: vxlan.calico and
// vxlan-v6.calico with the host's tunnel addresses, and a route to every other host's blocks
// through them (protocol 80, as felix's).
func felixTunnels(t *testing.T, h *testHost, i int, hosts []*testHost) {
	t.Helper()
	for _, dev := range []struct{ name, local, addr string }{
		{"vxlan.calico", h.v4, fmt.Sprintf("10.65.%d.0/32", i)},
		{"vxlan-v6.calico", h.v6, fmt.Sprintf("fd5c:1:0:%d::/128", i)},
	} {
		netnstest.Run(t, "ip", "-n", h.ns, "link", "add", dev.name, "type", "vxlan", "id", "4096", "dstport", "4789", "local", dev.local, "dev", "eth0")
		netnstest.Run(t, "ip", "-n", h.ns, "addr", "add", dev.addr, "dev", dev.name)
		netnstest.Run(t, "ip", "-n", h.ns, "link", "set", dev.name, "up")
	}
	for j := range hosts {
		if j+1 == i {
			continue
		}
		netnstest.Run(t, "ip", "-n", h.ns, "route", "add", block4(j+1), "via", fmt.Sprintf("10.65.%d.0", j+1), "dev", "vxlan.calico", "onlink", "proto", "80")
		netnstest.Run(t, "ip", "-n", h.ns, "-6", "route", "add", block6(j+1), "via", fmt.Sprintf("fd5c:1:0:%d::", j+1), "dev", "vxlan-v6.calico", "onlink", "proto", "80")
	}
}

// routesOf lists the networks "show route <args>" shows.
func routesOf(t *testing.T, h *testHost, args string) string {
	t.Helper()
	out := h.birdCommand(t, "show route "+args)
	var nets []string
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.Contains(f[0], "/") {
			nets = append(nets, f[0])
		}
	}
	return strings.Join(nets, " ")
}
