package confd

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/api"
)

// syncDecls renders inputs for node through the whole engine (bird -p included) and returns the
// declarations of the result.
func syncDecls(t *testing.T, node string, in *Inputs) (Declarations, *Model) {
	t.Helper()
	requireBIRD(t)
	cfg := testConfig(t.TempDir())
	e := NewEngine(cfg, node, ExecRunner, zerolog.Nop())
	if _, err := e.Sync(context.Background(), in); err != nil {
		t.Fatalf("sync: %v", err)
	}
	return parseDeclarations(renderedText(t, cfg)), e.Model(in)
}

// TestValuesBIRDCannotTake: values that reach the configuration but that BIRD would refuse
// (failing every render of the node, so freezing its BGP configuration) are left out with a
// warning; the rest renders.
func TestValuesBIRDCannotTake(t *testing.T) {
	peer := func(name, ip string, mod func(*api.BGPPeerSpec)) *api.BGPPeer {
		s := api.BGPPeerSpec{PeerIP: ip, ASNumber: asn(65001)}
		mod(&s)
		return bgpPeer(name, s)
	}
	in := testInputs(
		testNode("a", "198.18.0.1/24", "fd5c:ff::1/64", nil),
		// Two nodes with one address: one mesh session (BIRD refuses a protocol name twice).
		testNode("b", "198.18.0.2/24", "", nil), testNode("b2", "198.18.0.2/24", "", nil),
		// An address with a zone cannot name a protocol; BIRD refuses link-local neighbors and
		// unspecified ones without an interface.
		testNode("z", "", "fe80::1%eth0", nil), testNode("ll", "", "fe80::2/64", nil), testNode("u", "0.0.0.0/24", "::/64", nil),
		peer("link-local", "fe80::99", func(*api.BGPPeerSpec) {}),
		peer("unspecified", "[::]:179", func(*api.BGPPeerSpec) {}),
		peer("neg-restart", "198.18.0.10", func(s *api.BGPPeerSpec) { s.MaxRestartTime = api.Dur(-5 * time.Second) }),
		peer("neg-allow", "198.18.0.11", func(s *api.BGPPeerSpec) { s.NumAllowedLocalASNumbers = api.Int(-3) }),
		peer("big-ttl", "198.18.0.12", func(s *api.BGPPeerSpec) { s.TTLSecurity = api.Int(300) }),
		peer("huge-restart", "198.18.0.13", func(s *api.BGPPeerSpec) { s.MaxRestartTime = api.Dur(200 * 365 * 24 * time.Hour) }),
		bgpConfig("default", api.BGPConfigurationSpec{IgnoredInterfaces: []string{""}}),
	)
	got, m := syncDecls(t, "a", in)
	want := []string{"bgp Global_198_18_0_10", "bgp Global_198_18_0_11", "bgp Global_198_18_0_12", "bgp Global_198_18_0_13",
		"bgp Mesh_198_18_0_2", "device", "direct", "kernel kernel4", "kernel kernel6", "static static4", "static static6"}
	if diff := cmp.Diff(want, got.Protocols); diff != "" {
		t.Errorf("protocols (-want +got):\n%s", diff)
	}
	for _, p := range m.Families[0].Peers {
		if p.GracefulRestartTime != 0 || p.AllowLocalAS != 0 || p.TTLSecurity != 0 {
			t.Errorf("%s: %+v: out-of-range settings were kept", p.Name, p)
		}
	}
	warnings := strings.Join(strs(m.Warnings), "\n")
	for _, w := range []string{"session Mesh_198_18_0_2 is already made", `bad BGP address "fe80::1%eth0"`,
		`bad BGP address "fe80::2/64"`, `bad BGP address "::/64"`, `bad BGP address "0.0.0.0/24"`,
		"peer IP fe80::99 cannot be a BGP neighbor", "peer IP :: cannot be a BGP neighbor",
		"maxRestartTime: -5s is out of range", "maxRestartTime: 1752000h0m0s is out of range", "ttlSecurity 300 is out of range",
		`bad interface name ""`} {
		if !strings.Contains(warnings, w) {
			t.Errorf("no warning %q in:\n%s", w, warnings)
		}
	}
}

// TestConfigVars: [vars] go into the configuration as they are, so they must be plain tokens.
func TestConfigVars(t *testing.T) {
	c := testConfig(t.TempDir())
	c.Vars = map[string]string{"hold_time": "9;\n}\nprotocol static { ipv4; route 0.0.0.0/0 blackhole; }\n#"}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "hold_time") {
		t.Errorf("Validate = %v, want an error naming hold_time", err)
	}
	m := &Model{Vars: c.Vars}
	if got := m.Var("hold_time", "90"); got != "90" {
		t.Errorf("Var = %q, want the default", got)
	}
	c.Vars = map[string]string{"hold_time": "9", "error_wait_time": "5,30"}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

// TestRouterIDOverride: a router id override that is not an IPv4 address is not rendered.
func TestRouterIDOverride(t *testing.T) {
	in := testInputs(testNode("a", "198.18.0.1/24", "", nil))
	m := Build(in, BuildOptions{NodeName: "a", RouterID: "1.2.3.4;\nprotocol static {}"})
	if m.RouterID.String() != "198.18.0.1" || len(m.Warnings) != 1 {
		t.Errorf("router id %s, warnings %q", m.RouterID, m.Warnings)
	}
}
