package config

import "testing"

// TestDefaultsAreProjectCalicos: every parameter's default is Project Calico's (from compat's
// snapshot of its source): its default text, parsed by the table, is the value felix starts with.
func TestDefaultsAreProjectCalicos(t *testing.T) {
	defaults := Defaults()
	for _, cp := range calicoParams(t) {
		p, ok := Lookup(cp.name)
		if !ok {
			continue
		}
		if cp.field != p.V3Field() && !p.LocalOnly {
			t.Errorf("%s: FelixConfiguration field %q, Project Calico's %q", p.Name, p.V3Field(), cp.field)
		}
		if cp.def == "" {
			continue
		}
		v, err := p.Parse(cp.def)
		if err != nil {
			t.Errorf("%s: Project Calico's default %q does not parse: %v", p.Name, cp.def, err)
			continue
		}
		if !sameValue(v, defaults.Value(p.Name)) {
			t.Errorf("%s: default %v, Project Calico's %q is %v", p.Name, defaults.Value(p.Name), cp.def, v)
		}
	}
}
