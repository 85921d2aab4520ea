package calicoctl

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// A JSON Patch (RFC 6902): a list of operations, each on a JSON Pointer (RFC 6901) into the
// stored object. The whole patch applies or nothing does.

type jsonPatchOp struct {
	Op    string           `json:"op"`
	Path  *string          `json:"path"`
	From  *string          `json:"from"`
	Value *json.RawMessage `json:"value"`
}

// parseJSONPatch reads a JSON Patch (JSON, or the same in YAML) and checks each operation's shape.
func parseJSONPatch(text string) ([]jsonPatchOp, error) {
	j, err := yaml.YAMLToJSON([]byte(text))
	if err != nil {
		return nil, fmt.Errorf("invalid patch: %v", err)
	}
	var ops []jsonPatchOp
	if err := json.Unmarshal(j, &ops); err != nil {
		return nil, fmt.Errorf("invalid JSON patch: it must be a list of operations: %v", err)
	}
	for i, op := range ops {
		if err := op.check(); err != nil {
			return nil, fmt.Errorf("invalid JSON patch: operation %d: %w", i, err)
		}
	}
	return ops, nil
}

func (op jsonPatchOp) check() error {
	if op.Path == nil {
		return fmt.Errorf("%q has no path", op.Op)
	}
	switch op.Op {
	case "add", "replace", "test":
		if op.Value == nil {
			return fmt.Errorf("%q has no value", op.Op)
		}
	case "move", "copy":
		if op.From == nil {
			return fmt.Errorf("%q has no from", op.Op)
		}
	case "remove":
	default:
		return fmt.Errorf("unknown operation %q (add, remove, replace, move, copy, test)", op.Op)
	}
	return nil
}

// applyJSONPatch applies the operations in order to doc (decoded JSON) and returns the result.
func applyJSONPatch(doc any, ops []jsonPatchOp) (any, error) {
	for i, op := range ops {
		var err error
		if doc, err = op.apply(doc); err != nil {
			return nil, fmt.Errorf("JSON patch operation %d (%s %s): %w", i, op.Op, *op.Path, err)
		}
	}
	return doc, nil
}

func (op jsonPatchOp) apply(doc any) (any, error) {
	path, err := parsePointer(*op.Path)
	if err != nil {
		return nil, err
	}
	var value any
	if op.Value != nil {
		if err := json.Unmarshal(*op.Value, &value); err != nil {
			return nil, err
		}
	}
	switch op.Op {
	case "add":
		return pointerAdd(doc, path, value)
	case "remove":
		doc, _, err = pointerRemove(doc, path)
		return doc, err
	case "replace":
		if _, err := pointerGet(doc, path); err != nil || len(path) == 0 {
			return value, err
		}
		if doc, _, err = pointerRemove(doc, path); err != nil {
			return nil, err
		}
		return pointerAdd(doc, path, value)
	case "test":
		got, err := pointerGet(doc, path)
		if err != nil {
			return nil, err
		}
		if !reflect.DeepEqual(got, value) {
			return nil, fmt.Errorf("test failed: the value is %s", compactJSON(got))
		}
		return doc, nil
	}
	return op.moveOrCopy(doc, path)
}

func (op jsonPatchOp) moveOrCopy(doc any, path []string) (any, error) {
	from, err := parsePointer(*op.From)
	if err != nil {
		return nil, err
	}
	value, err := pointerGet(doc, from)
	if err != nil {
		return nil, fmt.Errorf("from: %w", err)
	}
	if op.Op == "copy" {
		return pointerAdd(doc, path, deepCopyJSON(value))
	}
	if len(from) < len(path) && reflect.DeepEqual(from, path[:len(from)]) {
		return nil, fmt.Errorf("cannot move %s into itself", *op.From)
	}
	if doc, _, err = pointerRemove(doc, from); err != nil {
		return nil, err
	}
	return pointerAdd(doc, path, value)
}

// parsePointer splits a JSON Pointer into its unescaped tokens ("" is the whole document).
func parsePointer(p string) ([]string, error) {
	if p == "" {
		return nil, nil
	}
	if !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("path %q does not start with /", p)
	}
	toks := strings.Split(p[1:], "/")
	for i, t := range toks {
		toks[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return toks, nil
}

func pointerGet(doc any, path []string) (any, error) {
	for _, tok := range path {
		switch c := doc.(type) {
		case map[string]any:
			v, ok := c[tok]
			if !ok {
				return nil, fmt.Errorf("%q does not exist", tok)
			}
			doc = v
		case []any:
			i, err := arrayIndex(tok, len(c), false)
			if err != nil {
				return nil, err
			}
			doc = c[i]
		default:
			return nil, fmt.Errorf("%q is inside a value that is not an object or a list", tok)
		}
	}
	return doc, nil
}

// pointerAdd sets or inserts value at path and returns the new document.
func pointerAdd(doc any, path []string, value any) (any, error) {
	if len(path) == 0 {
		return value, nil
	}
	parent, err := pointerGet(doc, path[:len(path)-1])
	if err != nil {
		return nil, err
	}
	last := path[len(path)-1]
	switch c := parent.(type) {
	case map[string]any:
		c[last] = value
		return doc, nil
	case []any:
		i, err := arrayIndex(last, len(c), true)
		if err != nil {
			return nil, err
		}
		grown := append(c[:i:i], append([]any{value}, c[i:]...)...)
		return pointerSet(doc, path[:len(path)-1], grown)
	}
	return nil, fmt.Errorf("%q is inside a value that is not an object or a list", last)
}

// pointerRemove removes the value at path, returning the new document and the value removed.
func pointerRemove(doc any, path []string) (any, any, error) {
	if len(path) == 0 {
		return nil, nil, fmt.Errorf("cannot remove the whole object")
	}
	parent, err := pointerGet(doc, path[:len(path)-1])
	if err != nil {
		return nil, nil, err
	}
	last := path[len(path)-1]
	switch c := parent.(type) {
	case map[string]any:
		v, ok := c[last]
		if !ok {
			return nil, nil, fmt.Errorf("%q does not exist", last)
		}
		delete(c, last)
		return doc, v, nil
	case []any:
		i, err := arrayIndex(last, len(c), false)
		if err != nil {
			return nil, nil, err
		}
		v := c[i]
		shrunk := append(c[:i:i], c[i+1:]...)
		doc, err = pointerSet(doc, path[:len(path)-1], shrunk)
		return doc, v, err
	}
	return nil, nil, fmt.Errorf("%q is inside a value that is not an object or a list", last)
}

// pointerSet replaces the value at path (which exists).
func pointerSet(doc any, path []string, value any) (any, error) {
	if len(path) == 0 {
		return value, nil
	}
	parent, err := pointerGet(doc, path[:len(path)-1])
	if err != nil {
		return nil, err
	}
	last := path[len(path)-1]
	switch c := parent.(type) {
	case map[string]any:
		c[last] = value
	case []any:
		i, err := arrayIndex(last, len(c), false)
		if err != nil {
			return nil, err
		}
		c[i] = value
	}
	return doc, nil
}

// arrayIndex parses a list index: 0..n-1, or up to n (and "-", meaning n) when adding.
func arrayIndex(tok string, n int, adding bool) (int, error) {
	if adding && tok == "-" {
		return n, nil
	}
	i, err := strconv.Atoi(tok)
	if err != nil || i < 0 || (tok != "0" && strings.HasPrefix(tok, "0")) {
		return 0, fmt.Errorf("%q is not a list index", tok)
	}
	if i > n || (!adding && i == n) {
		return 0, fmt.Errorf("index %d is out of range (the list has %d items)", i, n)
	}
	return i, nil
}

func deepCopyJSON(v any) any {
	b, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

func compactJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// changedOutsidePatchable lists what a patch changed outside spec, metadata.labels and
// metadata.annotations.
func changedOutsidePatchable(before, after map[string]any) []string {
	var bad []string
	for _, k := range unionKeys(before, after) {
		if k == "spec" || reflect.DeepEqual(before[k], after[k]) {
			continue
		}
		if k != "metadata" {
			bad = append(bad, k)
			continue
		}
		bm, _ := before[k].(map[string]any)
		am, ok := after[k].(map[string]any)
		if !ok {
			bad = append(bad, k)
			continue
		}
		for _, mk := range unionKeys(bm, am) {
			if mk != "labels" && mk != "annotations" && !reflect.DeepEqual(bm[mk], am[mk]) {
				bad = append(bad, "metadata."+mk)
			}
		}
	}
	return bad
}

func unionKeys(a, b map[string]any) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range []map[string]any{a, b} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}
