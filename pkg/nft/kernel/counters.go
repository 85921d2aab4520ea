package kernel

import (
	"context"
	"fmt"

	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/vm"
)

// Counts are what a counter counted.
type Counts struct{ Packets, Bytes uint64 }

// LogGroupCounters sums, by log prefix, the counters of the rules of table id that log to an
// NFLOG group and count (nft.LogGroup then nft.Counter): the rules that flow logs attribute.
// It reads the rules' instructions only (RawRules), not the typed model. A missing table
// counts nothing.
func (k *Backend) LogGroupCounters(ctx context.Context, id nft.TableID) (map[string]Counts, error) {
	out := map[string]Counts{}
	err := k.RawRules(ctx, id, func(r RawRule) {
		if prefix, c, ok := logGroupCount(r.Exprs); ok {
			sum := out[prefix]
			out[prefix] = Counts{Packets: sum.Packets + c.Packets, Bytes: sum.Bytes + c.Bytes}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("reading the counters: %w", err)
	}
	return out, nil
}

// logGroupCount finds, in one rule's instructions, a log to an NFLOG group followed by a
// counter.
func logGroupCount(exprs []vm.Expr) (string, Counts, bool) {
	prefix, found := "", false
	for _, x := range exprs {
		switch x := x.(type) {
		case vm.Log:
			prefix, found = x.Prefix, x.Has&vm.LogGroup != 0 && x.Prefix != ""
		case vm.Counter:
			if found {
				return prefix, Counts{Packets: x.Packets, Bytes: x.Bytes}, true
			}
		}
	}
	return "", Counts{}, false
}
