package compat

import (
	"encoding/json"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Type says how a setting's values compare.
type Type string

// Types.
const (
	TypeBool    Type = "bool"
	TypeInt     Type = "int"     // decimal or 0x hex
	TypeSeconds Type = "seconds" // a number of seconds or a Go duration
	TypeMillis  Type = "millis"  // a number of milliseconds or a Go duration
	TypeString  Type = "string"  // exact, surrounding blanks ignored
	TypeEnum    Type = "enum"    // case-insensitive
	TypeList    Type = "list"    // comma-separated, blanks around items ignored
	TypeKV      Type = "kv"      // comma-separated key=value, keys case-insensitive
)

func (t Type) valid() bool {
	return slices.Contains([]Type{TypeBool, TypeInt, TypeSeconds, TypeMillis, TypeString, TypeEnum, TypeList, TypeKV}, t)
}

// normal is the canonical text of a value, and whether it parses as the type.
func (t Type) normal(v string) (string, bool) {
	v = strings.TrimSpace(v)
	switch t {
	case TypeBool:
		switch strings.ToLower(v) {
		case "true", "1", "yes", "y", "t":
			return "true", true
		case "false", "0", "no", "n", "f":
			return "false", true
		}
		return v, false
	case TypeInt:
		n, err := strconv.ParseInt(v, 0, 64)
		return strconv.FormatInt(n, 10), err == nil
	case TypeSeconds, TypeMillis:
		return duration(v, t)
	case TypeEnum:
		return strings.ToLower(v), true
	case TypeList:
		return strings.Join(splitList(v), ","), true
	case TypeKV:
		return kvText(kvMap(v)), true
	}
	return v, true
}

// duration parses a number (of seconds or milliseconds) or a Go duration.
func duration(v string, t Type) (string, bool) {
	unit := time.Second
	if t == TypeMillis {
		unit = time.Millisecond
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil && !math.IsNaN(f) && math.Abs(f) < float64(math.MaxInt64)/float64(unit) {
		return time.Duration(f * float64(unit)).String(), true
	}
	d, err := time.ParseDuration(v)
	return d.String(), err == nil
}

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func kvMap(v string) map[string]string {
	m := map[string]string{}
	for _, item := range splitList(v) {
		k, val, _ := strings.Cut(item, "=")
		m[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(val)
	}
	return m
}

func kvText(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return strings.Join(parts, ",")
}

// oneOf reports whether v equals one of the values. A kv value equals a kv value when each key
// it sets has the other's setting (a partial override that repeats the defaults).
func (t Type) oneOf(v string, values []string) bool {
	n, ok := t.normal(v)
	if !ok {
		return false
	}
	for _, w := range values {
		if t == TypeKV && kvSubset(kvMap(v), kvMap(w)) {
			return true
		}
		if m, _ := t.normal(w); m == n {
			return true
		}
	}
	return false
}

func kvSubset(sub, of map[string]string) bool {
	for k, v := range sub {
		if w, ok := of[k]; !ok || !strings.EqualFold(v, w) {
			return false
		}
	}
	return true
}

// jsonText renders a decoded JSON value as the text of a setting, as Project Calico's config
// processor renders FelixConfiguration fields for felix: lists comma-separated, range objects
// as min-max, health timeout overrides and other objects as key=value lists. null is "".
func jsonText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case json.Number:
		return x.String()
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case []any:
		parts := make([]string, 0, len(x))
		for _, e := range x {
			parts = append(parts, jsonText(e))
		}
		return strings.Join(parts, ",")
	case map[string]any:
		return objectText(x)
	}
	return ""
}

func objectText(m map[string]any) string {
	if len(m) == 2 && m["min"] != nil && m["max"] != nil {
		return jsonText(m["min"]) + "-" + jsonText(m["max"])
	}
	if len(m) == 2 && m["name"] != nil && m["timeout"] != nil {
		return jsonText(m["name"]) + "=" + jsonText(m["timeout"])
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		if s := jsonText(m[k]); s != "" {
			parts = append(parts, k+"="+s)
		}
	}
	return strings.Join(parts, ",")
}
