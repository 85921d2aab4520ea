package config

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"

	"github.com/calico-host/calico-host/pkg/api"
)

// TableRange is a range of routing table indices felix may use (RouteTableRange(s)).
type TableRange struct{ Min, Max int }

// Project Calico's bounds: RouteTableRanges may name tables up to 2^32-1 but at most 0xffff of
// them in all; the deprecated RouteTableRange stays within 1-250. Tables 253-255 are the
// kernel's (default, main, local) and are never allocated.
const (
	maxTableIndex       = 1<<32 - 1
	maxTablesInRanges   = 0xffff
	maxDeprecatedTable  = 250
	defaultTableRangeLo = 1
	defaultTableRangeHi = 250
)

var (
	tableRangeRE  = regexp.MustCompile(`(\d+)-(\d+)`)
	singleRangeRE = regexp.MustCompile(`^\d+-\d+$`)
)

// parseTableRanges parses RouteTableRanges text (every `n-m` in it, as Project Calico reads it;
// comma- or space-separated) or, for RouteTableRange (p.Max = 250), exactly one `n-m`. Empty
// text is unset.
func (p *Param) parseTableRanges(raw string) ([]TableRange, error) {
	if raw == "" {
		return nil, nil // unset, as the commented default in felix.toml shows it
	}
	if p.Max == maxDeprecatedTable && !singleRangeRE.MatchString(raw) {
		return nil, fmt.Errorf("%q is not a range n-m of route table indices within 1-250", raw)
	}
	matches := tableRangeRE.FindAllStringSubmatch(raw, -1)
	if matches == nil {
		return nil, fmt.Errorf("%q is not a list of route table ranges n-m", raw)
	}
	out := make([]TableRange, 0, len(matches))
	for _, m := range matches {
		lo, err1 := strconv.ParseInt(m[1], 10, 64)
		hi, err2 := strconv.ParseInt(m[2], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%q: %s-%s is out of range", raw, m[1], m[2])
		}
		out = append(out, TableRange{Min: int(lo), Max: int(hi)})
	}
	return out, p.checkTableRanges(out)
}

// checkTableRanges applies Project Calico's limits to parsed or datastore ranges.
func (p *Param) checkTableRanges(rs []TableRange) error {
	total := 0
	for _, r := range rs {
		switch {
		case r.Min < 1 || r.Min > r.Max:
			return fmt.Errorf("route table range %d-%d: min must be at least 1 and not above max", r.Min, r.Max)
		case r.Max > p.Max:
			return fmt.Errorf("route table range %d-%d: max is above %d", r.Min, r.Max, p.Max)
		}
		if total += r.Max - r.Min + 1; total > maxTablesInRanges {
			return fmt.Errorf("route table ranges name more than %d tables", maxTablesInRanges)
		}
	}
	return nil
}

// convertTableRanges converts a FelixConfiguration routeTableRange or routeTableRanges value.
func (p *Param) convertTableRanges(v any) ([]TableRange, error) {
	var out []TableRange
	switch x := v.(type) {
	case api.RouteTableRange:
		out = []TableRange{{Min: x.Min, Max: x.Max}}
	case api.RouteTableRanges:
		for _, r := range x {
			out = append(out, TableRange{Min: r.Min, Max: r.Max})
		}
	default:
		return nil, fmt.Errorf("%w: a %T for a %s parameter", errWrongType, v, p.Kind)
	}
	if len(out) == 0 {
		return nil, errors.New("no route table ranges")
	}
	return out, p.checkTableRanges(out)
}

// firstTables lists the n lowest routing table indices felix may use, as Project Calico
// allocates them: RouteTableRanges when set, else the deprecated RouteTableRange, else 1-250;
// overlapping ranges count once and the kernel's tables 253-255 are left out. Fewer when the
// ranges hold fewer.
func (c *Config) firstTables(n int) []int {
	ranges := c.RouteTableRanges
	if len(ranges) == 0 {
		ranges = c.RouteTableRange
	}
	if len(ranges) == 0 {
		ranges = []TableRange{{defaultTableRangeLo, defaultTableRangeHi}}
	}
	var out []int
	for _, r := range ranges {
		// at most n indices from each range: the lowest n overall are among them
		for i, taken := r.Min, 0; i <= r.Max && i <= maxTableIndex && taken < n; i++ {
			if i < 253 || i > 255 {
				out, taken = append(out, i), taken+1
			}
		}
	}
	slices.Sort(out)
	out = slices.Compact(out)
	return out[:min(n, len(out))]
}

// WireguardTables are the tables of IPv4 and IPv6 WireGuard: the first two indices felix
// allocates (Project Calico allocates them whether or not WireGuard is on, so the tables can be
// cleaned up after it is turned off). -1, which the dataplane refuses, when the ranges hold too
// few tables, so that WireGuard fails closed instead of using a table outside them.
func (c *Config) WireguardTables() (v4, v6 int) {
	t := append(c.firstTables(2), -1, -1)
	return t[0], t[1]
}
