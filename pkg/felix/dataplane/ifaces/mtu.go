package ifaces

import (
	"context"
	"fmt"
	"regexp"
)

// FallbackMTU is the host MTU when no interface matches (the smallest among common clouds).
const FallbackMTU = 1460

// HostMTU is the smallest MTU of the up interfaces whose name matches pattern (felix's
// MTUIfacePattern), or FallbackMTU when none does. On a listing error it returns FallbackMTU and
// the error.
func HostMTU(ctx context.Context, h Handle, pattern *regexp.Regexp) (int, error) {
	states, err := h.ListInterfaces(ctx)
	if err != nil {
		return FallbackMTU, fmt.Errorf("finding the host MTU: %w", err)
	}
	smallest := 0
	for _, s := range states {
		if !s.Up || s.MTU <= 0 || !pattern.MatchString(s.Name) {
			continue
		}
		if smallest == 0 || s.MTU < smallest {
			smallest = s.MTU
		}
	}
	if smallest == 0 {
		return FallbackMTU, nil
	}
	return smallest, nil
}
