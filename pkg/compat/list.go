package compat

import (
	_ "embed"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/BurntSushi/toml"
)

// Kinds of settings, the sections of the list.
const (
	// Felix settings are felix's parameters: FELIX_<NAME>, felix.toml keys and, for most, a
	// FelixConfiguration field.
	Felix              = "Felix"
	FelixConfiguration = "FelixConfiguration" // its fields that are not felix parameters
	BGPConfiguration   = "BGPConfiguration"
	BGPPeer            = "BGPPeer"
	Node               = "Node"
	IPPool             = "IPPool"
	NetConf            = "NetConf" // the CNI network configuration of the calico plugins
)

// Kinds lists the kinds in the order of the list.
var Kinds = []string{Felix, FelixConfiguration, BGPConfiguration, BGPPeer, Node, IPPool, NetConf}

// Setting is one entry of the list.
type Setting struct {
	Kind string
	// Name is the felix parameter (Felix) or the field's JSON path ("spec.keepaliveTime",
	// "feature_control.floating_ips").
	Name string
	// Field is a felix parameter's FelixConfiguration JSON field ("" when it has none).
	Field string
	Type  Type
	// OK are the values calico-host handles as Project Calico does, Project Calico's default
	// first; empty: only leaving it unset. AnyOK: every value (the setting has no effect in
	// Project Calico's Linux components either).
	OK    []string
	AnyOK bool
	// Report, when set, are the only values reported.
	Report []string
	// Reason is the key of Why in the list's reasons.
	Reason string
	Why    string
}

// Implemented reports whether calico-host handles the value as Project Calico does. Blank values
// are unset.
func (s *Setting) Implemented(value string) bool {
	switch {
	case strings.TrimSpace(value) == "" || s.AnyOK:
		return true
	case s.Report != nil:
		return !s.Type.oneOf(value, s.Report)
	}
	return s.Type.oneOf(value, s.OK)
}

//go:embed notimplemented.toml
var listText string

// entry is one entry of notimplemented.toml: its sections are lists of entries, and the table
// [reasons] maps reason keys to their text.
type entry struct {
	Param  string   `toml:"param"`
	Field  string   `toml:"field"`
	Type   string   `toml:"type"`
	OK     []string `toml:"ok"`
	Report []string `toml:"report"`
	Why    string   `toml:"why"`
}

// list is the parsed list, by kind in file order, each kind parsed on first use (see parts.go).
var list = newKindCache(listText)

func parseList(text string) (map[string][]*Setting, error) {
	var raw map[string]toml.Primitive
	md, err := toml.Decode(text, &raw)
	if err != nil {
		return nil, err
	}
	var reasons map[string]string
	if err := md.PrimitiveDecode(raw["reasons"], &reasons); err != nil {
		return nil, fmt.Errorf("reasons: %w", err)
	}
	out := map[string][]*Setting{}
	for name := range raw {
		if name == "reasons" {
			continue
		}
		kind := name
		if name == "felix" {
			kind = Felix
		}
		if !slices.Contains(Kinds, kind) {
			return nil, fmt.Errorf("unknown section %q", name)
		}
		var entries []entry
		if err := md.PrimitiveDecode(raw[name], &entries); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		for _, e := range entries {
			s, err := e.setting(kind, reasons)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			out[kind] = append(out[kind], s)
		}
	}
	if und := md.Undecoded(); len(und) > 0 {
		return nil, fmt.Errorf("unknown key %s", und[0])
	}
	return out, nil
}

func (e entry) setting(kind string, reasons map[string]string) (*Setting, error) {
	s := &Setting{Kind: kind, Name: e.Field, Type: Type(e.Type), OK: e.OK, Report: e.Report, Reason: e.Why, Why: reasons[e.Why]}
	if kind == Felix {
		s.Name, s.Field = e.Param, e.Field
	}
	switch {
	case s.Name == "":
		return nil, fmt.Errorf("an entry without a name")
	case !s.Type.valid():
		return nil, fmt.Errorf("%s: unknown type %q", s.Name, e.Type)
	case s.Why == "":
		return nil, fmt.Errorf("%s: unknown reason %q", s.Name, e.Why)
	}
	if len(s.OK) == 1 && s.OK[0] == "*" {
		s.OK, s.AnyOK = nil, true
	}
	for _, v := range slices.Concat(s.OK, s.Report) {
		if _, ok := s.Type.normal(v); !ok {
			return nil, fmt.Errorf("%s: value %q is not a %s", s.Name, v, s.Type)
		}
	}
	return s, nil
}

// Settings returns the list's settings of a kind, in the list's order.
func Settings(kind string) []*Setting { return list.get(kind) }

// FelixParam finds a felix parameter on the list by name, case-insensitively.
func FelixParam(name string) (*Setting, bool) {
	s, ok := felixByName()[strings.ToLower(name)]
	return s, ok
}

var felixByName = sync.OnceValue(func() map[string]*Setting {
	m := map[string]*Setting{}
	for _, s := range list.get(Felix) {
		m[strings.ToLower(s.Name)] = s
	}
	return m
})
