package dataplane

import (
	"strings"
	"testing"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/routes"
)

// TestNetnsBIRDClusterRoutesLeftAlone: with the default ProgramClusterRoutes (EnabledIPIPOnly)
// BIRD owns an unencapsulated pool's cluster routes: felix, programming the kernel through
// netlink, neither replaces nor deletes BIRD's route to another host's block and BIRD's blackhole
// of this host's block, and adds none of its own. With Enabled the same routes are felix's: it
// replaces both with its own (protocol 80, the remote one onlink), which is what shows the first
// part could fail.
func TestNetnsBIRDClusterRoutesLeftAlone(t *testing.T) {
	tp := newTopology(t)
	tp.host.Exec(t, "ip", "route", "add", "10.65.1.0/26", "via", "198.18.0.2", "dev", "eth0", "proto", "bird")
	tp.host.Exec(t, "ip", "route", "add", "blackhole", "10.65.0.0/26", "proto", "bird")
	bird := clusterRouteLines(t, tp)
	t.Logf("BIRD's routes: %q", bird)
	if len(bird) != 2 {
		t.Fatalf("BIRD's routes: %q", bird)
	}
	run := func(cr calc.ClusterRoutes) {
		rh, err := routes.OpenNetlink(tp.host.Path())
		if err != nil {
			t.Fatal(err)
		}
		defer rh.Close()
		cfg := FelixDefaults(Config{})
		if cr != 0 {
			cfg.Routes.ClusterRoutes = cr
		}
		k := startDataplaneWith(t, tp, cfg, []Option{WithRoutes(routes.New(rh, cfg.routeOwnership(), testLogger(t)))}, noEncapHosts()...)
		k.send() // one more full apply, with the interfaces known
		k.stop()
	}
	run(0) // FelixDefaults: EnabledIPIPOnly
	if got := clusterRouteLines(t, tp); strings.Join(got, "\n") != strings.Join(bird, "\n") {
		t.Errorf("with EnabledIPIPOnly felix changed BIRD's routes:\n%q\nwant\n%q", got, bird)
	}
	run(calc.ClusterRoutesIPIP | calc.ClusterRoutesNoEncap)
	want := []string{"blackhole 10.65.0.0/26 proto 80", "10.65.1.0/26 via 198.18.0.2 dev eth0 proto 80 onlink"}
	if got := clusterRouteLines(t, tp); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("with Enabled:\n%q\nwant\n%q", got, want)
	}
}

// noEncapHosts: an unencapsulated pool with this host's block 10.65.0.0/26 and host2's
// 10.65.1.0/26 (host2 is the fabric, 198.18.0.2).
func noEncapHosts() []calc.Update {
	route := func(dst, node, nodeIP string, rt calc.RouteType) calc.Update {
		return calc.RouteUpdate{Route: &calc.Route{Dst: pfx(dst), Type: rt, DstNode: node, DstNodeIP: addr(nodeIP),
			PoolName: "p", PoolType: calc.PoolNoEncap, VXLANMode: "Never", IPIPMode: "Never", SameSubnet: true}}
	}
	return []calc.Update{
		calc.ConfigUpdate{HostIPv4: pfx("198.18.0.1/24")},
		calc.IPPoolUpdate{Pool: &calc.IPPool{Name: "p", CIDR: pfx("10.65.0.0/16"), VXLANMode: "Never", IPIPMode: "Never", Type: calc.PoolNoEncap}},
		route("10.65.0.0/26", "host1", "198.18.0.1", calc.RouteLocalWorkload),
		route("10.65.1.0/26", "host2", "198.18.0.2", calc.RouteRemoteWorkload),
	}
}

// clusterRouteLines are the host's IPv4 routes into 10.65.0.0/16, as ip(8) shows them.
func clusterRouteLines(t *testing.T, tp *topology) []string {
	var out []string
	for l := range strings.Lines(tp.host.Exec(t, "ip", "-4", "route", "show", "root", "10.65.0.0/16")) {
		out = append(out, strings.TrimSpace(l))
	}
	return out
}
