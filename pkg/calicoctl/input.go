package calicoctl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
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

// docError is a problem with one document of the input.
type docError struct {
	index int
	kind  string
	name  string
	msg   string
}

func (e docError) Error() string {
	if e.kind == "" {
		return fmt.Sprintf("document %d: %s", e.index, e.msg)
	}
	return fmt.Sprintf("document %d (%s %q): %s", e.index, e.kind, e.name, e.msg)
}

// docErrors lists every problem found in the input; nothing is written when it is not empty.
type docErrors []docError

func (es docErrors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

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
// documents are decoded before anything is returned: any decoding problem fails the whole input.
func (c *cli) readDocuments(o inputOptions) ([]*document, error) {
	files, err := inputFiles(o.filename, o.recursive)
	if err != nil {
		return nil, err
	}
	var docs []*document
	var errs docErrors
	for _, f := range files {
		data, err := c.readInput(f)
		if err != nil {
			return nil, err
		}
		n := len(docs) + len(errs)
		got, bad := decodeStream(data, n)
		if len(got)+len(bad) == 0 && !o.skipEmpty {
			return nil, failf("No resources specified in file %s", f)
		}
		docs, errs = append(docs, got...), append(errs, bad...)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return docs, nil
}

func (c *cli) readInput(name string) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(c.stdin)
	}
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, failf("Failed to execute command: %w", err)
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
		return nil, failf("Failed to execute command: %w", err)
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
// JSON/YAML list of resources, or a list object ("kind: List" or "kind: IPPoolList") with items.
// before is the number of resources already read from earlier files.
func decodeStream(data []byte, before int) ([]*document, docErrors) {
	var docs []*document
	var errs docErrors
	next := func() int { return before + len(docs) + len(errs) + 1 }
	for _, raw := range splitYAML(data) {
		objs, err := splitObjects(raw)
		if err != nil {
			errs = append(errs, docError{index: next(), msg: err.Error()})
			continue
		}
		for _, obj := range objs {
			d, err := decodeResource(obj, next())
			if err != nil {
				errs = append(errs, *err)
				continue
			}
			docs = append(docs, d)
		}
	}
	return docs, errs
}

// splitObjects converts one YAML (or JSON) document into the JSON of each resource in it.
func splitObjects(raw []byte) ([]json.RawMessage, error) {
	j, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("invalid YAML or JSON: %v", err)
	}
	j = bytes.TrimSpace(j)
	switch {
	case bytes.Equal(j, []byte("null")):
		return nil, nil
	case len(j) > 0 && j[0] == '[':
		var items []json.RawMessage
		if err := json.Unmarshal(j, &items); err != nil {
			return nil, fmt.Errorf("invalid list of resources: %v", err)
		}
		return items, nil
	}
	var list struct {
		Kind  string            `json:"kind"`
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(j, &list); err != nil {
		return nil, fmt.Errorf("a resource must be an object: %v", err)
	}
	if list.Kind == "List" || (strings.HasSuffix(list.Kind, "List") && isKindName(strings.TrimSuffix(list.Kind, "List"))) {
		return list.Items, nil
	}
	return []json.RawMessage{j}, nil
}

func isKindName(s string) bool {
	k, ok := api.LookupKind(s)
	return ok && strings.EqualFold(k.Kind, s)
}

// decodeResource decodes one resource strictly: unknown fields are errors, as in Project Calico.
func decodeResource(obj json.RawMessage, index int) (*document, *docError) {
	var probe struct {
		Kind       string `json:"kind"`
		APIVersion string `json:"apiVersion"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if t := bytes.TrimSpace(obj); len(t) == 0 || t[0] != '{' {
		return nil, &docError{index: index, msg: fmt.Sprintf("a resource must be an object, not %s", abbreviate(t))}
	}
	if err := json.Unmarshal(obj, &probe); err != nil {
		return nil, &docError{index: index, msg: decodeMessage(err)}
	}
	k, ok := api.LookupKind(probe.Kind)
	if !ok || k.Kind != probe.Kind || probe.APIVersion != api.APIVersion {
		return nil, &docError{index: index, msg: fmt.Sprintf("Unknown resource type (%s) and/or version (%s)", probe.Kind, probe.APIVersion)}
	}
	r := k.New()
	dec := json.NewDecoder(bytes.NewReader(obj))
	dec.DisallowUnknownFields()
	if err := dec.Decode(r); err != nil {
		return nil, &docError{index: index, kind: k.Kind, name: probe.Metadata.Name, msg: decodeMessage(err)}
	}
	return &document{index: index, kind: k, res: r}, nil
}

var unknownField = regexp.MustCompile(`unknown field "([^"]+)"`)

// decodeMessage words a decoding error as Project Calico does.
func decodeMessage(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Sprintf("%s: cannot decode a JSON %s as %s", te.Field, te.Value, te.Type)
	}
	if m := unknownField.FindStringSubmatch(err.Error()); m != nil {
		return "field in document is not recognized or is in the wrong location: " + m[1]
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

func abbreviate(b []byte) string {
	if len(b) > 40 {
		return string(b[:37]) + "..."
	}
	return string(b)
}
