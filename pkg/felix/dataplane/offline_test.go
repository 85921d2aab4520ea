package dataplane

import (
	"context"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/ifaces"
	"github.com/calico-host/calico-host/pkg/nft/apply"
	"github.com/calico-host/calico-host/pkg/nft/fake"
)

// stamps are the rule identifiers BuildOffline stamps as comments (package ruleid's prefixes).
var stamps = regexp.MustCompile(` comment "[ADP][PR][IE][0-9]*\|[^"]*"`)

// TestOfflineTablesAreFelixs: BuildOffline renders the tables a running dataplane programs from
// the same updates, its rule identifiers aside (and it stamps the verdict rules of every policy
// and profile with one).
func TestOfflineTablesAreFelixs(t *testing.T) {
	h := newHarness(t, Config{Hostname: "host1"})
	names := []string{"cali1a2b3c4d5e6", "cali22222222222"}
	h.up(names...)
	ups := append(example19(), hostEndpoint("eth0", "eth0"))
	h.up("eth0")
	h.send(ups...)

	var states []*ifaces.State
	for _, n := range append(names, "eth0") {
		states = append(states, &ifaces.State{Name: n, Up: true})
	}
	off, err := BuildOffline(FelixDefaults(Config{Hostname: "host1"}), ups, states, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	f := fake.New()
	a := apply.New(f, apply.Options{Tables: ownedTables(FelixDefaults(Config{})), Log: testLogger(t)})
	if _, err := a.Apply(context.Background(), off.Tables...); err != nil {
		t.Fatalf("the kernel's fake refuses the offline tables: %v", err)
	}
	stamped := f.Dump()
	if n := len(stamps.FindAllString(stamped, -1)); n == 0 || off.RuleIDs.Len() == 0 {
		t.Fatalf("%d stamped rules, %d rule identifiers", n, off.RuleIDs.Len())
	}
	if d := cmp.Diff(h.fake.Dump(), stamps.ReplaceAllString(stamped, "")); d != "" {
		t.Errorf("offline tables differ from the dataplane's (-dataplane +offline):\n%s", d)
	}
	if len(off.Endpoints) != 1 || len(off.HostEndpoints) != 1 {
		t.Errorf("%d workload and %d host endpoints", len(off.Endpoints), len(off.HostEndpoints))
	}
}

func hostEndpoint(name, iface string) calc.Update {
	return calc.HostEndpointUpdate{Endpoint: &calc.HostEndpoint{Name: name, InterfaceName: iface, ProfileIDs: []string{"net1"}}}
}
