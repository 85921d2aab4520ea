package dataplane

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/routes"
)

// TestEndpointGates: Project Calico's gates on workload endpoints, as the dataplane's model
// applies them (the ruleset is in the gates-default golden file).
func TestEndpointGates(t *testing.T) {
	nat := []calc.NATInfo{{ExtIP: addr("198.18.100.1"), IntIP: addr("10.65.0.1")}}
	spoof := []netip.Prefix{pfx("10.65.9.0/24")}
	for _, tc := range []struct {
		name        string
		cfg         Config
		orch        string
		spoof       bool
		present     bool
		wantNATs    int
		wantSpoofed int
	}{
		{"defaults: cni ipNATs ignored", Config{}, "cni", false, true, 0, 0},
		{"defaults: openstack ipNATs kept", Config{}, "openstack", false, true, 1, 0},
		{"FloatingIPs Enabled", Config{FloatingIPs: true}, "cni", false, true, 1, 0},
		{"defaults: spoofing endpoint missing", Config{}, "openstack", true, false, 0, 0},
		{"WorkloadSourceSpoofing Any", Config{WorkloadSourceSpoofing: true}, "k8s", true, true, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Hostname = "host1"
			h := newHarness(t, tc.cfg)
			w := wep("w1", "cali11111111111", []string{"10.65.0.1/32"})
			w.ID.OrchestratorID = tc.orch
			w.Endpoint.IPv4NAT = nat
			if tc.spoof {
				w.Endpoint.AllowSpoofedSourcePrefixes = spoof
			}
			h.send(w)
			got := h.dp.model.weps[w.ID]
			if (got != nil) != tc.present {
				t.Fatalf("endpoint in the model: %v, want %v", got != nil, tc.present)
			}
			if got == nil {
				return
			}
			if len(got.IPv4NAT) != tc.wantNATs || len(got.AllowSpoofedSourcePrefixes) != tc.wantSpoofed {
				t.Errorf("NATs %v, spoofed %v", got.IPv4NAT, got.AllowSpoofedSourcePrefixes)
			}
			if len(w.Endpoint.IPv4NAT) != 1 {
				t.Error("the gate modified calc's endpoint")
			}
		})
	}
}

// TestDesiredRoutesFloatingIPGate: without FloatingIPs a non-OpenStack endpoint's floating IP
// gets no route (with it, TestDesiredRoutes shows the route).
func TestDesiredRoutesFloatingIPGate(t *testing.T) {
	h := newHarness(t, Config{Hostname: "host1"})
	w := wep("w1", "cali11111111111", []string{"10.65.0.1/32"})
	w.Endpoint.IPv4NAT = []calc.NATInfo{{ExtIP: addr("198.18.100.1"), IntIP: addr("10.65.0.1")}}
	h.up("cali11111111111")
	h.send(w)
	want := []routes.Route{{Dst: pfx("10.65.0.1/32"), Dev: "cali11111111111", Scope: routes.ScopeLink, Metric: 1024, Protocol: 3}}
	if diff := cmp.Diff(want, h.routes.routes(), cmpAddrs, cmpPrefixes); diff != "" {
		t.Errorf("routes (-want +got):\n%s", diff)
	}
}

// TestKernelFloatingIPGate: the fabric connects to a workload's floating IP. Project Calico
// programs the 1:1 NAT only for OpenStack endpoints or with FloatingIPs Enabled.
func TestKernelFloatingIPGate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		orch string
		want bool
	}{
		{"defaults, cni endpoint", Config{}, "cni", false},
		{"defaults, openstack endpoint", Config{}, "openstack", true},
		{"FloatingIPs Enabled, cni endpoint", Config{FloatingIPs: true}, "cni", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tp := newTopology(t)
			tp.fabric.Exec(t, "ip", "route", "add", "198.18.100.0/24", "via", "198.18.0.1")
			a := tp.addWorkload(t, "a", ifA, ipA)
			listenTCP(t, a, ipA, 7000)
			w := wep("a", ifA, []string{ipA + "/32"}, withProfiles("open"))
			w.ID.OrchestratorID = tc.orch
			w.Endpoint.IPv4NAT = []calc.NATInfo{{ExtIP: addr("198.18.100.1"), IntIP: addr(ipA)}}
			startDataplane(t, tp, tc.cfg, profile("open", []calc.Rule{allow()}, []calc.Rule{allow()}), w)
			check(t, tc.name,
				expectation{"fabric to the floating IP", func() bool { return canTCP(t, tp.fabric, "198.18.100.1", 7000) }, tc.want},
				expectation{"host to the workload address", func() bool { return canTCP(t, tp.host, ipA, 7000) }, true})
		})
	}
}

// TestKernelWorkloadSourceSpoofingGate: a workload with allowSpoofedSourcePrefixes sends from
// an address in them. With WorkloadSourceSpoofing Any the exception applies; by default
// Project Calico treats the endpoint as missing, so nothing it sends gets through, not even
// from its own address.
func TestKernelWorkloadSourceSpoofingGate(t *testing.T) {
	const forged = "10.65.0.3"
	for _, tc := range []struct {
		name string
		cfg  Config
		want bool
	}{
		{"defaults", Config{}, false},
		{"WorkloadSourceSpoofing Any", Config{WorkloadSourceSpoofing: true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tp := newTopology(t)
			a := tp.addWorkload(t, "a", ifA, ipA)
			b := tp.addWorkload(t, "b", ifB, ipB)
			a.Exec(t, "ip", "addr", "add", forged+"/32", "dev", "eth0")
			srv := listenUDP(t, b, ipB, 5353)
			ni := &nsInterfaces{t: t, ns: tp.host}
			for _, iface := range []string{ifA, ifB} {
				if err := ni.ConfigureWorkload(iface, false); err != nil {
					t.Fatal(err)
				}
			}
			wa := wep("a", ifA, []string{ipA + "/32"}, withProfiles("open"))
			wa.Endpoint.AllowSpoofedSourcePrefixes = []netip.Prefix{pfx(forged + "/32")}
			startDataplane(t, tp, tc.cfg, profile("open", []calc.Rule{allow()}, []calc.Rule{allow()}),
				wa, wep("b", ifB, []string{ipB + "/32"}, withProfiles("open")))
			canUDP(t, a, forged, ipB, 5353)
			canUDP(t, a, ipA, ipB, 5353)
			if got := srv.received(forged); got != tc.want {
				t.Errorf("packet from the allowed spoofed source reached B: %v, want %v", got, tc.want)
			}
			if got := srv.received(ipA); got != tc.want {
				t.Errorf("packet from A's own address reached B: %v, want %v", got, tc.want)
			}
		})
	}
}

// TestInvalidSpoofPrefixStaysWithItsEndpoint: a spoofing exception that is not a valid prefix
// is left out of the shared anti-spoofing chain; before, it became an empty set element that
// made every later transaction fail, for every endpoint.
func TestInvalidSpoofPrefixStaysWithItsEndpoint(t *testing.T) {
	h := newHarness(t, Config{Hostname: "host1", WorkloadSourceSpoofing: true})
	h.up("cali11111111111", "cali22222222222")
	bad := wep("w1", "cali11111111111", []string{"10.65.0.1/32"})
	bad.Endpoint.AllowSpoofedSourcePrefixes = []netip.Prefix{netip.PrefixFrom(netip.MustParseAddr("10.0.0.1"), 128), pfx("10.66.0.0/16")}
	h.send(bad) // fails the test if the transaction is refused
	h.send(wep("w2", "cali22222222222", []string{"10.65.0.2/32"}))
	if d := h.fake.Dump(); !strings.Contains(d, "10.66.0.0/16") || !strings.Contains(d, "cali22222222222") {
		t.Errorf("the valid exception or the second endpoint is missing:\n%s", d)
	}
}
