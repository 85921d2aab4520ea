package confd

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// fuzzFixtures are the valid objects every fuzzed key is added to (a later file's key replaces
// an earlier one's): meshes, reflectors, explicit peers with passwords, BGPFilters with every
// match, communities, IPv6, blocks.
var fuzzFixtures = []string{"testdata/fixtures/filters.json", "testdata/fixtures/communities.json", "testdata/fixtures/ipv6.json",
	"testdata/fixtures/rr-clusters.json", "testdata/fixtures/explicit-peers.json"}

// fuzzNodes are the nodes rendered for every input.
var fuzzNodes = []string{"host-a", "rr-1"}

// fuzzPrefixes are the key prefixes confd reads; "{node}" is the rendered node.
var fuzzPrefixes = []string{
	datastore.ResourcePrefix + "bgpconfigurations/", datastore.ResourcePrefix + "bgppeers/",
	datastore.ResourcePrefix + "bgpfilters/", datastore.ResourcePrefix + "nodes/", datastore.ResourcePrefix + "ippools/",
	datastore.HostPrefix + "{node}/ipv4/block/", datastore.HostPrefix + "{node}/ipv6/block/",
}

// The password file the fixtures' BGPPeer "tor" reads (secretKeyRef bgp-secrets/tor).
const fuzzSecretName, fuzzSecretKey = "bgp-secrets", "tor"

// FuzzRender stores one arbitrary value under any key of the prefixes confd reads (and
// arbitrary bytes as the content of a BGP password file), next to a fixed set of valid objects,
// and renders the shipped templates for two nodes. It checks that
//
//   - the rendered configuration declares exactly the protocols, filters, functions and static
//     routes of the typed model (parsed from the text, comments and strings skipped), so no
//     string reaches BIRD as syntax;
//   - a value that is not accepted (it does not decode or validate) changes nothing at all: the
//     files are those of the valid objects alone; an invalid BGPFilter or BGPConfiguration (kept,
//     to fail closed) may only take declarations away;
//   - `bird -p` accepts the result, so no value can freeze the node's BGP configuration.
//
// Seeds: the fixture values under their keys and testdata/fuzz/FuzzRender.
//
//	go test ./pkg/confd -run '^$' -fuzz FuzzRender -fuzztime 5m
func FuzzRender(f *testing.F) {
	requireBIRD(f)
	var base []kv
	for _, name := range fuzzFixtures {
		base = append(base, readKVs(f, name)...)
	}
	snap := messageFrom(f, base)
	validKeys := map[string]bool{}
	for _, e := range base {
		validKeys[e.Key] = true
	}
	seeds := map[int]int{}
	for _, e := range base {
		for i, p := range fuzzPrefixes {
			if rest, ok := cutPrefixForNode(e.Key, p); ok && seeds[i] < 4 {
				seeds[i]++
				f.Add(uint8(i), rest+"-copy", []byte(e.Value), []byte("pa55word\n"))
			}
		}
	}
	dir := f.TempDir()
	cfg := testConfig(dir)
	cfg.SecretsDir = filepath.Join(dir, "secrets")
	if err := os.MkdirAll(filepath.Join(cfg.SecretsDir, fuzzSecretName), 0o700); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, prefix uint8, suffix string, value, password []byte) {
		if err := os.WriteFile(filepath.Join(cfg.SecretsDir, fuzzSecretName, fuzzSecretKey), password, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, node := range fuzzNodes {
			key := nodePrefix(fuzzPrefixes[int(prefix)%len(fuzzPrefixes)], node) + suffix
			if validKeys[key] {
				return // replacing a valid object is not adding a value next to it
			}
			checkFuzzedRender(t, cfg, node, snap, key, value)
		}
	})
}

// checkFuzzedRender renders node with and without the fuzzed key and checks the properties.
func checkFuzzedRender(t *testing.T, cfg *Config, node string, snap syncer.Message, key string, value []byte) {
	v, err := Decode(datastore.IDOf(key), value, 100000)
	_, invalid := v.(*syncer.Invalid)
	accepted := err == nil && v != nil && !invalid
	if err != nil {
		v = nil
	}
	baseText, baseModel, _ := renderInputs(t, cfg, node, snap, nil)
	text, m, files := renderInputs(t, cfg, node, snap, &syncer.Update{ID: datastore.IDOf(key), Value: v, Revision: 100000})
	got := parseDeclarations(text)
	if diff := cmp.Diff(modelDeclarations(m), got); diff != "" {
		t.Fatalf("node %s, %s = %q: declarations differ from the model's (-model +text):\n%s", node, key, value, diff)
	}
	switch {
	case invalid:
		if extra := missingFrom(modelDeclarations(baseModel), got); len(extra) > 0 {
			t.Fatalf("node %s, %s = %q: an invalid object added declarations %q", node, key, value, extra)
		}
	case !accepted && text != baseText:
		t.Fatalf("node %s, %s = %q (%v): a refused value changed the configuration:\n%s", node, key, value, err,
			cmp.Diff(baseText, text))
	}
	if accepted || invalid {
		checkBIRDAccepts(t, cfg, files, key, value)
	}
}

// renderInputs builds and renders node's model from the snapshot plus one update, and returns
// the concatenated files, the model and the files.
func renderInputs(t *testing.T, cfg *Config, node string, snap syncer.Message, u *syncer.Update) (string, *Model, []Rendered) {
	s := NewStore(node)
	s.Apply(snap)
	if u != nil {
		s.Apply(syncer.Message{Status: syncer.InSync, Updates: []syncer.Update{*u}})
	}
	m := NewEngine(cfg, node, nil, zerolog.Nop()).Model(s.Inputs())
	files, err := Render(cfg, m)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	var b bytes.Buffer
	for _, f := range files {
		b.Write(f.Data)
		b.WriteByte('\n')
	}
	return b.String(), m, files
}

// checkBIRDAccepts writes the rendered files next to each other and runs `bird -p` on them.
func checkBIRDAccepts(t *testing.T, cfg *Config, files []Rendered, key string, value []byte) {
	for _, f := range files {
		if err := os.WriteFile(f.Dest, f.Data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command("bird", "-p", "-c", filepath.Join(cfg.OutputDir, "bird.cfg")).CombinedOutput(); err != nil {
		t.Fatalf("%s = %q: bird -p rejects the configuration: %v: %s", key, value, err, out)
	}
}

// modelDeclarations are the declarations the templates must make for a model.
func modelDeclarations(m *Model) Declarations {
	d := Declarations{Protocols: []string{"device", "direct"}}
	for _, f := range m.Families {
		d.Protocols = append(d.Protocols, fmt.Sprintf("kernel kernel%d", f.Version), fmt.Sprintf("static static%d", f.Version))
		d.Filters = append(d.Filters, "calico_kernel_programming_"+f.Suffix)
		for _, fn := range []string{"apply_communities_", "calico_aggr_", "calico_export_to_bgp_peers_"} {
			d.Functions = append(d.Functions, fn+f.Suffix)
		}
		for _, fn := range f.Filters {
			d.Functions = append(d.Functions, fn.Name.String())
		}
		for _, p := range f.Peers {
			d.Protocols = append(d.Protocols, "bgp "+p.Name.String())
		}
		for _, b := range f.Blocks {
			if b.Blackhole {
				d.Routes = append(d.Routes, b.CIDR.String())
			}
		}
		for _, r := range f.StaticRoutes {
			d.Routes = append(d.Routes, r.String())
		}
	}
	for _, l := range [][]string{d.Protocols, d.Filters, d.Functions, d.Routes} {
		slices.Sort(l)
	}
	return d
}

// missingFrom returns the declarations of got that base does not have (an invalid object may
// only take sessions away).
func missingFrom(base, got Declarations) []string {
	var out []string
	for i, l := range [][2][]string{{base.Protocols, got.Protocols}, {base.Filters, got.Filters},
		{base.Functions, got.Functions}, {base.Routes, got.Routes}} {
		for _, d := range l[1] {
			if !slices.Contains(l[0], d) {
				out = append(out, fmt.Sprintf("%d:%s", i, d))
			}
		}
	}
	return out
}

// cutPrefixForNode returns the rest of key after prefix, "{node}" matching any fuzzed node.
func cutPrefixForNode(key, prefix string) (string, bool) {
	for _, node := range fuzzNodes {
		if rest, ok := strings.CutPrefix(key, nodePrefix(prefix, node)); ok {
			return rest, true
		}
	}
	return "", false
}

// nodePrefix fills in the node of a prefix.
func nodePrefix(prefix, node string) string { return strings.ReplaceAll(prefix, "{node}", node) }
