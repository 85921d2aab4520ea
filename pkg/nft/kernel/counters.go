package kernel

import (
	"context"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/internal/nla"
	"github.com/calico-host/calico-host/pkg/nft/vm"
)

// Counts are what a counter counted.
type Counts struct{ Packets, Bytes uint64 }

// LogGroupCounters dumps the rules of table id and sums, by log prefix, the counters of the
// rules that log to an NFLOG group and count (nft.LogGroup then nft.Counter): the rules that
// flow logs attribute. Only the rules' instructions are decoded, not the typed model, so a big
// ruleset costs one dump. A missing table counts nothing.
func (k *Backend) LogGroupCounters(ctx context.Context, id nft.TableID) (map[string]Counts, error) {
	conn, err := k.dial()
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	dl, ok := ctx.Deadline()
	if err := conn.SetDeadline(k.deadline(dl, ok)); err != nil {
		return nil, err
	}
	r := &reader{conn: conn}
	out := map[string]Counts{}
	err = r.dump(unix.NFT_MSG_GETRULE, id.Family, func(b *nla.Builder) {
		b.String(unix.NFTA_RULE_TABLE, id.Name)
	}, func(b []byte) error {
		if prefix, c, ok := logGroupCount(b, id.Name); ok {
			sum := out[prefix]
			out[prefix] = Counts{Packets: sum.Packets + c.Packets, Bytes: sum.Bytes + c.Bytes}
		}
		return nil
	})
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ENOENT) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the counters of table %s: %w", id, err)
	}
	return out, nil
}

// logGroupCount finds, in one rule message of table, a log to an NFLOG group followed by a
// counter.
func logGroupCount(b []byte, table string) (string, Counts, bool) {
	var exprs []vm.Expr
	for it := nla.NewIter(b); it.Next(); {
		switch it.Type() {
		case unix.NFTA_RULE_TABLE:
			if it.String() != table {
				return "", Counts{}, false
			}
		case unix.NFTA_RULE_EXPRESSIONS:
			exprs, _ = vm.Unmarshal(it.Data())
		}
	}
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
