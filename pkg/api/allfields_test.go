package api

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// testdata/calico-all-fields.json carries one object of each of these kinds with every field of
// Project Calico's v3 types set (JSON names taken from its struct tags, api/pkg/apis/projectcalico/
// v3), several of them to explicit zero values ("ipv6Support": false, "vxlanMTU": 0,
// "healthHost": "", "failsafeOutboundHostPorts": []) that only pointer fields can keep.

// decodeStrict decodes one v3 object as calicoctl does: unknown fields are an error.
func decodeStrict(t *testing.T, raw json.RawMessage) Resource {
	t.Helper()
	var probe TypeMeta
	if err := json.Unmarshal(raw, &probe); err != nil {
		t.Fatal(err)
	}
	k, ok := LookupKind(probe.Kind)
	if !ok {
		t.Fatalf("unknown kind %q", probe.Kind)
	}
	obj := k.New()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(obj); err != nil {
		t.Fatalf("%s: %v", probe.Kind, err)
	}
	return obj
}

func loadAllFields(t *testing.T) []json.RawMessage {
	t.Helper()
	b, err := os.ReadFile("testdata/calico-all-fields.json")
	if err != nil {
		t.Fatal(err)
	}
	var docs []json.RawMessage
	if err := json.Unmarshal(b, &docs); err != nil {
		t.Fatal(err)
	}
	return docs
}

func generic(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestAllCalicoFieldsRoundTrip decodes every field strictly and re-encodes it unchanged.
func TestAllCalicoFieldsRoundTrip(t *testing.T) {
	for _, raw := range loadAllFields(t) {
		obj := decodeStrict(t, raw)
		t.Run(obj.GetTypeMeta().Kind, func(t *testing.T) {
			out, err := json.Marshal(obj)
			if err != nil {
				t.Fatal(err)
			}
			if want, got := generic(t, raw), generic(t, out); !reflect.DeepEqual(want, got) {
				t.Errorf("round trip changed the object:\n%s", jsonDiff(want, got, ""))
			}
		})
	}
}

// TestAllFieldsDocumentIsComplete: every JSON field our spec and status types declare appears in
// the document, so the round trip above covers all of them (strict decoding already proves the
// converse: every field in the document is one we declare).
func TestAllFieldsDocumentIsComplete(t *testing.T) {
	for _, raw := range loadAllFields(t) {
		obj := decodeStrict(t, raw)
		t.Run(obj.GetTypeMeta().Kind, func(t *testing.T) {
			doc := generic(t, raw).(map[string]any)
			declared, present := map[string]bool{}, map[string]bool{}
			typ := reflect.TypeOf(obj).Elem()
			for _, top := range []string{"Spec", "Status"} {
				f, ok := typ.FieldByName(top)
				if !ok {
					continue
				}
				name := jsonName(f)
				declarePaths(f.Type, name, declared)
				walkPresent(f.Type, doc[name], name, present)
			}
			var missing []string
			for p := range declared {
				if !present[p] {
					missing = append(missing, p)
				}
			}
			sort.Strings(missing)
			if len(missing) > 0 {
				t.Errorf("testdata lacks %d declared fields: %s", len(missing), strings.Join(missing, ", "))
			}
		})
	}
}

// TestExplicitZeroValuesRoundTrip: values Project Calico keeps because their fields are pointers
// survive a decode and encode.
func TestExplicitZeroValuesRoundTrip(t *testing.T) {
	for _, doc := range []string{
		`{"apiVersion":"projectcalico.org/v3","kind":"FelixConfiguration","metadata":{"name":"default"},"spec":{"ipv6Support":false,"vxlanMTU":0,"healthHost":"","failsafeInboundHostPorts":[],"natOutgoingExclusions":"IPPoolsOnly","bpfExtToServiceConnmark":0}}`,
		`{"apiVersion":"projectcalico.org/v3","kind":"BGPConfiguration","metadata":{"name":"default"},"spec":{"nodeToNodeMeshEnabled":false,"asNumber":0,"serviceLoadBalancerAggregation":"Enabled"}}`,
		`{"apiVersion":"projectcalico.org/v3","kind":"BGPPeer","metadata":{"name":"p"},"spec":{"peerIP":"198.18.0.1","asNumber":64512,"ttlSecurity":0,"numAllowedLocalASNumbers":0}}`,
		`{"apiVersion":"projectcalico.org/v3","kind":"IPAMConfiguration","metadata":{"name":"default"},"spec":{"strictAffinity":false,"autoAllocateBlocks":false,"minIPReclaimAgeSeconds":0}}`,
	} {
		obj := decodeStrict(t, json.RawMessage(doc))
		out, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		want, got := generic(t, []byte(doc)), generic(t, out)
		if d := jsonDiff(want, got, ""); d != "" {
			t.Errorf("%s:\n%s", obj.GetTypeMeta().Kind, d)
		}
	}
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

// leafTypes marshal themselves: their JSON is a scalar, not an object of fields.
var leafTypes = map[reflect.Type]bool{
	reflect.TypeOf(Duration{}): true, reflect.TypeOf(Port{}): true, reflect.TypeOf(Protocol{}): true,
	reflect.TypeOf(DSCP{}): true, reflect.TypeOf(ASNumber(0)): true,
}

// elemStruct strips pointers and slices; it returns the struct type whose fields are nested JSON
// fields, or nil for scalars, maps and self-marshalling types.
func elemStruct(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || leafTypes[t] {
		return nil
	}
	return t
}

func declarePaths(t reflect.Type, prefix string, out map[string]bool) {
	st := elemStruct(t)
	if st == nil {
		return
	}
	for i := 0; i < st.NumField(); i++ {
		f := st.Field(i)
		name := jsonName(f)
		if name == "" || name == "-" {
			continue
		}
		p := prefix + "." + name
		out[p] = true
		declarePaths(f.Type, p, out)
	}
}

func walkPresent(t reflect.Type, v any, prefix string, out map[string]bool) {
	st := elemStruct(t)
	if st == nil {
		return
	}
	if list, ok := v.([]any); ok {
		for _, e := range list {
			walkPresent(t, e, prefix, out)
		}
		return
	}
	m, _ := v.(map[string]any)
	for i := 0; i < st.NumField(); i++ {
		f := st.Field(i)
		name := jsonName(f)
		if val, ok := m[name]; ok {
			out[prefix+"."+name] = true
			walkPresent(f.Type, val, prefix+"."+name, out)
		}
	}
}

// jsonDiff lists the paths where two decoded JSON values differ.
func jsonDiff(a, b any, path string) string {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		var sorted []string
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		var out strings.Builder
		for _, k := range sorted {
			out.WriteString(jsonDiff(am[k], bm[k], path+"."+k))
		}
		return out.String()
	}
	if reflect.DeepEqual(a, b) {
		return ""
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return path + ": " + string(ja) + " -> " + string(jb) + "\n"
}
