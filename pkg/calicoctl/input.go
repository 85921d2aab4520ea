package calicoctl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/calico-host/calico-host/pkg/api"
)

// document is one resource read from the input.
type document struct {
	index int // 1-based position among every resource of the input
	kind  api.KindInfo
	res   api.Resource
}

func (d *document) meta() *api.ObjectMeta { return d.res.GetObjectMeta() }

// fileError is a problem reading or decoding the input, which Project Calico's calicoctl reports
// as "failed to execute command: <problem>" before touching the datastore.
type fileError struct{ err error }

func (e fileError) Error() string { return "failed to execute command: " + e.err.Error() }
func (e fileError) Unwrap() error { return e.err }

// inputOptions are the -f/--filename, -R/--recursive and --skip-empty options.
type inputOptions struct {
	filename  string
	recursive bool
	skipEmpty bool
}

func (o *inputOptions) define(f *flags) {
	f.str(&o.filename, "", "f", "filename")
	f.boolean(&o.recursive, "R", "recursive")
	f.boolean(&o.skipEmpty, "skip-empty")
}

// readDocuments reads every resource from the file, directory or stdin ("-") named by -f. All
// documents are decoded before anything is returned: the first problem fails the whole input, as
// in Project Calico.
func (c *cli) readDocuments(o inputOptions) ([]*document, error) {
	files, err := inputFiles(o.filename, o.recursive)
	if err != nil {
		return nil, err
	}
	var docs []*document
	for _, f := range files {
		data, err := c.readInput(f)
		if err != nil {
			return nil, err
		}
		got, err := decodeStream(data, len(docs))
		if err != nil {
			return nil, fileError{err}
		}
		if len(got) == 0 && !o.skipEmpty {
			return nil, fmt.Errorf("no resources specified in file %s", f)
		}
		docs = append(docs, got...)
	}
	return docs, nil
}

func (c *cli) readInput(name string) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(c.stdin)
	}
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, fileError{err}
	}
	return data, nil
}

// inputFiles expands a directory into its .yaml, .yml and .json files (recursively with -R).
func inputFiles(name string, recursive bool) ([]string, error) {
	if name == "-" {
		return []string{name}, nil
	}
	st, err := os.Stat(name)
	if err != nil {
		return nil, fileError{err}
	}
	if !st.IsDir() {
		return []string{name}, nil
	}
	var files []string
	err = filepath.WalkDir(name, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != name && !recursive {
			return filepath.SkipDir
		}
		switch strings.ToLower(filepath.Ext(p)) {
		case ".yaml", ".yml", ".json":
			if !d.IsDir() {
				files = append(files, p)
			}
		}
		return nil
	})
	sort.Strings(files)
	return files, err
}

var docSeparator = regexp.MustCompile(`^---(\s.*)?$`)

// splitYAML splits a YAML stream at its "---" document separators.
func splitYAML(data []byte) [][]byte {
	var docs [][]byte
	var cur bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), len(data)+1)
	for sc.Scan() {
		line := sc.Text()
		if docSeparator.MatchString(strings.TrimRight(line, "\r")) {
			docs = append(docs, append([]byte(nil), cur.Bytes()...))
			cur.Reset()
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
	}
	return append(docs, cur.Bytes())
}

// decodeStream decodes every resource of one file. Each YAML document may hold one resource, a
// JSON/YAML list of resources, or a list object ("kind: List" or "kind: IPPoolList") with items,
// also as an element of a list. before is the number of resources already read from earlier files.
func decodeStream(data []byte, before int) ([]*document, error) {
	var docs []*document
	for _, raw := range splitYAML(data) {
		objs, err := splitObjects(raw)
		if err != nil {
			return nil, err
		}
		for _, obj := range objs {
			d, err := decodeResource(obj, before+len(docs)+1)
			if err != nil {
				return nil, err
			}
			docs = append(docs, d)
		}
	}
	return docs, nil
}

// jsonDecodeError words a decoding error of a document as Project Calico's (Kubernetes') YAML
// decoder does.
func jsonDecodeError(err error) error {
	return fmt.Errorf("error unmarshaling JSON: while decoding JSON: %w", err)
}

// splitObjects converts one YAML (or JSON) document into the JSON of each resource in it.
func splitObjects(raw []byte) ([]json.RawMessage, error) {
	j, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("error converting YAML to JSON: %w", err)
	}
	j = bytes.TrimSpace(j)
	if bytes.Equal(j, []byte("null")) {
		return nil, nil
	}
	if len(j) > 0 && j[0] == '[' {
		var elems []json.RawMessage
		if err := json.Unmarshal(j, &elems); err != nil {
			return nil, jsonDecodeError(err)
		}
		var out []json.RawMessage
		for _, e := range elems {
			items, err := expandList(e)
			if err != nil {
				return nil, err
			}
			out = append(out, items...)
		}
		return out, nil
	}
	return expandList(j)
}

// listHeader is what a document says of itself: its kind and apiVersion, and its items if it is
// a list.
type listHeader struct {
	Kind       string            `json:"kind"`
	APIVersion string            `json:"apiVersion"`
	Items      []json.RawMessage `json:"items"`
}

// expandList returns the items of a list object ("List", or "<Kind>List" of a kind we know), or
// the object itself. An item of a "<Kind>List" without kind and apiVersion is of that kind.
func expandList(obj json.RawMessage) ([]json.RawMessage, error) {
	if t := bytes.TrimSpace(obj); len(t) == 0 || t[0] != '{' {
		return nil, fmt.Errorf("a resource must be an object, not %s", abbreviate(t))
	}
	var h listHeader
	if err := json.Unmarshal(obj, &h); err != nil {
		return nil, jsonDecodeError(err)
	}
	if h.Kind == "List" {
		return h.Items, nil
	}
	elem, isList := strings.CutSuffix(h.Kind, "List")
	if !isList || !isKindName(elem) {
		return []json.RawMessage{obj}, nil
	}
	out := make([]json.RawMessage, len(h.Items))
	for i, it := range h.Items {
		out[i] = withDefaultKind(it, elem, h.APIVersion)
	}
	return out, nil
}

// withDefaultKind sets kind and apiVersion on an object that has neither.
func withDefaultKind(obj json.RawMessage, kind, apiVersion string) json.RawMessage {
	var h listHeader
	if json.Unmarshal(obj, &h) != nil || h.Kind != "" || h.APIVersion != "" {
		return obj
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(obj, &m) != nil {
		return obj
	}
	m["kind"], _ = json.Marshal(kind)
	m["apiVersion"], _ = json.Marshal(apiVersion)
	out, _ := json.Marshal(m)
	return out
}

func isKindName(s string) bool {
	k, ok := api.LookupKind(s)
	return ok && strings.EqualFold(k.Kind, s)
}

// decodeResource decodes one resource strictly: unknown fields are errors, as in Project Calico
// (see massageError for how they are worded).
func decodeResource(obj json.RawMessage, index int) (*document, error) {
	if t := bytes.TrimSpace(obj); len(t) == 0 || t[0] != '{' {
		return nil, fmt.Errorf("a resource must be an object, not %s", abbreviate(t))
	}
	var h listHeader
	if err := json.Unmarshal(obj, &h); err != nil {
		return nil, jsonDecodeError(err)
	}
	k, ok := api.LookupKind(h.Kind)
	if !ok || k.Kind != h.Kind || h.APIVersion != api.APIVersion {
		return nil, fmt.Errorf("unknown resource type (%s) and/or version (%s)", h.Kind, h.APIVersion)
	}
	r := k.New()
	// Decoded as YAML against the resource's type, as Project Calico's calicoctl decodes: a
	// scalar written where a string belongs is that string (labels {x: yes} and {x: true} store
	// "true", {x: 5} stores "5").
	if err := yaml.UnmarshalStrict(obj, r); err != nil {
		return nil, err
	}
	return &document{index: index, kind: k, res: r}, nil
}

func abbreviate(b []byte) string {
	if len(b) > 40 {
		return string(b[:37]) + "..."
	}
	return string(b)
}
