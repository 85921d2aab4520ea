package config

import (
	"slices"
	"testing"

	"github.com/calico-host/calico-host/pkg/api"
)

// TestWireguardTablesFromRanges: WireGuard's tables are the two lowest indices of the
// configured ranges, as Project Calico's index allocator hands them out (RouteTableRanges over
// the deprecated RouteTableRange, 253-255 skipped, overlaps once).
func TestWireguardTablesFromRanges(t *testing.T) {
	for _, tc := range []struct {
		name           string
		ranges, single string
		v4, v6         int
	}{
		{"default", "", "", 1, 2},
		{"empty is unset", " ", "", 1, 2},
		{"ranges", "100-110,20-21", "", 20, 21},
		{"space separated", "300-400 1000-1001", "", 300, 301},
		{"reserved skipped", "252-260", "", 252, 256},
		{"deprecated", "", "42-50", 42, 43},
		{"ranges win", "7-9", "42-50", 7, 8},
		{"one table", "5-5", "", 5, -1},
		{"large index", "4294967294-4294967295", "", 4294967294, 4294967295},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{}
			if tc.ranges != "" { // " ": set, and empty once trimmed
				env["RouteTableRanges"] = tc.ranges
			}
			if tc.single != "" {
				env["RouteTableRange"] = tc.single
			}
			c := resolveWith(t, env)
			if v4, v6 := c.WireguardTables(); v4 != tc.v4 || v6 != tc.v6 {
				t.Errorf("tables %d, %d; want %d, %d", v4, v6, tc.v4, tc.v6)
			}
		})
	}
}

func resolveWith(t *testing.T, values map[string]string) *Config {
	t.Helper()
	var environ []string
	for k, v := range values {
		environ = append(environ, "FELIX_"+upper(k)+"="+v)
	}
	local := &Local{Env: EnvLayer(environ), File: Layer{Source: SourceFile, Values: map[string]string{}}, OSHostname: "host-x"}
	c, problems := local.Resolve(nil)
	for _, p := range problems {
		t.Errorf("problem: %+v", p)
	}
	return c
}

// TestTableRangesRefused: values Project Calico's parser refuses are refused here.
func TestTableRangesRefused(t *testing.T) {
	ranges, _ := Lookup("RouteTableRanges")
	single, _ := Lookup("RouteTableRange")
	for _, tc := range []struct {
		p   *Param
		raw string
	}{
		{ranges, "none"}, {ranges, "0-10"}, {ranges, "10-5"}, {ranges, "1-4294967296"}, {ranges, "1-70000"},
		{single, "1-251"}, {single, "1-10,20-30"}, {single, "0-3"}, {single, "x"},
	} {
		if v, err := tc.p.Parse(tc.raw); err == nil {
			t.Errorf("%s %q parsed as %v, want an error", tc.p.Name, tc.raw, v)
		}
	}
	got, err := ranges.Convert(api.RouteTableRanges{{Min: 1, Max: 10}, {Min: 300, Max: 301}})
	if err != nil || !slices.Equal(got.([]TableRange), []TableRange{{1, 10}, {300, 301}}) {
		t.Errorf("Convert(routeTableRanges) = %v, %v", got, err)
	}
	if _, err := single.Convert(api.RouteTableRange{Min: 1, Max: 251}); err == nil {
		t.Error("routeTableRange 1-251 converted, want an error")
	}
}
