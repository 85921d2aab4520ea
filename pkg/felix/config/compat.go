package config

import (
	"reflect"
	"strings"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/compat"
)

// Project Calico's felix parameters that calico-host does not implement are on compat's list
// (pkg/compat/notimplemented.toml), with their FelixConfiguration field, type and default. They
// are accepted from every source (FELIX_<NAME>, felix.toml, FelixConfiguration) and, when the
// highest-precedence value is one calico-host does not implement, reported in
// Config.NotImplemented rather than ignored silently.

// IsCompat reports whether name is one of those parameters (case-insensitively).
func IsCompat(name string) bool {
	_, ok := compat.FelixParam(name)
	return ok
}

// compatValues adds to a datastore layer the list's parameters that the specs set (the first
// spec's fields win, field by field), as felix text keyed by "spec.<field>". A spec that does
// not marshal is skipped: its typed parameters are still applied.
func compatValues(l *Layer, srcs []namedSpec) {
	for _, src := range srcs {
		if src.spec == nil {
			continue
		}
		values, fields, err := compat.FelixSpecValues(src.spec)
		if err != nil {
			continue
		}
		for name, v := range values {
			if _, set := l.Values[name]; set {
				continue
			}
			l.Values[name], l.Keys[name], l.Origins[name] = v, "spec."+fields[name], "FelixConfiguration "+src.name
		}
	}
}

// notImplemented records the value of a parameter on compat's list from the highest layer that
// sets it, as a finding when calico-host does not implement that value.
func (r *resolver) notImplemented(s *compat.Setting, l Layer, name, raw, origin string) {
	if r.compatSet[s.Name] || strings.TrimSpace(raw) == "" {
		return
	}
	r.compatSet[s.Name] = true
	if s.Implemented(raw) {
		return
	}
	key := l.Keys[name]
	if key == "" {
		key = name
	}
	r.c.NotImplemented = append(r.c.NotImplemented, compat.Finding{Object: origin, Field: key, Value: raw, Setting: s})
}

// specFields indexes the FelixConfigurationSpec fields by JSON name.
var specFields = func() map[string]int {
	st := reflect.TypeFor[api.FelixConfigurationSpec]()
	m := map[string]int{}
	for i := 0; i < st.NumField(); i++ {
		tag, _, _ := strings.Cut(st.Field(i).Tag.Get("json"), ",")
		if tag != "" && tag != "-" {
			m[tag] = i
		}
	}
	return m
}()
