package compat_test

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// update rewrites the golden files (the Project Calico snapshot, docs/compatibility.md).
var update = flag.Bool("update", false, "rewrite testdata/calico-settings.txt and docs/compatibility.md")

// calicoMirror is the bare git directory of Project Calico's source used to refresh the snapshot.
const calicoMirror = "/work/.mirror/projectcalico+calico/repo"

// snapshotFile lists every setting of Project Calico that the compatibility table covers, one per
// line: "Felix <Parameter> <type> <default>" (felix's type, with its arguments, and its default
// quoted), "FelixConfiguration <jsonField> <Parameter>", or
// "<Kind> <path>" for the fields of NetConf, BGPConfiguration, BGPPeer, Node and IPPool.
const snapshotFile = "testdata/calico-settings.txt"

// calicoSources are the files the snapshot is taken from, and the struct each kind starts at.
var calicoSources = []struct {
	kind, root string
	files      []string
}{
	{"NetConf", "NetConf", []string{"cni-plugin/pkg/types/types.go"}},
	{"BGPConfiguration", "BGPConfigurationSpec", []string{"api/pkg/apis/projectcalico/v3/bgpconfig.go", "api/pkg/apis/projectcalico/v3/bgppeer.go"}},
	{"BGPPeer", "BGPPeerSpec", []string{"api/pkg/apis/projectcalico/v3/bgppeer.go"}},
	{"Node", "NodeSpec", []string{"libcalico-go/lib/apis/internalapi/node.go"}},
	{"IPPool", "IPPoolSpec", []string{"api/pkg/apis/projectcalico/v3/ippool.go"}},
}

// TestCalicoSnapshotIsCurrent re-reads Project Calico's source (when its mirror is present) and
// checks that testdata/calico-settings.txt still lists exactly its settings.
func TestCalicoSnapshotIsCurrent(t *testing.T) {
	if _, err := os.Stat(calicoMirror); err != nil {
		t.Skip("Project Calico's source mirror is not available")
	}
	var lines []string
	lines = append(lines, felixParams(t)...)
	lines = append(lines, felixSpecFields(t)...)
	for _, src := range calicoSources {
		files := parseCalico(t, src.files...)
		for _, p := range structPaths(files, src.root, "", 0) {
			prefix := "spec."
			if src.kind == "NetConf" {
				prefix = ""
			}
			lines = append(lines, src.kind+" "+prefix+p)
		}
	}
	got := strings.Join(lines, "\n") + "\n"
	if *update {
		head := "# Project Calico " + strings.TrimSpace(string(gitOut(t, "log", "-1", "--format=%H %cs", "HEAD"))) + "\n"
		if err := os.WriteFile(snapshotFile, []byte(head+got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(snapshotFile)
	if err != nil {
		t.Fatal(err)
	}
	if _, body, _ := strings.Cut(string(want), "\n"); got != body { // the first line names the commit
		t.Errorf("%s is out of date with Project Calico's source: run go test -run TestCalicoSnapshotIsCurrent -update", snapshotFile)
	}
}

func gitShow(t *testing.T, path string) []byte { return gitOut(t, "show", "HEAD:"+path) }

func gitOut(t *testing.T, args ...string) []byte {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", calicoMirror}, args...)...).Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return out
}

var configTag = regexp.MustCompile(`^\s+(\w+)\s+.*` + "`" + `config:"([^"]*)"`)

// felixParams lists felix's parameters from config_params.go: name, type and default.
func felixParams(t *testing.T) []string {
	var out []string
	for _, line := range strings.Split(string(gitShow(t, "felix/config/config_params.go")), "\n") {
		m := configTag.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		parts := strings.SplitN(m[2], ";", 3)
		typ := parts[0]
		def := ""
		if len(parts) > 1 {
			def = parts[1]
		}
		out = append(out, fmt.Sprintf("Felix %s %s %s", m[1], typ, strconv.Quote(def)))
	}
	return out
}

// felixSpecFields maps every FelixConfigurationSpec JSON field to felix's parameter name (its
// confignamev1 tag, else the Go field name), as Project Calico's config update processor does.
func felixSpecFields(t *testing.T) []string {
	files := parseCalico(t, "api/pkg/apis/projectcalico/v3/felixconfig.go")
	st := findStruct(files, "FelixConfigurationSpec")
	var out []string
	for _, f := range st.Fields.List {
		if len(f.Names) == 0 || f.Tag == nil {
			continue
		}
		tag := reflect.StructTag(strings.Trim(f.Tag.Value, "`"))
		js, _, _ := strings.Cut(tag.Get("json"), ",")
		name := tag.Get("confignamev1")
		if name == "" {
			name = f.Names[0].Name
		}
		out = append(out, fmt.Sprintf("FelixConfiguration spec.%s %s", js, name))
	}
	return out
}

func parseCalico(t *testing.T, paths ...string) []*ast.File {
	var files []*ast.File
	fset := token.NewFileSet()
	for _, p := range paths {
		f, err := parser.ParseFile(fset, p, gitShow(t, p), 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}

func findStruct(files []*ast.File, name string) *ast.StructType {
	for _, f := range files {
		if obj := f.Scope.Lookup(name); obj != nil {
			if ts, ok := obj.Decl.(*ast.TypeSpec); ok {
				if st, ok := ts.Type.(*ast.StructType); ok {
					return st
				}
			}
		}
	}
	return nil
}

// structPaths lists the JSON paths of a struct's fields. Fields whose type is a struct of the
// same files (or an anonymous struct) are expanded one level; slices and maps are leaves.
func structPaths(files []*ast.File, name, prefix string, depth int) []string {
	st := findStruct(files, name)
	if st == nil {
		return nil
	}
	return fieldPaths(files, st, prefix, depth)
}

func fieldPaths(files []*ast.File, st *ast.StructType, prefix string, depth int) []string {
	var out []string
	for _, f := range st.Fields.List {
		if len(f.Names) == 0 {
			continue // embedded (TypeMeta and the like)
		}
		key := f.Names[0].Name
		if f.Tag != nil {
			tag := reflect.StructTag(strings.Trim(f.Tag.Value, "`"))
			if js, _, _ := strings.Cut(tag.Get("json"), ","); js == "-" {
				continue
			} else if js != "" {
				key = js
			}
		}
		path := prefix + key
		typ := f.Type
		if s, ok := typ.(*ast.StarExpr); ok {
			typ = s.X
		}
		var sub []string
		if depth < 1 {
			switch x := typ.(type) {
			case *ast.StructType:
				sub = fieldPaths(files, x, path+".", depth+1)
			case *ast.Ident:
				sub = structPaths(files, x.Name, path+".", depth+1)
			}
		}
		if len(sub) == 0 {
			out = append(out, path)
		}
		out = append(out, sub...)
	}
	sort.Strings(out)
	return out
}
