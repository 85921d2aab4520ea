package dataplane

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/rules"
	"github.com/calico-host/calico-host/pkg/nft"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// checkGolden compares got with testdata/<name>.nft (rewriting it with -update).
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".nft")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run with -update to create): %v", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s: ruleset differs from the golden file (-want +got):\n%s", name, diff)
	}
}

func TestGoldenExample19(t *testing.T) {
	h := newHarness(t, Config{Hostname: "host1"})
	h.up("cali1a2b3c4d5e6")
	h.send(example19()...)
	checkGolden(t, "example19", h.fake.Dump())
}

// goldenScenario is a configuration, interfaces and updates whose ruleset has a golden file.
type goldenScenario struct {
	name   string
	cfg    Config
	ifaces []string
	ups    []calc.Update
}

func goldenScenarios() []goldenScenario {
	return []goldenScenario{
		{"base", Config{Hostname: "host1"}, nil, nil},
		{"tiers", Config{Hostname: "host1"}, []string{"cali11111111111"}, tieredPolicies()},
		{"rules-v6-reject", Config{Hostname: "host1", IPv6Support: true, FilterDenyReject: true}, []string{"cali11111111111"}, ruleFeatures()},
		{"hostendpoints", Config{Hostname: "host1", FailsafeInbound: []rules.ProtoPort{{Protocol: nft.ProtoTCP, Port: 22}, {Protocol: nft.ProtoUDP, Port: 68, Net: pfx("198.18.0.0/16")}},
			FailsafeOutbound: []rules.ProtoPort{{Protocol: nft.ProtoUDP, Port: 53}}}, nil, hostEndpoints()},
		{"nat", Config{Hostname: "host1", IPv6Support: true, NATOutgoingAddress: addr("198.18.0.1"), FloatingIPs: true},
			[]string{"cali11111111111"}, natAndFloatingIPs()},
		{"openstack", Config{Hostname: "host1", IPv6Support: true, InterfacePrefixes: []string{"tap"}, OpenStack: true,
			DefaultEndpointToHostAction: rules.ActionReturn, WorkloadSourceSpoofing: true}, []string{"tap12345678-ab"}, openStack()},
		{"gates-default", Config{Hostname: "host1", InterfacePrefixes: []string{"cali", "tap"}, OpenStack: true},
			[]string{"cali11111111111", "cali22222222222", "tap12345678-ab"}, gatedEndpoints()},
		{"vxlan", Config{Hostname: "host1"}, nil, vxlanHosts()},
		{"ipip", Config{Hostname: "host1"}, nil, ipipHostsWithMetadata()},
		{"nat-vxlan-portrange", Config{Hostname: "host1", NATPortRange: nft.Ports(1024, 65535)}, nil, natOutgoingVXLAN()},
		{"nat-address-portrange", Config{Hostname: "host1", IPv6Support: true, NATOutgoingAddress: addr("198.18.0.1"),
			NATPortRange: nft.Ports(32768, 60999), FloatingIPs: true}, []string{"cali11111111111"}, natAndFloatingIPs()},
	}
}

func TestGoldenScenarios(t *testing.T) {
	for _, tc := range goldenScenarios() {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.cfg)
			h.up(tc.ifaces...)
			h.dp.model.applyIface(iface("eth1", true, pfx("198.18.1.1/24")))
			h.send(tc.ups...)
			checkGolden(t, tc.name, h.fake.Dump())
		})
	}
}

// TestRenderedRulesAreCanonical: every rule the dataplane renders is in the form the kernel
// gives back, so that a full sync compares rules directly (no rewrite, no canonicalization).
func TestRenderedRulesAreCanonical(t *testing.T) {
	for _, sc := range goldenScenarios() {
		t.Run(sc.name, func(t *testing.T) {
			h := newHarness(t, sc.cfg)
			h.up(sc.ifaces...)
			h.dp.model.applyIface(iface("eth1", true, pfx("198.18.1.1/24")))
			h.send(sc.ups...)
			for _, tb := range h.dp.ruleset.Tables() {
				for _, name := range tb.ChainNames() {
					for i, r := range tb.Chain(name).Rules {
						c, err := nft.Canonical(tb.Family, r)
						if err != nil || !c.Equal(r) {
							t.Errorf("%s %s rule %d: %s\n  canonical %s (%v)", tb.ID(), name, i, r.Text(tb.Family), c.Text(tb.Family), err)
						}
					}
				}
			}
		})
	}
}
