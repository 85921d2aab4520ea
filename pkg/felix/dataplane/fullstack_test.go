package dataplane_test

import (
	"context"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/calico-host/calico-host/internal/logtest"
	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane"
	"github.com/calico-host/calico-host/pkg/netnstest"
)

// TestFullStack runs the Dataplane with the real kernel pieces (routes, ifaces, vxlan), which
// it opens itself, in a fresh "host" namespace: the workloads' veths exist but nothing else is
// configured on the host side, not even IP forwarding; the dataplane must enable forwarding,
// write the workload MTU file, add the workload routes, apply the interface sysctls (proxy
// ARP), program policy, create the VXLAN device with its peer and route, report the endpoints
// up, and clean up when an endpoint goes.
func TestFullStack(t *testing.T) {
	netnstest.Require(t)
	host, fabric := netnstest.New(t, "fs-host"), netnstest.New(t, "fs-fab")
	if out, err := exec.Command("ip", "link", "add", "eth0", "netns", host.Name, "type", "veth", "peer", "name", "eth0", "netns", fabric.Name).CombinedOutput(); err != nil {
		t.Fatalf("veth: %v: %s", err, out)
	}
	fabric.Exec(t, "ip", "link", "set", "eth0", "up")
	host.Exec(t, "ip", "addr", "add", "198.18.0.1/24", "dev", "eth0")
	host.Exec(t, "ip", "link", "set", "eth0", "up")
	host.Exec(t, "ip", "route", "add", "default", "via", "198.18.0.2", "dev", "eth0")
	a := addWorkload(t, host, "fs-a", "cali0000000000a", "10.65.0.1")
	b := addWorkload(t, host, "fs-b", "cali0000000000b", "10.65.0.2")
	ln := listen(t, b, "10.65.0.2:8080")
	defer ln.Close()

	mtuFile := filepath.Join(t.TempDir(), "mtu")
	dp := newFullDataplane(t, host.Path(), mtuFile)
	if fwd := strings.TrimSpace(host.Exec(t, "sysctl", "-n", "net.ipv4.ip_forward")); fwd != "1" {
		t.Errorf("net.ipv4.ip_forward = %s after New, want 1", fwd)
	}
	if b, err := os.ReadFile(mtuFile); err != nil || strings.TrimSpace(string(b)) != "1500" {
		t.Errorf("workload MTU file: %q, %v; want the host MTU 1500", b, err)
	}
	in, status := make(chan []calc.Update), make(chan dataplane.EndpointStatus, 64)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); dp.Run(ctx, in, status, func() {}) }()
	defer func() { cancel(); <-done }()

	web := calc.PolicyID{Tier: "default", Kind: "gnp", Name: "web"}
	in <- fullStackState(web)
	select {
	case <-dp.FirstApplyDone():
	case <-time.After(10 * time.Second):
		t.Fatal("no first apply")
	}
	waitStatus(t, status, map[string]string{"a": "up", "b": "up"})
	// As Project Calico's felix with its defaults: DeviceRouteProtocol boot, NormalRoutePriority 1024.
	routesOut := host.Exec(t, "ip", "route", "show", "proto", "boot")
	for _, want := range []string{"10.65.0.1 dev cali0000000000a scope link metric 1024", "10.65.0.2 dev cali0000000000b scope link metric 1024",
		"10.65.1.0/26 via 10.65.1.1 dev vxlan.calico onlink"} {
		if !strings.Contains(routesOut, want) {
			t.Errorf("routes lack %q:\n%s", want, routesOut)
		}
	}
	if out := host.Exec(t, "ip", "-d", "link", "show", "vxlan.calico"); !strings.Contains(out, "vxlan id 4096") {
		t.Errorf("VXLAN device:\n%s", out)
	}
	if !dial(t, a, "10.65.0.2:8080") {
		t.Error("the allowed connection failed")
	}
	if dial(t, a, "10.65.0.2:8081") {
		t.Error("a connection to a port no policy allows got through")
	}
	in <- []calc.Update{calc.WorkloadEndpointRemove{ID: wepID("a")}}
	waitStatus(t, status, map[string]string{"a": ""})
	waitFor(t, "the workload route to go", func() bool {
		return !strings.Contains(host.Exec(t, "ip", "route", "show", "proto", "boot"), "10.65.0.1 ")
	})
}

// newFullDataplane builds the dataplane as felix does, with nothing but its configuration: it
// opens its own kernel pieces in the namespace.
func newFullDataplane(t *testing.T, nsPath, mtuFile string) *dataplane.Dataplane {
	log := logtest.Logger(t)
	dp, err := dataplane.New(dataplane.FelixDefaults(dataplane.Config{Hostname: "host1", NetNS: nsPath, InterfaceRefreshInterval: 10 * time.Second,
		MTUFile: mtuFile}), log)
	if err != nil {
		t.Fatal(err)
	}
	return dp
}

// fullStackState: two workloads, B's ingress allows tcp 8080 from A; a VXLAN pool with this
// host's tunnel address and one remote host's VTEP and block.
func fullStackState(web calc.PolicyID) []calc.Update {
	p := netip.MustParsePrefix
	egress := &calc.Profile{OutboundRules: []calc.Rule{{Action: calc.RuleAllow}}}
	wep := func(name, iface, ip string, tiers ...calc.TierInfo) calc.Update {
		return calc.WorkloadEndpointUpdate{ID: wepID(name), Endpoint: &calc.WorkloadEndpoint{
			Name: iface, IPv4Nets: []netip.Prefix{p(ip + "/32")}, ProfileIDs: []string{"egress"}, Tiers: tiers}}
	}
	return []calc.Update{
		calc.ConfigUpdate{HostIPv4: p("198.18.0.1/24"), VXLANTunnelAddrV4: netip.MustParseAddr("10.65.0.129")},
		calc.IPPoolUpdate{Pool: &calc.IPPool{Name: "pool", CIDR: p("10.65.0.0/16"), VXLANMode: "Always"}},
		calc.VTEPUpdate{VTEP: &calc.VTEP{Node: "host2", MAC: "66:00:00:00:00:02",
			TunnelAddr: netip.MustParseAddr("10.65.1.1"), ParentDeviceAddr: netip.MustParseAddr("198.18.0.3")}},
		calc.RouteUpdate{Route: &calc.Route{Dst: p("10.65.1.0/26"), Type: calc.RouteRemoteWorkload, DstNode: "host2", PoolType: calc.PoolVXLAN, VXLANMode: "Always"}},
		calc.IPSetUpdate{ID: "s:a", Members: []calc.IPSetMember{{Prefix: p("10.65.0.1/32")}}},
		calc.ActivePolicyUpdate{ID: web, Policy: &calc.Policy{InboundRules: []calc.Rule{{Action: calc.RuleAllow,
			Protocol: 6, SrcIPSetIDs: []string{"s:a"}, DstPorts: []calc.PortRange{{First: 8080, Last: 8080}}}}}},
		calc.ActiveProfileUpdate{Name: "egress", Profile: egress},
		wep("a", "cali0000000000a", "10.65.0.1"),
		wep("b", "cali0000000000b", "10.65.0.2", calc.TierInfo{Name: "default", DefaultAction: "Deny", IngressPolicies: []calc.PolicyID{web}}),
		calc.InSync{},
	}
}

func wepID(name string) calc.WorkloadEndpointID {
	return calc.WorkloadEndpointID{OrchestratorID: "cni", WorkloadID: "default/" + name, EndpointID: "eth0"}
}

// waitStatus waits until each named workload reported the given status.
func waitStatus(t *testing.T, ch <-chan dataplane.EndpointStatus, want map[string]string) {
	t.Helper()
	got := map[string]string{}
	deadline := time.After(10 * time.Second)
	for {
		done := true
		for name, st := range want {
			if v, ok := got[name]; !ok || v != st {
				done = false
			}
		}
		if done {
			return
		}
		select {
		case s := <-ch:
			if s.Workload != nil {
				got[strings.TrimPrefix(s.Workload.WorkloadID, "default/")] = s.Status
			}
		case <-deadline:
			t.Fatalf("statuses %v, want %v", got, want)
		}
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// addWorkload makes a workload namespace with a veth to the host, plumbed on the workload side
// only (address, gateway route); the host side is just an interface that is up.
func addWorkload(t *testing.T, host *netnstest.NS, role, iface, ip string) *netnstest.NS {
	w := netnstest.New(t, role)
	if out, err := exec.Command("ip", "link", "add", iface, "netns", host.Name, "type", "veth", "peer", "name", "eth0", "netns", w.Name).CombinedOutput(); err != nil {
		t.Fatalf("veth: %v: %s", err, out)
	}
	w.Exec(t, "ip", "addr", "add", ip+"/32", "dev", "eth0")
	w.Exec(t, "ip", "link", "set", "eth0", "up")
	w.Exec(t, "ip", "route", "add", "169.254.1.1", "dev", "eth0", "scope", "link")
	w.Exec(t, "ip", "route", "add", "default", "via", "169.254.1.1", "dev", "eth0")
	host.Exec(t, "ip", "link", "set", iface, "up")
	return w
}

// listen accepts (and closes) TCP connections on addr in the namespace.
func listen(t *testing.T, n *netnstest.NS, addr string) net.Listener {
	var ln net.Listener
	n.Do(t, func() {
		var err error
		if ln, err = net.Listen("tcp", addr); err != nil {
			t.Fatal(err)
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return ln
}

func dial(t *testing.T, n *netnstest.NS, addr string) bool {
	ok := false
	n.Do(t, func() {
		c, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
		if err == nil {
			c.Close()
			ok = true
		}
	})
	return ok
}
