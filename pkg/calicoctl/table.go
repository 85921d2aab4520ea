package calicoctl

import (
	"fmt"
	"io"
	"maps"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
)

// column renders one table cell of an object.
type column func(r api.Resource, t *tableContext) string

// tableSpec is a kind's table: its default and wide headings and every heading it knows.
type tableSpec struct {
	normal, wide []string
	cols         map[string]column
}

// tableContext gives cells access to the datastore (the global AS number) once per command.
type tableContext struct {
	s        *session
	asNumber string
}

// globalASNumber is the AS number of BGPConfiguration "default", 64512 when unset, as Project
// Calico's table shows for nodes without their own.
func (t *tableContext) globalASNumber() string {
	if t.asNumber != "" {
		return t.asNumber
	}
	t.asNumber = "unknown"
	ctx, cancel := t.s.op()
	defer cancel()
	bc, err := datastore.GetAs[*api.BGPConfiguration](ctx, t.s.ds, "", "default")
	switch {
	case datastore.IsNotFound(err), err == nil && bc.Spec.ASNumber == nil:
		t.asNumber = "64512"
	case err == nil:
		t.asNumber = fmt.Sprint(uint32(*bc.Spec.ASNumber))
	}
	return t.asNumber
}

// printTable prints results as Project Calico's ps-style tables: one table per result (a
// listing is one table), each followed by an empty line.
func printTable(out io.Writer, rs []result, headings []string, wide, printNamespace bool, t *tableContext) error {
	for _, r := range rs {
		spec := tableSpecFor(r.kind)
		hs := headings
		if hs == nil {
			hs = spec.normal
			if wide {
				hs = spec.wide
			}
		}
		if printNamespace && r.kind.Namespaced {
			hs = append([]string{"NAMESPACE"}, hs...)
		}
		if err := checkHeadings(spec, hs); err != nil {
			return err
		}
		items := r.items
		if r.object != nil {
			items = []api.Resource{r.object}
		}
		tw := tabwriter.NewWriter(out, 5, 1, 3, ' ', 0)
		fmt.Fprintln(tw, strings.Join(hs, "\t")+"\t")
		for _, it := range items {
			cells := make([]string, len(hs))
			for i, h := range hs {
				cells[i] = spec.cols[h](it, t)
			}
			fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(out)
	}
	return nil
}

func checkHeadings(spec tableSpec, hs []string) error {
	for _, h := range hs {
		if _, ok := spec.cols[h]; !ok {
			valid := make([]string, 0, len(spec.cols))
			for k := range spec.cols {
				valid = append(valid, k)
			}
			sort.Strings(valid)
			return failf("Unknown heading %s, valid values are: %s", h, strings.Join(valid, ", "))
		}
	}
	return nil
}

func tableSpecFor(k api.KindInfo) tableSpec {
	spec, ok := tableSpecs[k.Kind]
	if !ok {
		spec = tableSpec{normal: []string{"NAME"}, wide: []string{"NAME"}}
	}
	spec.cols = maps.Clone(spec.cols)
	if spec.cols == nil {
		spec.cols = map[string]column{}
	}
	spec.cols["NAME"] = func(r api.Resource, _ *tableContext) string { return r.GetObjectMeta().Name }
	if k.Namespaced {
		spec.cols["NAMESPACE"] = func(r api.Resource, _ *tableContext) string { return r.GetObjectMeta().Namespace }
	}
	return spec
}

// Cell formatting as Go templates print values: nil pointers as "<nil>", floats with %v.
func boolStr(b bool) string { return fmt.Sprint(b) }

func boolPtr(b *bool) string {
	if b == nil {
		return "<nil>"
	}
	return fmt.Sprint(*b)
}

func floatPtr(f *float64) string {
	if f == nil {
		return "<nil>"
	}
	return fmt.Sprint(*f)
}

func asn(a *api.ASNumber) string {
	if a == nil {
		return "0"
	}
	return fmt.Sprint(uint32(*a))
}

func joinTruncate(items []string, max int) string {
	s := strings.Join(items, ",")
	if max > 0 && len(s) > max {
		s = s[:max-3] + "..."
	}
	return s
}

func joinMap(m map[string]string) string {
	kv := make([]string, 0, len(m))
	for k, v := range m {
		kv = append(kv, k+"="+v)
	}
	sort.Strings(kv)
	return strings.Join(kv, ",")
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
