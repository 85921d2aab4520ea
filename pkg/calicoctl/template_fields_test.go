package calicoctl

import (
	"bufio"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/calico-host/calico-host/pkg/api"
)

// TestTemplateFieldNamesMatchCalico: a template addresses fields by Go name, so every field
// our types share with Project Calico's (by JSON path) must have Calico's Go field path
// (testdata/calico-go-fields.tsv, extracted from its source).
func TestTemplateFieldNamesMatchCalico(t *testing.T) {
	f, err := os.Open("testdata/calico-go-fields.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ours := map[string]map[string]string{}
	for _, k := range api.Kinds() {
		m := map[string]string{}
		walkGoFields(reflect.TypeOf(k.New()).Elem(), "", "", m, 0)
		ours[k.Kind] = m
	}
	checked, missing := 0, 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		parts := strings.Split(line, "\t")
		kind, jsonPath, goPath := parts[0], parts[1], parts[2]
		m, ok := ours[kind]
		if !ok {
			t.Errorf("kind %s is not known", kind)
			continue
		}
		got, ok := m[jsonPath]
		if !ok {
			missing++
			continue
		}
		checked++
		if got != goPath {
			t.Errorf("%s %s: Go path %s, Project Calico's is %s", kind, jsonPath, got, goPath)
		}
	}
	t.Logf("%d fields checked, %d of Calico's deeper paths not modelled as Go structs here", checked, missing)
	if checked < 900 {
		t.Errorf("only %d fields checked", checked)
	}
}

// walkGoFields records JSON path -> Go path for every field, flattening embedded structs
// without a JSON name as encoding/json does (and as a template reaches their promoted fields).
func walkGoFields(typ reflect.Type, jp, gp string, out map[string]string, depth int) {
	for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Map {
		typ = typ.Elem()
	}
	if typ.Kind() != reflect.Struct || depth > 8 {
		return
	}
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() || f.Name == "TypeMeta" || f.Name == "ObjectMeta" {
			continue
		}
		if f.Anonymous && name == "" { // promoted: a template names its fields without it
			walkGoFields(f.Type, jp, gp, out, depth+1)
			continue
		}
		if name == "" {
			name = f.Name
		}
		j, g := jp+"."+name, gp+"."+f.Name
		out[strings.TrimPrefix(j, ".")] = strings.TrimPrefix(g, ".")
		walkGoFields(f.Type, j, g, out, depth+1)
	}
}
