package compat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/rs/zerolog"
)

// Finding is a setting set to a value calico-host does not implement.
type Finding struct {
	// Object names where it was set: "FelixConfiguration default", "BGPPeer rr-1", "environment",
	// "/etc/calico/felix.toml", "CNI network configuration k8s-pod-network".
	Object string
	// Field is how the setting is spelled there: a JSON path ("spec.keepaliveTime"), an
	// environment variable ("FELIX_BPFENABLED") or a file key.
	Field string
	Value string
	// Setting is the list's entry.
	Setting *Setting
}

// maxValue bounds the value shown in messages.
const maxValue = 200

func (f Finding) String() string {
	return fmt.Sprintf("%s: %s is set to %q, which calico-host does not implement (%s); it has no effect",
		f.Object, f.Field, shorten(f.Value), f.Setting.Why)
}

// Log logs the finding: a warning naming the object, field, value and reason.
func (f Finding) Log(log zerolog.Logger) {
	log.Warn().Str("object", f.Object).Str("field", f.Field).Str("value", shorten(f.Value)).
		Str("reason", f.Setting.Why).Msg("Setting not implemented by calico-host; it has no effect")
}

func shorten(s string) string {
	if len(s) > maxValue {
		return s[:maxValue] + "..."
	}
	return s
}

// Check marshals a datastore object (or anything that marshals like one) and checks it against
// the list of its kind; object names it in the findings. FelixConfiguration objects are checked
// against the felix parameters with a FelixConfiguration field too.
func Check(kind, object string, v any) ([]Finding, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("checking %s for settings that are not implemented: %w", object, err)
	}
	return CheckJSON(kind, object, b)
}

// CheckJSON is Check of a JSON document.
func CheckJSON(kind, object string, doc []byte) ([]Finding, error) {
	root, err := decodeJSON(doc)
	if err != nil {
		return nil, fmt.Errorf("checking %s for settings that are not implemented: %w", object, err)
	}
	if !slices.ContainsFunc(list.checkPaths(kind), func(p string) bool { _, ok := lookup(root, p); return ok }) {
		return nil, nil // sets nothing on the list: no need to parse it
	}
	var out []Finding
	for _, s := range objectSettings(kind) {
		path := s.Name
		if s.Kind == Felix {
			path = "spec." + s.Field
		}
		v, ok := lookup(root, path)
		if !ok {
			continue
		}
		if text := jsonText(v); !s.Implemented(text) {
			out = append(out, Finding{Object: object, Field: path, Value: text, Setting: s})
		}
	}
	return out, nil
}

// objectSettings are the settings of an object kind (with the felix parameters that are
// FelixConfiguration fields for FelixConfiguration).
func objectSettings(kind string) []*Setting {
	if kind != FelixConfiguration {
		return list.get(kind)
	}
	var out []*Setting
	for _, s := range list.get(Felix) {
		if s.Field != "" {
			out = append(out, s)
		}
	}
	return append(out, list.get(FelixConfiguration)...)
}

func decodeJSON(doc []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// lookup follows a dotted path through JSON objects, matching keys case-insensitively as Go's
// JSON decoding does; a key may itself contain dots ("args.org.apache.mesos").
func lookup(v any, path string) (any, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, false
	}
	for k, child := range m {
		switch {
		case strings.EqualFold(k, path):
			return child, child != nil
		case len(path) > len(k) && strings.EqualFold(path[:len(k)], k) && path[len(k)] == '.':
			if found, ok := lookup(child, path[len(k)+1:]); ok {
				return found, true
			}
		}
	}
	return nil, false
}

// FelixSpecValues returns, for each felix parameter on the list whose FelixConfiguration field a
// FelixConfiguration spec sets, its value as felix text and the field, by parameter name.
func FelixSpecValues(spec any) (values, fields map[string]string, err error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, nil, fmt.Errorf("reading a FelixConfiguration spec: %w", err)
	}
	root, err := decodeJSON(b)
	if err != nil {
		return nil, nil, fmt.Errorf("reading a FelixConfiguration spec: %w", err)
	}
	values, fields = map[string]string{}, map[string]string{}
	for _, s := range list.get(Felix) {
		if s.Field == "" {
			continue
		}
		if v, ok := lookup(root, s.Field); ok {
			if text := jsonText(v); strings.TrimSpace(text) != "" {
				values[s.Name], fields[s.Name] = text, s.Field
			}
		}
	}
	return values, fields, nil
}
