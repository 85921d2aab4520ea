package dataplane_test

import (
	"context"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/calico-host/calico-host/internal/logtest"
	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane"
	"github.com/calico-host/calico-host/pkg/netnstest"
)

// TestKernelRouteSyncDisabled runs the real dataplane twice in a fresh namespace with a
// workload that is a local BGP peer, a stale felix route and a stale address on its interface:
// normally felix routes the workload, removes the stale route and address and adds the peering
// address; with RouteSyncDisabled it enforces policy (the endpoint is up) but leaves routes and
// addresses exactly as they were, as Project Calico's felix does in policy-only mode.
func TestKernelRouteSyncDisabled(t *testing.T) {
	netnstest.Require(t)
	for _, disabled := range []bool{true, false} {
		host := netnstest.New(t, "rsync-host")
		const iface = "cali000000rsync"
		addWorkload(t, host, "rsync-wl", iface, "10.65.0.1")
		host.Exec(t, "ip", "route", "add", "10.65.9.0/26", "dev", iface, "proto", "80")
		host.Exec(t, "ip", "addr", "add", "198.19.9.9/32", "dev", iface)
		routesBefore := host.Exec(t, "ip", "route", "show", "table", "all")

		log := logtest.Logger(t)
		dp, err := dataplane.New(dataplane.FelixDefaults(dataplane.Config{Hostname: "host1", NetNS: host.Path(), InterfaceRefreshInterval: 10 * time.Second,
			MTUFile: filepath.Join(t.TempDir(), "mtu"), Routes: dataplane.RouteConfig{SyncDisabled: disabled}}), log)
		if err != nil {
			t.Fatal(err)
		}
		in, status := make(chan []calc.Update), make(chan dataplane.EndpointStatus, 64)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); dp.Run(ctx, in, status, func() {}) }()
		allow := &calc.Profile{InboundRules: []calc.Rule{{Action: calc.RuleAllow}}, OutboundRules: []calc.Rule{{Action: calc.RuleAllow}}}
		in <- []calc.Update{calc.ConfigUpdate{}, calc.ActiveProfileUpdate{Name: "allow", Profile: allow},
			calc.WorkloadEndpointUpdate{ID: wepID("a"), Endpoint: &calc.WorkloadEndpoint{Name: iface,
				IPv4Nets: []netip.Prefix{netip.MustParsePrefix("10.65.0.1/32")}, ProfileIDs: []string{"allow"},
				LocalBGPPeer: "rr", LocalBGPPeerAddrs: []netip.Addr{netip.MustParseAddr("169.254.0.179")}}},
			calc.InSync{}}
		waitStatus(t, status, map[string]string{"a": "up"})
		<-dp.FirstApplyDone()

		routes, addrs := host.Exec(t, "ip", "route", "show", "table", "all"), host.Exec(t, "ip", "addr", "show", "dev", iface)
		if disabled {
			if routes != routesBefore || !strings.Contains(addrs, "198.19.9.9/32") || strings.Contains(addrs, "169.254.0.179") {
				t.Errorf("RouteSyncDisabled: routes or addresses changed:\nbefore\n%s\nafter\n%s\n%s", routesBefore, routes, addrs)
			}
		} else {
			waitFor(t, "felix's routes and addresses", func() bool {
				routes, addrs = host.Exec(t, "ip", "route", "show"), host.Exec(t, "ip", "addr", "show", "dev", iface)
				return strings.Contains(routes, "10.65.0.1 dev "+iface) && !strings.Contains(routes, "10.65.9.0/26") &&
					!strings.Contains(addrs, "198.19.9.9") && strings.Contains(addrs, "169.254.0.179/32")
			})
		}
		if out := host.Exec(t, "nft", "list", "tables"); !strings.Contains(out, "table ip calico") {
			t.Errorf("RouteSyncDisabled %v: no nftables table:\n%s", disabled, out)
		}
		cancel()
		<-done
	}
}
