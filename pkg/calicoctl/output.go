package calicoctl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/calico-host/calico-host/pkg/api"
)

// result is one thing `get` prints: a single object, or a list of one kind (a listing).
type result struct {
	kind     api.KindInfo
	object   api.Resource   // a single object, or nil
	items    []api.Resource // a listing
	revision int64          // the listing's revision
}

// Key orders of Project Calico's JSON: its Go structs' field order (Kubernetes ObjectMeta for
// metadata); keys we do not know follow in sorted order.
var (
	resourceKeyOrder = []string{"kind", "apiVersion", "metadata", "spec", "status"}
	metadataKeyOrder = []string{"name", "generateName", "namespace", "selfLink", "uid", "resourceVersion",
		"generation", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
		"annotations", "ownerReferences", "finalizers", "managedFields"}
)

// resourceJSON renders an object as compact JSON with Project Calico's key order.
func resourceJSON(r api.Resource) ([]byte, error) {
	raw, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	return reorderJSON(raw, resourceKeyOrder, func(key string, v []byte) ([]byte, error) {
		if key == "metadata" {
			return reorderJSON(v, metadataKeyOrder, nil)
		}
		return v, nil
	})
}

// reorderJSON rewrites a JSON object with its keys in the given order; sub may rewrite values.
func reorderJSON(raw []byte, order []string, sub func(string, []byte) ([]byte, error)) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	rank := map[string]int{}
	for i, k := range order {
		rank[k] = i + 1
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		ri, rj := rank[keys[i]], rank[keys[j]]
		switch {
		case ri != 0 && rj != 0:
			return ri < rj
		case ri != 0 || rj != 0:
			return ri != 0
		}
		return keys[i] < keys[j]
	})
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		v := []byte(m[k])
		if sub != nil {
			var err error
			if v, err = sub(k, v); err != nil {
				return nil, err
			}
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// resultJSON renders one result: the object itself, or a "<Kind>List" object with the listing's
// revision and items, as Project Calico prints them.
func resultJSON(r result) ([]byte, error) {
	if r.object != nil {
		return resourceJSON(r.object)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"kind":%q,"apiVersion":%q,"metadata":{"resourceVersion":%q},"items":`,
		r.kind.Kind+"List", api.APIVersion, strconv.FormatInt(r.revision, 10))
	if err := writeJSONArray(&b, r.items); err != nil {
		return nil, err
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func writeJSONArray(b *bytes.Buffer, items []api.Resource) error {
	b.WriteByte('[')
	for i, it := range items {
		if i > 0 {
			b.WriteByte(',')
		}
		j, err := resourceJSON(it)
		if err != nil {
			return err
		}
		b.Write(j)
	}
	b.WriteByte(']')
	return nil
}

// resultsJSON renders what `get` printed: one result alone, several as a JSON array, none (every
// one failed) as null.
func resultsJSON(rs []result) ([]byte, error) {
	switch len(rs) {
	case 0:
		return []byte("null"), nil
	case 1:
		return resultJSON(rs[0])
	}
	var b bytes.Buffer
	b.WriteByte('[')
	for i, r := range rs {
		if i > 0 {
			b.WriteByte(',')
		}
		j, err := resultJSON(r)
		if err != nil {
			return nil, err
		}
		b.Write(j)
	}
	b.WriteByte(']')
	return b.Bytes(), nil
}

// printJSON prints indented JSON, as `calicoctl get -o json` does.
func printJSON(out io.Writer, rs []result) error {
	compact, err := resultsJSON(rs)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := json.Indent(&b, compact, "", "  "); err != nil {
		return err
	}
	b.WriteByte('\n')
	_, err = out.Write(b.Bytes())
	return err
}

// printYAML prints YAML with sorted keys, as `calicoctl get -o yaml` does.
func printYAML(out io.Writer, rs []result) error {
	compact, err := resultsJSON(rs)
	if err != nil {
		return err
	}
	y, err := yaml.JSONToYAML(compact)
	if err != nil {
		return err
	}
	_, err = out.Write(y)
	return err
}

// printNames prints one "<kind>/<name>" line per object (like kubectl's -o name; namespaced
// objects are shown as "<kind>/<namespace>/<name>" only with -A).
func printNames(out io.Writer, rs []result, withNamespace bool) error {
	for _, r := range rs {
		items := r.items
		if r.object != nil {
			items = []api.Resource{r.object}
		}
		for _, it := range items {
			m := it.GetObjectMeta()
			name := m.Name
			if withNamespace && r.kind.Namespaced {
				name = m.Namespace + "/" + name
			}
			if _, err := fmt.Fprintf(out, "%s/%s\n", strings.ToLower(r.kind.Kind), name); err != nil {
				return err
			}
		}
	}
	return nil
}
