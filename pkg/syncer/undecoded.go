package syncer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
)

// maxPrunes bounds the rounds of decodeLeniently: values that only fail together are found in a
// later round than values that fail on their own.
const maxPrunes = 4

// decodeLeniently decodes the JSON object value of a v3 resource that does not decode as its
// kind (a member of the wrong JSON type, a port range that is reversed, a number out of its
// range): the smallest values that do not decode are left out and the rest is decoded. It
// returns the resource and the paths of what was left out, as "spec.ingress[1].destination.ports[0]".
// A value that is not a JSON object, or whose kind is not its key's (another object under the
// wrong key, not a bad field), is an error.
func decodeLeniently(id datastore.ResourceID, value []byte, modRevision int64) (api.Resource, []string, error) {
	d := json.NewDecoder(bytes.NewReader(value))
	d.UseNumber() // numbers keep their text: one out of range stays out of range
	var root any
	if err := d.Decode(&root); err != nil {
		return nil, nil, err
	}
	obj, ok := root.(map[string]any)
	if !ok {
		return nil, nil, errors.New("not a JSON object")
	}
	if kind, ok := obj["kind"]; ok && kind != any(id.Kind.Kind) {
		return nil, nil, fmt.Errorf("value has kind %v, key is for %s", kind, id.Kind.Kind) // another object
	}
	p := pruner{id: id, rev: modRevision, root: root}
	var leftOut []string
	for range maxPrunes {
		if r, err := p.decode(p.root); err == nil {
			return r, leftOut, nil
		}
		bad := p.bad(nil, p.root)
		for _, path := range bad {
			leftOut = append(leftOut, formatPath(path))
		}
		p.root = withoutPaths(p.root, nil, bad)
	}
	return nil, leftOut, errors.New("still does not decode without the values that do not decode")
}

// pruner finds the values of a JSON document that do not decode as a resource.
type pruner struct {
	id   datastore.ResourceID
	rev  int64
	root any
}

// step is one step of a path in a JSON document: a member name (string) or an array index (int).
type step = any

func (p *pruner) decode(doc any) (api.Resource, error) {
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	v, err := datastore.DecodeID(p.id, b, p.rev)
	if err != nil {
		return nil, err
	}
	return v.(api.Resource), nil
}

// bad returns the paths of the smallest values under node (at path, which does not decode with
// every other value of the document left out) that do not decode: its children that do not,
// searched by halves, or node itself when each of its children decodes.
func (p *pruner) bad(path []step, node any) [][]step {
	var out [][]step
	p.split(path, node, children(node), &out)
	if len(out) == 0 {
		return [][]step{path}
	}
	return out
}

// split appends to out the bad values under the children kids of node, a document holding only
// them (along path) is decoded as a whole first.
func (p *pruner) split(path []step, node any, kids []step, out *[][]step) {
	if len(kids) == 0 {
		return
	}
	if _, err := p.decode(only(p.root, path, kids)); err == nil {
		return
	}
	if len(kids) > 1 {
		p.split(path, node, kids[:len(kids)/2], out)
		p.split(path, node, kids[len(kids)/2:], out)
		return
	}
	*out = append(*out, p.bad(append(slices.Clip(path), kids[0]), child(node, kids[0]))...)
}

// children lists the member names (sorted) or indices of a JSON object or array; nil for a
// scalar.
func children(node any) []step {
	var out []step
	switch n := node.(type) {
	case map[string]any:
		keys := make([]string, 0, len(n))
		for k := range n {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			out = append(out, k)
		}
	case []any:
		for i := range n {
			out = append(out, i)
		}
	}
	return out
}

func child(node any, s step) any {
	if k, ok := s.(string); ok {
		return node.(map[string]any)[k]
	}
	return node.([]any)[s.(int)]
}

// only is a copy of node holding, along path, only the values on the path and, at its end, only
// the children kids.
func only(node any, path []step, kids []step) any {
	here := kids
	if len(path) > 0 {
		here = path[:1]
	}
	var out any
	switch node.(type) {
	case map[string]any:
		m := map[string]any{}
		for _, k := range here {
			m[k.(string)] = child(node, k)
		}
		out = m
	case []any:
		a := []any{}
		for _, i := range here {
			a = append(a, child(node, i))
		}
		out = a
	}
	if len(path) > 0 {
		inner := only(child(node, path[0]), path[1:], kids)
		if m, ok := out.(map[string]any); ok {
			m[path[0].(string)] = inner
		} else {
			out.([]any)[0] = inner
		}
	}
	return out
}

// withoutPaths is node (at path) without the values at the paths drop.
func withoutPaths(node any, path []step, drop [][]step) any {
	switch n := node.(type) {
	case map[string]any:
		m := map[string]any{}
		for k, v := range n {
			if sub := append(slices.Clip(path), k); !slices.ContainsFunc(drop, pathEq(sub)) {
				m[k] = withoutPaths(v, sub, drop)
			}
		}
		return m
	case []any:
		a := []any{}
		for i, v := range n {
			if sub := append(slices.Clip(path), i); !slices.ContainsFunc(drop, pathEq(sub)) {
				a = append(a, withoutPaths(v, sub, drop))
			}
		}
		return a
	}
	return node
}

func pathEq(a []step) func([]step) bool {
	return func(b []step) bool { return slices.Equal(a, b) }
}

// formatPath writes a path as "spec.ingress[1].destination".
func formatPath(path []step) string {
	var b strings.Builder
	for _, s := range path {
		if i, ok := s.(int); ok {
			b.WriteString("[" + strconv.Itoa(i) + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s.(string))
	}
	return b.String()
}

// leftOutErr says which values of an object did not decode and why the first did not.
func leftOutErr(kind string, leftOut []string, err error) error {
	return fmt.Errorf("invalid %s: left out what does not decode (%s): %w", kind, strings.Join(leftOut, ", "), err)
}
