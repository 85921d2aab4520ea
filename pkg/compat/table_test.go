package compat_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/cni"
	"github.com/calico-host/calico-host/pkg/compat"
	"github.com/calico-host/calico-host/pkg/compat/snapshot"
	"github.com/calico-host/calico-host/pkg/felix/config"
)

// docFile is the generated compatibility table.
const docFile = "../../docs/compatibility.md"

// calicoSetting is one line of the snapshot of Project Calico's settings.
type calicoSetting struct {
	kind, name string
	typ, def   string // felix parameters
	field      string // felix parameters: the FelixConfiguration field
}

// calicoSettings reads the snapshot: the settings by kind, and its header.
func calicoSettings(t *testing.T) (map[string][]*calicoSetting, string) {
	all, header := snapshot.Read(t)
	out := map[string][]*calicoSetting{}
	felix := map[string]*calicoSetting{}
	for _, s := range all {
		switch s.Kind {
		case compat.Felix:
			cs := &calicoSetting{kind: compat.Felix, name: s.Name, typ: s.Type, def: s.Default}
			out[compat.Felix], felix[strings.ToLower(cs.name)] = append(out[compat.Felix], cs), cs
		case compat.FelixConfiguration:
			if cs := felix[strings.ToLower(s.Param)]; cs != nil {
				cs.field = strings.TrimPrefix(s.Name, "spec.")
			} else if s.Param == "-" {
				out[s.Kind] = append(out[s.Kind], &calicoSetting{kind: s.Kind, name: s.Name})
			}
		default:
			out[s.Kind] = append(out[s.Kind], &calicoSetting{kind: s.Kind, name: s.Name})
		}
	}
	return out, header
}

// ourPaths are the JSON paths of a struct's fields as calico-host decodes them, expanded as the
// snapshot expands Project Calico's (structs one level deep).
func ourPaths(typ reflect.Type, prefix string, depth int) map[string]bool {
	out := map[string]bool{}
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || f.Anonymous {
			continue
		}
		if name == "" {
			name = f.Name
		}
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		out[prefix+name] = true
		if ft.Kind() == reflect.Struct && depth < 1 {
			for p := range ourPaths(ft, prefix+name+".", depth+1) {
				out[p] = true
			}
		}
	}
	return out
}

// implementedPaths are where calico-host decodes each kind's fields.
var implementedPaths = map[string]map[string]bool{
	compat.NetConf:          ourPaths(reflect.TypeFor[cni.NetConf](), "", 0),
	compat.BGPConfiguration: ourPaths(reflect.TypeFor[api.BGPConfigurationSpec](), "spec.", 0),
	compat.BGPPeer:          ourPaths(reflect.TypeFor[api.BGPPeerSpec](), "spec.", 0),
	compat.Node:             ourPaths(reflect.TypeFor[api.NodeSpec](), "spec.", 0),
	compat.IPPool:           ourPaths(reflect.TypeFor[api.IPPoolSpec](), "spec.", 0),
	// The FelixConfiguration fields that are not felix parameters: nodeSelector scopes the
	// resource (calico-felix's calc picks the one that applies).
	compat.FelixConfiguration: {"spec.nodeSelector": true},
}

// row is one setting of the table.
type row struct {
	name, field, def string
	setting          *compat.Setting // nil: implemented
	param            *config.Param   // the felix parameter that implements it
	dropped          bool            // not in Project Calico's current source
}

// rows classifies every setting of a kind: Project Calico's (implemented or on the list) and
// the list's settings that Project Calico dropped.
func rows(t *testing.T, kind string, calico []*calicoSetting) []row {
	listed := map[string]*compat.Setting{}
	for _, s := range compat.Settings(kind) {
		listed[strings.ToLower(s.Name)] = s
	}
	var out []row
	for _, c := range calico {
		r := row{name: c.name, field: c.field, def: c.def, setting: listed[strings.ToLower(c.name)]}
		if p, ok := config.Lookup(c.name); ok && kind == compat.Felix {
			r.param = p
		}
		delete(listed, strings.ToLower(c.name))
		checkRow(t, kind, c, r)
		out = append(out, r)
	}
	for _, s := range listed {
		out = append(out, row{name: s.Name, field: s.Field, setting: s, dropped: true})
	}
	sort.Slice(out, func(i, j int) bool { return strings.ToLower(out[i].name) < strings.ToLower(out[j].name) })
	return out
}

// checkRow: a Project Calico setting is implemented (a parameter of calico-felix, a field
// calico-host decodes) or on the list, never both, with Project Calico's field and default.
func checkRow(t *testing.T, kind string, c *calicoSetting, r row) {
	t.Helper()
	_, isParam := config.Lookup(c.name)
	switch {
	case kind == compat.Felix && isParam && r.setting != nil:
		t.Errorf("felix parameter %s is implemented and on the list", c.name)
	case kind == compat.Felix && !isParam && r.setting == nil:
		t.Errorf("felix parameter %s is neither implemented nor on the list", c.name)
	case kind != compat.Felix && kind != compat.FelixConfiguration && r.setting == nil && !implementedPaths[kind][c.name]:
		t.Errorf("%s %s is neither decoded by calico-host nor on the list", kind, c.name)
	case kind == compat.FelixConfiguration && r.setting == nil && !implementedPaths[kind][c.name]:
		t.Errorf("FelixConfiguration %s is not on the list", c.name)
	}
	if r.setting == nil || kind != compat.Felix {
		return
	}
	if r.setting.Field != c.field {
		t.Errorf("felix parameter %s: the list names field %q, Project Calico %q", c.name, r.setting.Field, c.field)
	}
	if c.def != "" && !r.setting.Implemented(c.def) {
		t.Errorf("felix parameter %s: Project Calico's default %q would warn", c.name, c.def)
	}
}

// TestCompatibilityTable checks that every setting of Project Calico is implemented or on the
// list, and that docs/compatibility.md is the table generated from them (-update rewrites it).
func TestCompatibilityTable(t *testing.T) {
	calico, header := calicoSettings(t)
	var b strings.Builder
	writeIntro(&b, header)
	sections := map[string][]row{}
	for _, kind := range compat.Kinds {
		sections[kind] = rows(t, kind, calico[kind])
	}
	writeSummary(&b, sections)
	for _, kind := range compat.Kinds {
		writeSection(&b, kind, sections[kind])
	}
	writeDifferences(t, &b)
	got := b.String()
	if *update {
		if err := os.WriteFile(docFile, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(docFile)
	if err != nil {
		t.Fatalf("%v (go test ./pkg/compat -run TestCompatibilityTable -update writes it)", err)
	}
	if d := cmp.Diff(string(want), got); d != "" {
		t.Errorf("%s is out of date (go test ./pkg/compat -run TestCompatibilityTable -update):\n%s", docFile, d)
	}
}

// differencesDir holds one Markdown section per component on how its behaviour differs from
// Project Calico's where both have the behaviour (not settings: those are the tables), appended
// to the document in name order.
const differencesDir = "differences"

func writeDifferences(t *testing.T, b *strings.Builder) {
	files, err := filepath.Glob(filepath.Join(differencesDir, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("\n")
		b.Write(text)
	}
}

var sectionTitles = map[string]string{
	compat.Felix:              "calico-felix parameters (FELIX_*, felix.toml, FelixConfiguration)",
	compat.FelixConfiguration: "FelixConfiguration fields that are not felix parameters",
	compat.BGPConfiguration:   "BGPConfiguration",
	compat.BGPPeer:            "BGPPeer",
	compat.Node:               "Node",
	compat.IPPool:             "IPPool",
	compat.NetConf:            "CNI network configuration (NetConf) of the calico and calico-ipam plugins",
}

func writeIntro(b *strings.Builder, header string) {
	fmt.Fprintf(b, `# Compatibility with Project Calico's settings

Generated by `+"`go test ./pkg/compat -run TestCompatibilityTable -update`"+` from the list of settings
calico-host accepts but does not implement (pkg/compat/notimplemented.toml), calico-felix's
parameter table (pkg/felix/config) and the types calico-host decodes, against a snapshot of
%s (pkg/compat/testdata/calico-settings.txt), followed by the
behaviour differences of each component (pkg/compat/differences/*.md). Do not edit by hand.

Every setting of Project Calico's felix, CNI plugin, BGPConfiguration, BGPPeer, Node and IPPool
is one of:

- **implemented**: calico-host does what Project Calico does with it (a few only with the values
  it can enforce, refusing the others where they are written: see below); for a felix parameter,
  with what its entry in calico-felix's parameter table says: whether a change applies live or
  restarts felix, and whether it may be set in the datastore;
- **reported**: accepted and stored, but not implemented. calico-felix, calico-confd,
  calico-startup and the CNI plugin log it once (object or file, field, value) when it is set to
  a value other than those listed (Project Calico's default first; a default never warns), and
  calico-felix counts it in the metric calico_host_unimplemented_settings{component,object,field};
  calicoctl apply, create and replace print a warning and store the object as given;
- **no effect**: listed for completeness; it has no effect in Project Calico's Linux components
  either.

Values that calico-host refuses where they are written are errors, not warnings: a BGPFilter
prefixLength with matchOperator Equal or NotEqual (api.Unsupported), NetConf device_type
netkit, datastore_type kubernetes and etcd_discovery_srv without etcd_endpoints, felix's
DatastoreType kubernetes.
`, header)
}

// counts are a section's implemented, reported and no-effect settings of Project Calico's, and
// the list's settings that Project Calico dropped.
func counts(rs []row) (impl, reported, none, dropped int) {
	for _, r := range rs {
		switch {
		case r.dropped:
			dropped++
		case r.setting == nil:
			impl++
		case r.setting.AnyOK:
			none++
		default:
			reported++
		}
	}
	return
}

func writeSummary(b *strings.Builder, sections map[string][]row) {
	b.WriteString("\n## Counts\n\n| Settings | Project Calico's | implemented | reported | no effect | dropped by Project Calico, reported |\n|---|---:|---:|---:|---:|---:|\n")
	var ti, tr, tn, td int
	for _, kind := range compat.Kinds {
		i, r, n, d := counts(sections[kind])
		ti, tr, tn, td = ti+i, tr+r, tn+n, td+d
		fmt.Fprintf(b, "| %s | %d | %d | %d | %d | %d |\n", kind, i+r+n, i, r, n, d)
	}
	fmt.Fprintf(b, "| all | %d | %d | %d | %d | %d |\n", ti+tr+tn, ti, tr, tn, td)
}

func writeSection(b *strings.Builder, kind string, rs []row) {
	fmt.Fprintf(b, "\n## %s\n\n", sectionTitles[kind])
	if kind == compat.Felix {
		b.WriteString("| Parameter | FelixConfiguration field | Project Calico's default | Status |\n|---|---|---|---|\n")
	} else {
		b.WriteString("| Field | Status |\n|---|---|\n")
	}
	for _, r := range rs {
		if kind == compat.Felix {
			fmt.Fprintf(b, "| %s | %s | %s | %s |\n", r.name, code(r.field), code(r.def), status(r))
		} else {
			fmt.Fprintf(b, "| %s | %s |\n", code(r.name), status(r))
		}
	}
}

func status(r row) string {
	s := r.setting
	switch {
	case s == nil && r.param != nil:
		return "implemented" + paramNote(r.param)
	case s == nil:
		return "implemented"
	case s.AnyOK:
		return "no effect: " + s.Why
	}
	var what string
	switch {
	case s.Report != nil:
		what = "reported when " + values(s.Report, " or ")
	case len(s.OK) == 0:
		what = "reported when set"
	default:
		what = "reported unless " + values(s.OK, " or ")
	}
	if r.dropped {
		what = "dropped by Project Calico; " + what
	}
	return what + ": " + s.Why
}

// paramNote says, from felix's parameter table, how a change applies and where the parameter
// may be set.
func paramNote(p *config.Param) string {
	note := "; a change restarts felix"
	if !p.Restart {
		note = "; a change applies live"
	}
	if p.LocalOnly {
		note += "; environment and felix.toml only"
	}
	return note
}

func values(vs []string, sep string) string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = code(v)
	}
	return strings.Join(out, sep)
}

// code quotes a value for markdown ("" for none; pipes escaped).
func code(v string) string {
	if v == "" {
		return ""
	}
	return "`" + strings.ReplaceAll(v, "|", `\|`) + "`"
}
