package confd

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/datastore/etcdtest"
	"github.com/calico-host/calico-host/pkg/netnstest"
)

// TestRealBGPProgramsIPIPRoutes: with BGPConfiguration programClusterRoutes Enabled, BIRD
// programs the routes of an IPIP pool through tunl0, to the block owner's address, onlink (as
// Project Calico's BIRD does with krt_tunnel); with ipipMode CrossSubnet and the owner in this
// host's network, directly through eth0; with the default (EnabledNoEncapOnly) not at all (felix
// programs them). This kernel has no IPIP driver: a veth named tunl0 stands in for the tunnel
// device (BIRD only needs an interface of that name).
func TestRealBGPProgramsIPIPRoutes(t *testing.T) {
	requireRoot(t)
	t.Log("the kernel has no ipip module: a veth named tunl0 stands in for the IPIP device")
	srv := etcdtest.Start(t)
	ds, err := datastore.New(srv.Datastore())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ds.Close() })
	st := store{t: t, cli: srv.Client()}
	hosts := makeFabric(t, 2)
	cfg := defaultBGP(true, 0, false)
	cfg.Spec.ProgramClusterRoutes = api.Str("Enabled")
	pool := &api.IPPool{ObjectMeta: api.ObjectMeta{Name: "v4"}, Spec: api.IPPoolSpec{CIDR: "10.65.0.0/16", IPIPMode: api.EncapAlways}}
	st.put(cfg, pool)
	for i, h := range hosts {
		st.put(hostNode(h, nil, ""))
		st.affinity(h.name, block4(i+1))
		netnstest.Run(t, "ip", "-n", h.ns, "link", "add", "tunl0", "type", "veth", "peer", "name", "tunl0-peer")
		netnstest.Run(t, "ip", "-n", h.ns, "link", "set", "tunl0-peer", "up")
		netnstest.Run(t, "ip", "-n", h.ns, "link", "set", "tunl0", "up")
		startConfd(t, h, ds, templatesDir)
		startBIRD(t, h)
	}
	h1, h2 := hosts[0], hosts[1]
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
