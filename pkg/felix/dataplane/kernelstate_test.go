package dataplane

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"regexp"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/routes"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/rules"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/vxlan"
	"github.com/calico-host/calico-host/pkg/vtepmac"
)

var cmpAddrs = cmp.Comparer(func(a, b netip.Addr) bool { return a == b })
var cmpPrefixes = cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })

func TestDesiredRoutes(t *testing.T) {
	h := newHarness(t, Config{Hostname: "host1", IPv6Support: true, FloatingIPs: true})
	w := wep("w1", "cali11111111111", []string{"10.65.0.1/32"}, withV6("fd5c::1/128"))
	w.Endpoint.IPv4NAT = []calc.NATInfo{{ExtIP: addr("198.18.100.1"), IntIP: addr("10.65.0.1")}}
	down := wep("w2", "cali22222222222", []string{"10.65.0.2/32"})
	h.up("cali11111111111")
	h.dp.model.applyIface(iface("cali22222222222", false))
	h.send(append(vxlanHosts(), w, down)...)
	want := []routes.Route{
		{Dst: pfx("10.65.0.0/26"), Blackhole: true},
		{Dst: pfx("10.65.0.1/32"), Dev: "cali11111111111", Scope: routes.ScopeLink, Metric: 1024, Protocol: 3},
		{Dst: pfx("10.65.1.0/26"), Dev: "vxlan.calico", Gateway: addr("10.65.1.1"), Onlink: true, Protocol: 3},
		{Dst: pfx("198.18.100.1/32"), Dev: "cali11111111111", Scope: routes.ScopeLink, Metric: 1024, Protocol: 3},
		{Dst: pfx("fd5c::1/128"), Dev: "cali11111111111", Scope: routes.ScopeLink, Metric: 1024, Protocol: 3},
	}
	// 10.65.0.0/26 is local (a blackhole), 10.65.2.0/26 is in the same subnet (CrossSubnet), 10.65.3.0/26's
	// host has no VTEP yet, w2's interface is down.
	if diff := cmp.Diff(want, h.routes.routes(), cmpAddrs, cmpPrefixes); diff != "" {
		t.Errorf("routes (-want +got):\n%s", diff)
	}
}

func TestVXLANDevices(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		ups  []calc.Update
		want []vxlan.Device
	}{
		{"no VXLAN pool", Config{Hostname: "host1"}, []calc.Update{
			calc.ConfigUpdate{VXLANTunnelAddrV4: addr("10.65.0.1")},
			calc.IPPoolUpdate{Pool: &calc.IPPool{Name: "p", CIDR: pfx("10.65.0.0/16"), VXLANMode: "Never"}},
		}, nil},
		{"pool but no tunnel address yet", Config{Hostname: "host1"}, []calc.Update{
			calc.IPPoolUpdate{Pool: &calc.IPPool{Name: "p", CIDR: pfx("10.65.0.0/16"), VXLANMode: "Always"}},
		}, nil},
		{"VXLAN pool", Config{Hostname: "host1", VXLANMTU: 1400}, vxlanHosts(), []vxlan.Device{{
			Name: "vxlan.calico", VNI: 4096, Port: 4789, MTU: 1400, MAC: mac("66:00:00:00:00:01"),
			LocalAddr: addr("198.18.0.1"), TunnelAddr: addr("10.65.0.1"),
			Peers: []vxlan.Peer{
				{Node: "host2", MAC: mac("66:00:00:00:00:02"), TunnelAddr: addr("10.65.1.1"), HostAddr: addr("198.18.1.2")},
				{Node: "host3", MAC: mac("66:00:00:00:00:03"), TunnelAddr: addr("10.65.2.1"), HostAddr: addr("198.18.0.3")},
			},
		}}},
		{"enabled by config, derived MAC", Config{Hostname: "host1", VXLANEnabled: true, VXLANVNI: 10, VXLANPort: 8472}, []calc.Update{
			calc.ConfigUpdate{HostIPv4: pfx("198.18.0.1/24"), VXLANTunnelAddrV4: addr("10.65.0.1")},
		}, []vxlan.Device{{Name: "vxlan.calico", VNI: 10, Port: 8472, MAC: vtepmac.ForNode("host1", false), LocalAddr: addr("198.18.0.1"), TunnelAddr: addr("10.65.0.1")}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.cfg)
			h.send(tc.ups...)
			if diff := cmp.Diff(tc.want, h.vxlan.devices(), cmpAddrs); diff != "" {
				t.Errorf("devices (-want +got):\n%s", diff)
			}
		})
	}
}

func mac(s string) net.HardwareAddr {
	m, _ := net.ParseMAC(s)
	return m
}

func TestResolveHostEndpoints(t *testing.T) {
	m := newModel()
	m.applyIface(iface("eth0", true, pfx("198.18.0.1/24")))
	m.applyIface(iface("eth1", true, pfx("198.18.1.1/24")))
	m.applyIface(iface("docker0", true, pfx("198.18.9.1/24")))
	m.applyIface(iface("cali1", true, pfx("198.18.1.1/32")))
	for _, ep := range []*calc.HostEndpoint{
		{Name: "a-by-ip", ExpectedIPv4Addrs: []netip.Addr{addr("198.18.0.1"), addr("198.18.1.1")}},
		{Name: "b-by-name", InterfaceName: "eth1"},
		{Name: "c-by-name", InterfaceName: "eth1"},
		{Name: "d-excluded", ExpectedIPv4Addrs: []netip.Addr{addr("198.18.9.1")}},
		{Name: "e-unresolved", ExpectedIPv4Addrs: []netip.Addr{addr("198.18.7.7")}},
	} {
		m.heps[ep.Name] = ep
	}
	im := newIfaceMatcher(Config{InterfacePrefixes: []string{"cali"}, InterfaceExclude: []*regexp.Regexp{regexp.MustCompile("^docker")}})
	got, byEP := resolveHostEndpoints(m, im)
	var pairs []string
	for _, h := range got {
		pairs = append(pairs, h.Iface+"="+h.EP.Name)
	}
	if want := []string{"eth0=a-by-ip", "eth1=b-by-name"}; !cmp.Equal(pairs, want) {
		t.Errorf("resolved %v, want %v", pairs, want)
	}
	if diff := cmp.Diff(map[string][]string{"a-by-ip": {"eth0"}, "b-by-name": {"eth1"}}, byEP); diff != "" {
		t.Errorf("per endpoint (-want +got):\n%s", diff)
	}
}

func TestEndpointStatus(t *testing.T) {
	h := newHarness(t, Config{Hostname: "host1"})
	h.ifaces.failConfig["cali33333333333"] = errors.New("sysctl failed")
	h.up("cali11111111111", "cali33333333333", "eth0")
	eps := []calc.Update{
		wep("up", "cali11111111111", []string{"10.65.0.1/32"}),
		wep("noiface", "cali22222222222", []string{"10.65.0.2/32"}),
		wep("unconfigured", "cali33333333333", []string{"10.65.0.3/32"}),
		calc.HostEndpointUpdate{Endpoint: &calc.HostEndpoint{Name: "h-eth0", InterfaceName: "eth0"}},
		calc.HostEndpointUpdate{Endpoint: &calc.HostEndpoint{Name: "h-none", ExpectedIPv4Addrs: []netip.Addr{addr("198.18.7.7")}}},
	}
	for _, u := range eps {
		h.dp.model.apply(u)
	}
	got, err := h.dp.apply(context.Background())
	if err == nil {
		t.Errorf("apply succeeded although a workload could not be configured")
	}
	want := []EndpointStatus{
		{HostEndpoint: "h-eth0", Status: "up"},
		{HostEndpoint: "h-none", Status: "error"},
		{Workload: ptr(wepID("noiface")), Status: "down"},
		{Workload: ptr(wepID("unconfigured")), Status: "down"},
		{Workload: ptr(wepID("up")), Status: "up"},
	}
	if diff := cmp.Diff(want, stripEndpoints(t, got)); diff != "" {
		t.Errorf("first statuses (-want +got):\n%s", diff)
	}
	// Only changes are reported: the interface appears and configuration now works.
	delete(h.ifaces.failConfig, "cali33333333333")
	h.up("cali22222222222")
	got = h.send(calc.WorkloadEndpointRemove{ID: wepID("up")})
	want = []EndpointStatus{
		{Workload: ptr(wepID("noiface")), Status: "up"},
		{Workload: ptr(wepID("unconfigured")), Status: "up"},
		{Workload: ptr(wepID("up")), Status: ""},
	}
	if diff := cmp.Diff(want, stripEndpoints(t, got)); diff != "" {
		t.Errorf("second statuses (-want +got):\n%s", diff)
	}
	if got := h.send(); len(got) != 0 {
		t.Errorf("an apply without changes reported %v", got)
	}
	// A new value of an endpoint is reported again only when its addressing changed.
	if got := h.send(wep("noiface", "cali22222222222", []string{"10.65.0.2/32"}, withProfiles("p"))); len(got) != 0 {
		t.Errorf("a profile change reported %v", got)
	}
	got = h.send(wep("noiface", "cali22222222222", []string{"10.65.0.2/32", "10.65.0.12/32"}))
	if len(got) != 1 || got[0].Status != "up" || got[0].Endpoint == nil || len(got[0].Endpoint.IPv4Nets) != 2 {
		t.Errorf("an address change reported %+v, want the endpoint up with its two addresses", got)
	}
}

// stripEndpoints checks that every workload status but "" carries its endpoint, and drops it.
func stripEndpoints(t *testing.T, sts []EndpointStatus) []EndpointStatus {
	t.Helper()
	out := slices.Clone(sts)
	for i, st := range out {
		if (st.Workload != nil && st.Status != "") != (st.Endpoint != nil) {
			t.Errorf("status %+v: endpoint %v", st, st.Endpoint)
		}
		out[i].Endpoint = nil
	}
	return out
}

func ptr[T any](v T) *T { return &v }

func TestOpenStackNeighbors(t *testing.T) {
	// The scenario's VM has a spoofing exception, which needs WorkloadSourceSpoofing Any.
	h := newHarness(t, Config{Hostname: "host1", InterfacePrefixes: []string{"tap"}, OpenStack: true, WorkloadSourceSpoofing: true})
	h.up("tap12345678-ab")
	h.send(openStack()...)
	if got := h.ifaces.neighbors["tap12345678-ab"]; !cmp.Equal(got, []netip.Addr{addr("10.65.0.2")}, cmpAddrs) {
		t.Errorf("static neighbours %v, want the VM's address", got)
	}
	if got := h.ifaces.configuredList(); !cmp.Equal(got, []string{"tap12345678-ab"}) {
		t.Errorf("configured %v", got)
	}
}

// TestNewRefusesIncompleteConfig: the dataplane substitutes no defaults of its own: it refuses
// a Config that lacks what NewConfig sets, and a mark mask with too few bits.
func TestNewRefusesIncompleteConfig(t *testing.T) {
	for name, bad := range map[string]Config{
		"zero":             {},
		"no refresh":       func() Config { c := FelixDefaults(Config{}); c.NftablesRefreshInterval = 0; return c }(),
		"no table name":    func() Config { c := FelixDefaults(Config{}); c.TableName = ""; return c }(),
		"small mark mask":  FelixDefaults(Config{MarkMask: 0xf}),
		"no MTU interface": func() Config { c := FelixDefaults(Config{}); c.MTUIfacePattern = nil; return c }(),
	} {
		if _, err := New(bad, testLogger(t)); err == nil {
			t.Errorf("%s: New accepted %+v", name, bad)
		}
	}
	if c := FelixDefaults(Config{FailsafeInbound: []rules.ProtoPort{}}); len(c.FailsafeInbound) != 0 || len(c.FailsafeOutbound) != 9 {
		t.Errorf("an explicitly empty failsafe list was replaced by the defaults: %v %v", c.FailsafeInbound, c.FailsafeOutbound)
	}
}

// TestVXLANCrossSubnetSameSubnetRoutes: as Project Calico's felix, a CrossSubnet block of a
// host in this host's subnet is routed without encapsulation, via that host's address (onlink)
// on the interface that holds this host's address; blocks in other subnets go through
// vxlan.calico; this host's block is a blackhole.
func TestVXLANCrossSubnetSameSubnetRoutes(t *testing.T) {
	h := newHarness(t, Config{Hostname: "host1"})
	h.dp.model.applyIface(iface("eth0", true, pfx("198.18.0.1/24")))
	h.send(vxlanHosts()...)
	want := []routes.Route{
		{Dst: pfx("10.65.0.0/26"), Blackhole: true},
		{Dst: pfx("10.65.1.0/26"), Dev: "vxlan.calico", Gateway: addr("10.65.1.1"), Onlink: true, Protocol: 3},
		{Dst: pfx("10.65.2.0/26"), Dev: "eth0", Gateway: addr("198.18.0.3"), Onlink: true},
	}
	if diff := cmp.Diff(want, h.routes.routes(), cmpAddrs, cmpPrefixes); diff != "" {
		t.Errorf("routes (-want +got):\n%s", diff)
	}
}
