package calicoctl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"sort"
	"strings"
	"text/template"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/calico-host/calico-host/pkg/api"
)

// `get -o go-template=...` and `-o go-template-file=...` execute a Go template on what Project
// Calico's calicoctl passes to it: a list with one entry per thing got, each either the object
// itself (a named get) or the kind's list object (a listing) with the Go shape of Calico's
// <Kind>List: embedded TypeMeta (Kind "<Kind>List", APIVersion), embedded ListMeta
// (ResourceVersion, the listing's revision) and Items. Objects carry Go field names: pkg/api's
// types use Project Calico's (checked by TestTemplateFieldNamesMatchCalico). Timestamps print as
// Kubernetes' metav1.Time does (Go's time format, local time zone).

// templateList is the Go shape of Project Calico's <Kind>List objects (the embedded fields'
// names are what templates use: .TypeMeta.Kind, .ListMeta.ResourceVersion).
type templateList struct {
	api.TypeMeta
	ListMeta
	Items any
}

// ListMeta is Kubernetes' metav1.ListMeta, as templates see it.
type ListMeta struct {
	SelfLink           string
	ResourceVersion    string
	Continue           string
	RemainingItemCount *int64
}

// templateData builds the value Project Calico's calicoctl executes a template on.
func templateData(rs []result) ([]any, error) {
	out := make([]any, 0, len(rs))
	for _, r := range rs {
		if r.object != nil {
			obj, err := templateObject(r.object)
			if err != nil {
				return nil, err
			}
			out = append(out, obj)
			continue
		}
		items, err := templateItems(r.kind, r.items)
		if err != nil {
			return nil, err
		}
		out = append(out, &templateList{
			TypeMeta: api.TypeMeta{Kind: r.kind.Kind + "List", APIVersion: api.APIVersion},
			ListMeta: ListMeta{ResourceVersion: fmt.Sprint(r.revision)},
			Items:    items,
		})
	}
	return out, nil
}

// templateItems returns a listing as a slice of the kind's struct type ([]api.IPPool), as
// Calico's Items is.
func templateItems(k api.KindInfo, items []api.Resource) (any, error) {
	typ := reflect.TypeOf(k.New()).Elem()
	s := reflect.MakeSlice(reflect.SliceOf(typ), 0, len(items))
	for _, it := range items {
		obj, err := templateObject(it)
		if err != nil {
			return nil, err
		}
		s = reflect.Append(s, reflect.ValueOf(obj).Elem())
	}
	return s.Interface(), nil
}

// templateObject copies an object with its timestamps as metav1.Time prints them.
func templateObject(r api.Resource) (api.Resource, error) {
	raw, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	k, ok := api.KindOf(r)
	if !ok {
		return nil, fmt.Errorf("unknown resource type %T", r)
	}
	cp := k.New()
	if err := json.Unmarshal(raw, cp); err != nil {
		return nil, err
	}
	m := cp.GetObjectMeta()
	m.CreationTimestamp = metaTime(m.CreationTimestamp)
	if m.DeletionTimestamp != "" {
		m.DeletionTimestamp = metaTime(m.DeletionTimestamp)
	}
	return cp, nil
}

// metaTime renders an RFC 3339 time as a Kubernetes metav1.Time prints: Go's time format in the
// local zone; the zero time when unset.
func metaTime(s string) string {
	if s == "" {
		return time.Time{}.String()
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return s
	}
	return t.Local().String()
}

// errInvalidYAMLTemplate is Project Calico's refusal of a template whose output is not YAML (its
// templates run through google/safetext's yamltemplate).
var errInvalidYAMLTemplate = failf("Invalid YAML Template")

// printTemplate executes a user template on the results.
func printTemplate(s *session, out io.Writer, text string, rs []result) error {
	t, err := template.New("get").Funcs(templateFuncs(s)).Parse(text)
	if err != nil {
		return err
	}
	data, err := templateData(rs)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return err
	}
	if !isYAML(b.Bytes()) {
		return errInvalidYAMLTemplate
	}
	_, err = out.Write(b.Bytes())
	return err
}

// printTemplateFile reads the template from a file.
func printTemplateFile(s *session, out io.Writer, path string, rs []result) error {
	text, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return printTemplate(s, out, string(text), rs)
}

func isYAML(b []byte) bool {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			return true
		}
		if err != nil {
			return false
		}
	}
}

// templateFuncs are the functions Project Calico's templates have: join, joinAndTruncate and
// config ("asnumber" only).
func templateFuncs(s *session) template.FuncMap {
	tc := &tableContext{s: s}
	return template.FuncMap{
		"join":            func(items any, sep string) string { return joinAndTruncate(items, sep, 0) },
		"joinAndTruncate": joinAndTruncate,
		"config": func(name string) string {
			if strings.ToLower(name) == "asnumber" {
				return tc.globalASNumber()
			}
			panic("unhandled config type")
		},
	}
}

// joinAndTruncate joins the items of a slice (a map: its sorted "k=v" pairs; anything else: the
// value itself) with sep, cut to maxLen with "..." when maxLen > 0.
func joinAndTruncate(items any, sep string, maxLen int) string {
	if items == nil {
		return ""
	}
	v := reflect.ValueOf(items)
	var parts []string
	switch v.Kind() {
	case reflect.Map:
		for _, k := range v.MapKeys() {
			parts = append(parts, fmt.Sprintf("%v=%v", k.Interface(), v.MapIndex(k).Interface()))
		}
		sort.Strings(parts)
	case reflect.Slice:
		for i := range v.Len() {
			parts = append(parts, fmt.Sprint(v.Index(i).Interface()))
		}
	default:
		parts = []string{fmt.Sprint(items)}
	}
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(p)
		if maxLen > 0 && b.Len() > maxLen {
			return b.String()[:maxLen-3] + "..."
		}
	}
	return b.String()
}
