package datastore

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
)

// Read-modify-write keeps what we do not know. A newer Project Calico may store fields our types
// lack; decoding drops them, so an update built from a decoded object would erase them. Update
// therefore carries every JSON field of the stored value that our type does not declare into the
// value it writes, at the same place:
//   - inside objects that exist in both values (unknown keys are copied; known keys recurse);
//   - inside map values under the same key;
//   - inside list elements only where the element is unchanged apart from those fields (same
//     index, and its known fields equal the new element), so that an edited or moved rule never
//     inherits another element's unknown fields.
// A known field the update left out stays out: only fields our types cannot express are kept.

// KeepUnknownFields is keepUnknownFields for values written outside Update (raw IPAM keys):
// updated with the fields of stored that the type of v does not declare.
func KeepUnknownFields(stored, updated []byte, v any) []byte {
	return keepUnknownFields(stored, updated, reflect.TypeOf(v))
}

// keepUnknownFields returns updated with the fields of stored that typ does not declare. It
// returns updated unchanged when either value is not a JSON object.
func keepUnknownFields(stored, updated []byte, typ reflect.Type) []byte {
	var old, cur any
	if json.Unmarshal(stored, &old) != nil || json.Unmarshal(updated, &cur) != nil {
		return updated
	}
	if !graft(old, cur, typ) {
		return updated
	}
	out, err := json.Marshal(cur)
	if err != nil {
		return updated
	}
	return out
}

var (
	jsonUnmarshaler = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()
	rawMessage      = reflect.TypeOf(json.RawMessage{})
)

// graft copies unknown fields of old into cur (both decoded JSON of type typ) and reports
// whether it changed cur.
func graft(old, cur any, typ reflect.Type) bool {
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	if typ == rawMessage || reflect.PointerTo(typ).Implements(jsonUnmarshaler) {
		return false // a value with its own encoding: a leaf
	}
	switch typ.Kind() {
	case reflect.Struct:
		return graftObject(old, cur, typ)
	case reflect.Map:
		o, ok1 := old.(map[string]any)
		c, ok2 := cur.(map[string]any)
		changed := false
		for k, ov := range o {
			if cv, ok := c[k]; ok1 && ok2 && ok {
				changed = graft(ov, cv, typ.Elem()) || changed
			}
		}
		return changed
	case reflect.Slice, reflect.Array:
		return graftList(old, cur, typ.Elem())
	}
	return false
}

func graftObject(old, cur any, typ reflect.Type) bool {
	o, ok1 := old.(map[string]any)
	c, ok2 := cur.(map[string]any)
	if !ok1 || !ok2 {
		return false
	}
	fields := jsonFields(typ)
	changed := false
	for k, ov := range o {
		ft, known := fieldType(fields, k)
		if !known {
			if _, clash := c[k]; !clash {
				c[k] = ov
				changed = true
			}
			continue
		}
		if cv, ok := c[canonicalName(fields, k)]; ok {
			changed = graft(ov, cv, ft) || changed
		}
	}
	return changed
}

// graftList grafts into list elements that are unchanged apart from their unknown fields.
func graftList(old, cur any, elem reflect.Type) bool {
	o, ok1 := old.([]any)
	c, ok2 := cur.([]any)
	if !ok1 || !ok2 {
		return false
	}
	changed := false
	for i := range min(len(o), len(c)) {
		if knownPart(o[i], elem, c[i]) {
			changed = graft(o[i], c[i], elem) || changed
		}
	}
	return changed
}

// knownPart reports whether old, decoded into elem and encoded again, equals cur.
func knownPart(old any, elem reflect.Type, cur any) bool {
	raw, err := json.Marshal(old)
	if err != nil {
		return false
	}
	v := reflect.New(elem)
	if json.Unmarshal(raw, v.Interface()) != nil {
		return false
	}
	again, err := json.Marshal(v.Interface())
	if err != nil {
		return false
	}
	want, err := json.Marshal(cur)
	return err == nil && bytes.Equal(again, want)
}

// jsonFields maps the JSON names of a struct's fields (embedded structs without a name
// flattened, as encoding/json does) to their types.
func jsonFields(typ reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		if f.Anonymous && name == "" {
			t := f.Type
			for t.Kind() == reflect.Pointer {
				t = t.Elem()
			}
			if t.Kind() == reflect.Struct {
				for k, v := range jsonFields(t) {
					out[k] = v
				}
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

// fieldType finds a JSON key among the fields, exactly or (as encoding/json decodes) ignoring
// case.
func fieldType(fields map[string]reflect.Type, key string) (reflect.Type, bool) {
	if t, ok := fields[key]; ok {
		return t, true
	}
	for name, t := range fields {
		if strings.EqualFold(name, key) {
			return t, true
		}
	}
	return nil, false
}

func canonicalName(fields map[string]reflect.Type, key string) string {
	if _, ok := fields[key]; ok {
		return key
	}
	for name := range fields {
		if strings.EqualFold(name, key) {
			return name
		}
	}
	return key
}
