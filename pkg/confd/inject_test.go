package confd

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
)

// evilBGP is BIRD configuration an attacker would like to add: a session exporting everything.
const evilBGP = "protocol bgp evil { local as 64512; neighbor 198.18.0.66 as 65066; ipv4 { import all; export all; }; }"

// TestSecretRefInjection: a BGPPeer written straight to etcd (as another tool or a hostile
// writer could) whose password secretKeyRef name carries a line break and a BGP session. confd
// must not render that session, however the name travels (file paths, error messages, warning
// comments), and `bird -p` must accept what it does render.
func TestSecretRefInjection(t *testing.T) {
	kvs := baseKVs()
	kvs[datastore.ResourcePrefix+"bgppeers/p"] = `{"kind":"BGPPeer","apiVersion":"projectcalico.org/v3","metadata":{"name":"p"},` +
		`"spec":{"peerIP":"198.18.0.99","asNumber":64512,"password":{"secretKeyRef":{"name":"x\n` + evilBGP + ` #","key":"k"}}}}`
	cfg, log, err := runOnceFromEtcd(t, "host-a", kvs)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	got := parseDeclarations(renderedText(t, cfg))
	if diff := cmp.Diff(baseDecls, got); diff != "" {
		t.Errorf("declarations differ from those of the valid objects (-want +got):\n%s", diff)
	}
	if !strings.Contains(log, `bgppeers/p`) {
		t.Errorf("the bad BGPPeer is not logged with its key:\n%s", log)
	}
}

// TestAffinityStateInjection: a block affinity whose state carries a line break and a static
// protocol with a default blackhole route. The affinity is not an affinity: it is skipped (and
// logged with its key), the rest renders, and nothing of it reaches BIRD.
func TestAffinityStateInjection(t *testing.T) {
	kvs := baseKVs()
	kvs[datastore.AffinityKey("host-a", "10.65.9.0/26")] = `{"state":"p\n}\nprotocol static { ipv4; route 0.0.0.0/0 blackhole; }\nprotocol static { ipv4; #","deleted":false}`
	cfg, log, err := runOnceFromEtcd(t, "host-a", kvs)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	got := parseDeclarations(renderedText(t, cfg))
	if diff := cmp.Diff(baseDecls, got); diff != "" {
		t.Errorf("declarations differ from those of the valid objects (-want +got):\n%s", diff)
	}
	if !strings.Contains(log, datastore.AffinityKey("host-a", "10.65.9.0/26")) {
		t.Errorf("the bad affinity is not logged with its key:\n%s", log)
	}
}

// TestAffinityStateCrude: an affinity state that BIRD cannot parse at all used to fail every
// render on the node (every BGP change frozen). It is skipped; everything else renders.
func TestAffinityStateCrude(t *testing.T) {
	for name, value := range map[string]string{
		"quote and brace": `{"state":"\"}{","deleted":false}`,
		"line break":      `{"state":"confirmed\n} garbage {","deleted":false}`,
		"unknown state":   `{"state":"claimed","deleted":false}`,
		"trailing data":   `{"state":"confirmed","deleted":false} {"state":"x"}`,
		"wrong type":      `{"state":7,"deleted":false}`,
	} {
		t.Run(name, func(t *testing.T) {
			kvs := baseKVs()
			kvs[datastore.AffinityKey("host-a", "10.65.9.0/26")] = value
			cfg, log, err := runOnceFromEtcd(t, "host-a", kvs)
			if err != nil {
				t.Fatalf("one bad affinity stops the render: %v", err)
			}
			if diff := cmp.Diff(baseDecls, parseDeclarations(renderedText(t, cfg))); diff != "" {
				t.Errorf("declarations differ from those of the valid objects (-want +got):\n%s", diff)
			}
			if !strings.Contains(log, datastore.AffinityKey("host-a", "10.65.9.0/26")) {
				t.Errorf("the bad affinity is not logged with its key:\n%s", log)
			}
		})
	}
}

// TestAffinityKeyNotCanonical: the block CIDR in an affinity key must be exactly the block's
// canonical CIDR (as Project Calico writes it); anything else names no block.
func TestAffinityKeyNotCanonical(t *testing.T) {
	for _, seg := range []string{"10.65.9.1-26", "10.65.9.0-33", "fd5c:1:0:0:0::-122", "10.65.9.0"} {
		t.Run(seg, func(t *testing.T) {
			kvs := baseKVs()
			key := datastore.HostPrefix + "host-a/ipv4/block/" + seg
			if strings.Contains(seg, ":") {
				key = datastore.HostPrefix + "host-a/ipv6/block/" + seg
			}
			kvs[key] = `{"state":"confirmed","deleted":false}`
			cfg, log, err := runOnceFromEtcd(t, "host-a", kvs)
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			if diff := cmp.Diff(baseDecls, parseDeclarations(renderedText(t, cfg))); diff != "" {
				t.Errorf("declarations differ from those of the valid objects (-want +got):\n%s", diff)
			}
			if !strings.Contains(log, key) {
				t.Errorf("the bad affinity key is not logged:\n%s", log)
			}
		})
	}
}

// TestRawValuesCannotInject gives Build, directly, values that validation refuses (as if a
// hole in validation let them through, or another reader skipped it): a secret name, an
// affinity state, interface patterns, names, CIDRs and communities that carry BIRD
// configuration. Nothing of them is declared, and `bird -p` accepts the result.
func TestRawValuesCannotInject(t *testing.T) {
	requireBIRD(t)
	evil := "x\n" + evilBGP + " #"
	evilNode := testNode("host-c\n"+evilBGP+" #", "198.18.0.3/24", "", map[string]string{"k": evil})
	in := testInputs(
		testNode("host-a", "198.18.0.1/24", "", nil), testNode("host-b", "198.18.0.2/24", "", nil), evilNode,
		ipPool("p\n"+evilBGP, api.IPPoolSpec{CIDR: "10.65.0.0/16"}),
		ipPool("q", api.IPPoolSpec{CIDR: "10.66.0.0/16\n" + evilBGP}),
		"10.65.0.0/26=confirmed", "10.65.9.0/26="+evil, "10.65.10.0/26\n"+evilBGP+"=confirmed",
		bgpPeer("p", api.BGPPeerSpec{PeerIP: "198.18.0.99", ASNumber: asn(64512),
			Password: &api.BGPPassword{SecretKeyRef: &api.SecretKeyRef{Name: evil, Key: "k"}}, Filters: []string{"f"}}),
		bgpPeer("q", api.BGPPeerSpec{PeerIP: "198.18.0.98\n" + evilBGP, ASNumber: asn(64512)}),
		&api.BGPFilter{ObjectMeta: api.ObjectMeta{Name: "f"}, Spec: api.BGPFilterSpec{ExportV4: []api.BGPFilterRule{
			{Action: "Reject", Interface: "eth0\"))) then { accept; } } " + evilBGP + " function z() { if ((\"x"}}}},
		bgpConfig("default", api.BGPConfigurationSpec{
			IgnoredInterfaces:    []string{"eth0\";\n" + evilBGP + "\n#"},
			ServiceClusterIPs:    []api.ServiceIPBlock{{CIDR: "10.96.0.0/12 blackhole; }\n" + evilBGP}},
			Communities:          []api.Community{{Name: "c", Value: "1:2); } " + evilBGP}},
			PrefixAdvertisements: []api.PrefixAdvertisement{{CIDR: "10.65.0.0/16", Communities: []string{"c", evil}}},
		}),
	)
	cfg := testConfig(t.TempDir())
	if _, err := NewEngine(cfg, "host-a", ExecRunner, zerolog.Nop()).Sync(context.Background(), in); err != nil {
		t.Fatalf("sync (bird -p): %v", err)
	}
	text := renderedText(t, cfg)
	got := parseDeclarations(text)
	want := Declarations{
		Protocols: []string{"bgp Global_198_18_0_99", "bgp Mesh_198_18_0_2", "bgp Mesh_198_18_0_3", "device", "direct",
			"kernel kernel4", "kernel kernel6", "static static4", "static static6"},
		Filters: baseDecls.Filters, Functions: baseDecls.Functions, Routes: []string{"10.65.0.0/26"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("declarations (-want +got):\n%s\n%s", diff, text)
	}
	if strings.Contains(birdComment.ReplaceAllString(text, ""), "evil") {
		t.Errorf("attacker text outside comments:\n%s", text)
	}
}

// TestInvalidFilterFailsClosed: a BGPFilter stored under its key but not valid (as Project
// Calico's confd would still read it, or a hostile writer stored it) is not "absent": the
// sessions that name it import and export nothing, instead of running unfiltered. The key is in
// the warning.
func TestInvalidFilterFailsClosed(t *testing.T) {
	for name, value := range map[string]string{
		"not JSON":          `{"spec":`,
		"bad interface":     `{"kind":"BGPFilter","apiVersion":"projectcalico.org/v3","metadata":{"name":"f"},"spec":{"exportV4":[{"action":"Reject","interface":"eth0\" ))"}]}}`,
		"unknown operator":  `{"kind":"BGPFilter","apiVersion":"projectcalico.org/v3","metadata":{"name":"f"},"spec":{"importV4":[{"action":"Reject","cidr":"10.0.0.0/8","matchOperator":"Like"}]}}`,
		"community missing": `{"kind":"BGPFilter","apiVersion":"projectcalico.org/v3","metadata":{"name":"f"},"spec":{"importV4":[{"action":"Reject","communities":{"values":[]}}]}}`,
	} {
		t.Run(name, func(t *testing.T) {
			kvs := baseKVs()
			kvs[datastore.ResourcePrefix+"bgppeers/tor"] = `{"kind":"BGPPeer","apiVersion":"projectcalico.org/v3","metadata":{"name":"tor"},` +
				`"spec":{"peerIP":"198.18.0.254","asNumber":65001,"filters":["f"]}}`
			kvs[datastore.ResourcePrefix+"bgpfilters/f"] = value
			cfg, log, err := runOnceFromEtcd(t, "host-a", kvs)
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			peers, _ := os.ReadFile(filepath.Join(cfg.OutputDir, "bird_peers.cfg"))
			tor := string(peers)[strings.Index(string(peers), "protocol bgp Global_198_18_0_254"):]
			if !strings.Contains(tor, "import none;") || !strings.Contains(tor, "export none;") {
				t.Errorf("the session naming an invalid filter still exchanges routes:\n%s", tor)
			}
			if !strings.Contains(log, datastore.ResourcePrefix+"bgpfilters/f") {
				t.Errorf("the invalid filter's key is not logged:\n%s", log)
			}
		})
	}
}

// TestUnsupportedFilterFailsClosed: a valid BGPFilter with a setting calico-host cannot write
// exactly (here a prefix length range with matchOperator Equal, which would otherwise match
// nothing, so that a following Reject rule rejected every route) stops that direction of the
// sessions using it; the other direction still applies.
func TestUnsupportedFilterFailsClosed(t *testing.T) {
	in := testInputs(testNode("a", "198.18.0.1/24", "", nil),
		bgpPeer("tor", api.BGPPeerSpec{PeerIP: "198.18.0.254", ASNumber: asn(65001), Filters: []string{"f"}}),
		&api.BGPFilter{ObjectMeta: api.ObjectMeta{Name: "f"}, Spec: api.BGPFilterSpec{
			ExportV4: []api.BGPFilterRule{{Action: "Accept", MatchOperator: "Equal", CIDR: "10.65.0.0/16",
				PrefixLength: &api.BGPFilterPrefixLength{Max: api.Int(24)}}},
			ImportV4: []api.BGPFilterRule{{Action: "Reject", MatchOperator: "In", CIDR: "10.0.0.0/8"}}}})
	decls, m := syncDecls(t, "a", in)
	p := m.Families[0].Peers[0]
	if !p.ExportNone || p.ImportNone || len(p.ImportFilters) != 1 {
		t.Errorf("peer %s: export none %v, import none %v, import filters %v", p.Name, p.ExportNone, p.ImportNone, p.ImportFilters)
	}
	if !slices.Contains(decls.Functions, "'bgp_f_importFilterV4'") || slices.Contains(decls.Functions, "'bgp_f_exportFilterV4'") {
		t.Errorf("functions %v", decls.Functions)
	}
}

// TestInvalidBGPConfigurationFailsClosed: a BGPConfiguration that is stored but invalid is not
// "absent" (which would mean the defaults: a full mesh in AS 64512, here against the
// operator's nodeToNodeMeshEnabled false): the node has no sessions, and the key is in the
// warning.
func TestInvalidBGPConfigurationFailsClosed(t *testing.T) {
	for _, name := range []string{"default", "node.host-a"} {
		t.Run(name, func(t *testing.T) {
			kvs := baseKVs()
			kvs[datastore.ResourcePrefix+"bgpconfigurations/"+name] = `{"kind":"BGPConfiguration","apiVersion":"projectcalico.org/v3",` +
				`"metadata":{"name":"` + name + `"},"spec":{"nodeToNodeMeshEnabled":false,"bindMode":"Everywhere"}}`
			cfg, log, err := runOnceFromEtcd(t, "host-a", kvs)
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			got := parseDeclarations(renderedText(t, cfg))
			if slices.ContainsFunc(got.Protocols, func(p string) bool { return strings.HasPrefix(p, "bgp ") }) {
				t.Errorf("sessions with an invalid BGP configuration: %v", got.Protocols)
			}
			if !strings.Contains(log, datastore.ResourcePrefix+"bgpconfigurations/"+name) {
				t.Errorf("the invalid configuration's key is not logged:\n%s", log)
			}
		})
	}
}
