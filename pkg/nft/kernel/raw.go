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

// RawRule is a rule as the kernel lists it, without the typed model: where it is, its handle
// (what trace events name it by) and its instructions, with their counters.
type RawRule struct {
	Table, Chain string
	Handle       uint64
	Exprs        []vm.Expr
	Err          error // why the instructions could not be decoded (Exprs has what could)
}

// RawRules dumps the rules of table id, or of every table of id.Family when id.Name is empty,
// and calls fn with each, in each chain's order, as they arrive: a big ruleset costs one dump
// and is never held whole. A missing table has no rules.
func (k *Backend) RawRules(ctx context.Context, id nft.TableID, fn func(RawRule)) error {
	r, err := k.openReader(ctx)
	if err != nil {
		return err
	}
	defer r.close()
	err = r.ruleDump(id, func(b []byte) error {
		if rule := decodeRawRule(b); id.Name == "" || rule.Table == id.Name {
			fn(rule)
		}
		return nil
	})
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("listing the rules of %s: %w", id, err)
	}
	return nil
}

// ruleDump dumps the rules of table id (of every table of id.Family when id.Name is empty) and
// calls fn with each rule's attributes: the one rule dump of Read and RawRules.
func (r *reader) ruleDump(id nft.TableID, fn func(attrs []byte) error) error {
	return r.dump(unix.NFT_MSG_GETRULE, id.Family, func(b *nla.Builder) {
		if id.Name != "" {
			b.String(unix.NFTA_RULE_TABLE, id.Name)
		}
	}, fn)
}

func decodeRawRule(b []byte) RawRule {
	var r RawRule
	for it := nla.NewIter(b); it.Next(); {
		switch it.Type() {
		case unix.NFTA_RULE_TABLE:
			r.Table = it.String()
		case unix.NFTA_RULE_CHAIN:
			r.Chain = it.String()
		case unix.NFTA_RULE_HANDLE:
			r.Handle = it.U64()
		case unix.NFTA_RULE_EXPRESSIONS:
			r.Exprs, r.Err = vm.Unmarshal(it.Data())
		}
	}
	return r
}
