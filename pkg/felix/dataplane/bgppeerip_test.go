package dataplane_test

import (
	"context"
	"net/netip"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/calico-host/calico-host/internal/logtest"
	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/rules"
	"github.com/calico-host/calico-host/pkg/netnstest"
)

// TestLocalBGPPeerAddrsKernel runs the real dataplane in a fresh namespace: the host-side veth
// of a workload that is a local BGP peer gets the peering addresses (/32, /128, link scope) and
// the workload reaches a listener there; another workload's interface does not, and loses a
// stale address; the addresses go when a field is cleared, when the workload stops being a
// peer, and when its endpoint goes while its interface stays.
func TestLocalBGPPeerAddrsKernel(t *testing.T) {
	netnstest.Require(t)
	host, fabric := netnstest.New(t, "bgpip-host"), netnstest.New(t, "bgpip-fab")
	// A default route on the host, as on any real host: proxy ARP answers the workloads for
	// their gateway 169.254.1.1 only when the host has a route to it.
	if out, err := exec.Command("ip", "link", "add", "eth0", "netns", host.Name, "type", "veth", "peer", "name", "eth0", "netns", fabric.Name).CombinedOutput(); err != nil {
		t.Fatalf("veth: %v: %s", err, out)
	}
	host.Exec(t, "ip", "addr", "add", "198.18.0.1/24", "dev", "eth0")
	host.Exec(t, "ip", "link", "set", "eth0", "up")
	host.Exec(t, "ip", "route", "add", "default", "via", "198.18.0.2", "dev", "eth0")
	const ifA, ifB = "cali000000bgp0a", "cali000000bgp0b"
	a := addWorkload(t, host, "bgpip-a", ifA, "10.65.0.1")
	addWorkload(t, host, "bgpip-b", ifB, "10.65.0.2")
	host.Exec(t, "ip", "addr", "add", "169.254.0.179/32", "dev", ifB) // stale: b is no peer
	ln := listen(t, host, "0.0.0.0:1179")
	defer ln.Close()

	log := logtest.Logger(t)
	dp, err := dataplane.New(dataplane.FelixDefaults(dataplane.Config{Hostname: "host1", NetNS: host.Path(), InterfaceRefreshInterval: 10 * time.Second,
		MTUFile: filepath.Join(t.TempDir(), "mtu"), IPv6Support: true, DefaultEndpointToHostAction: rules.ActionAccept}), log)
	if err != nil {
		t.Fatal(err)
	}
	in, status := make(chan []calc.Update), make(chan dataplane.EndpointStatus, 64)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); dp.Run(ctx, in, status, func() {}) }()
	defer func() { cancel(); <-done }()

	v4, v6 := netip.MustParseAddr("169.254.0.179"), netip.MustParseAddr("fd5c::179")
	wep := func(name, iface, ip, peer string, addrs ...netip.Addr) calc.Update {
		return calc.WorkloadEndpointUpdate{ID: wepID(name), Endpoint: &calc.WorkloadEndpoint{Name: iface,
			IPv4Nets: []netip.Prefix{netip.MustParsePrefix(ip + "/32")}, ProfileIDs: []string{"allow"},
			LocalBGPPeer: peer, LocalBGPPeerAddrs: addrs}}
	}
	allow := &calc.Profile{InboundRules: []calc.Rule{{Action: calc.RuleAllow}}, OutboundRules: []calc.Rule{{Action: calc.RuleAllow}}}
	in <- []calc.Update{calc.ConfigUpdate{}, calc.ActiveProfileUpdate{Name: "allow", Profile: allow},
		wep("a", ifA, "10.65.0.1", "rr", v4, v6), wep("b", ifB, "10.65.0.2", ""), calc.InSync{}}
	waitStatus(t, status, map[string]string{"a": "up", "b": "up"})

	addrs := func(iface string) string { return host.Exec(t, "ip", "addr", "show", "dev", iface) }
	waitAddrs := func(what, iface string, want, unwanted []string) {
		t.Helper()
		var out string
		ok := false
		defer func() {
			if !ok {
				t.Logf("%s:\n%s", iface, out)
			}
		}()
		waitFor(t, what, func() bool {
			out = addrs(iface)
			for _, w := range want {
				if !strings.Contains(out, w) {
					return false
				}
			}
			for _, u := range unwanted {
				if strings.Contains(out, u) {
					return false
				}
			}
			return true
		})
		ok = true
	}
	waitAddrs("the peering addresses on a", ifA, []string{"inet 169.254.0.179/32 scope link", "inet6 fd5c::179/128"}, nil)
	waitAddrs("the stale address to leave b", ifB, nil, []string{"169.254.0.179"})
	if out := addrs(ifB); !strings.Contains(out, "inet6 fe80::") {
		t.Errorf("b lost its kernel link-local address:\n%s", out)
	}
	if !dial(t, a, "169.254.0.179:1179") {
		t.Error("workload a cannot reach the host at its peering address")

	}

	in <- []calc.Update{wep("a", ifA, "10.65.0.1", "rr", v4)}
	waitAddrs("the IPv6 address to go (field cleared)", ifA, []string{"inet 169.254.0.179/32"}, []string{"fd5c::179"})
	in <- []calc.Update{wep("a", ifA, "10.65.0.1", "")}
	waitAddrs("the addresses to go (no longer a peer)", ifA, nil, []string{"169.254.0.179", "fd5c::179"})
	in <- []calc.Update{wep("b", ifB, "10.65.0.2", "rr", v4)}
	waitAddrs("the peering address on b", ifB, []string{"inet 169.254.0.179/32"}, nil)
	in <- []calc.Update{calc.WorkloadEndpointRemove{ID: wepID("b")}}
	waitAddrs("the address to go with b's endpoint", ifB, nil, []string{"169.254.0.179"})
	if out := addrs(ifA); strings.Contains(out, "169.254.0.179") {
		t.Errorf("a got the address back:\n%s", out)
	}
}
