package fake

import (
	"fmt"
	"maps"
	"slices"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/calico-host/calico-host/pkg/nft"
)

// tx applies one batch to copies of the tables: the tables map and each
// table's object maps are copied on first write, and each object too.
type tx struct {
	tables   map[nft.TableID]*table
	copied   map[any]bool // tables and objects this tx owns
	refuse   func(op *nft.Op) error
	handle   func() uint64 // a new set handle
	errs     []nft.ObjectError
	validErr error // the table failed validation: later rules fail too (kernel replay)
}

func newTx(tables map[nft.TableID]*table, refuse func(*nft.Op) error, handle func() uint64) *tx {
	return &tx{tables: maps.Clone(tables), copied: map[any]bool{}, refuse: refuse, handle: handle}
}

func (t *tx) fail(op *nft.Op, err error, format string, args ...any) {
	t.errs = append(t.errs, nft.ObjectError{Object: op.Object(), Op: op.Kind, Err: err, Detail: fmt.Sprintf(format, args...)})
}

// table returns a writable copy of table id, or nil.
func (t *tx) table(id nft.TableID) *table {
	tb := t.tables[id]
	if tb == nil || t.copied[tb] {
		return tb
	}
	c := &table{chains: maps.Clone(tb.chains), sets: maps.Clone(tb.sets), maps: maps.Clone(tb.maps)}
	t.copied[c] = true
	t.tables[id] = c
	return c
}

func (t *tx) chain(tb *table, name string) *chain {
	c := tb.chains[name]
	if c == nil || t.copied[c] {
		return c
	}
	c = &chain{base: c.base, rules: slices.Clone(c.rules)}
	t.copied[c] = true
	tb.chains[name] = c
	return c
}

func (t *tx) set(tb *table, name string) *set {
	s := tb.sets[name]
	if s == nil || t.copied[s] {
		return s
	}
	s = &set{typ: s.typ, interval: s.interval, elems: maps.Clone(s.elems), handle: s.handle}
	t.copied[s] = true
	tb.sets[name] = s
	return s
}

func (t *tx) vmap(tb *table, name string) *vmap {
	m := tb.maps[name]
	if m == nil || t.copied[m] {
		return m
	}
	m = &vmap{typ: m.typ, elems: maps.Clone(m.elems)}
	t.copied[m] = true
	tb.maps[name] = m
	return m
}

// apply applies one operation, recording its failure.
func (t *tx) apply(op *nft.Op) {
	if t.refuse != nil {
		if err := t.refuse(op); err != nil {
			t.fail(op, err, "refused by the test")
			return
		}
	}
	if !nameOK(op) {
		t.fail(op, unix.ERANGE, "name longer than %d bytes", nft.MaxNameLen)
		return
	}
	if op.Kind == nft.OpAddTable || op.Kind == nft.OpDeleteTable {
		t.tableOp(op)
		return
	}
	tb := t.table(op.Table)
	if tb == nil {
		t.fail(op, unix.ENOENT, "no table %s", op.Table)
		return
	}
	switch op.Kind {
	case nft.OpAddChain, nft.OpFlushChain, nft.OpDeleteChain:
		t.chainOp(tb, op)
	case nft.OpAddRule:
		t.addRule(tb, op)
	case nft.OpAddSet, nft.OpDeleteSet, nft.OpAddMap, nft.OpDeleteMap:
		t.setOp(tb, op)
	case nft.OpAddElements, nft.OpDeleteElements, nft.OpFlushSet:
		t.elementOp(tb, op)
	case nft.OpAddMapElements, nft.OpDeleteMapElements:
		t.mapElementOp(tb, op)
	default:
		t.fail(op, unix.EINVAL, "unknown operation")
	}
}

// nameOK applies the kernel's length limit on names (NFT_NAME_MAXLEN).
func nameOK(op *nft.Op) bool {
	return len(op.Table.Name) <= nft.MaxNameLen && len(op.Name) <= nft.MaxNameLen
}

func (t *tx) tableOp(op *nft.Op) {
	_, exists := t.tables[op.Table]
	switch {
	case op.Kind == nft.OpAddTable && !op.Table.Family.Valid():
		t.fail(op, unix.EAFNOSUPPORT, "family %d", op.Table.Family)
	case op.Kind == nft.OpAddTable && !exists:
		tb := newTable()
		t.copied[tb] = true
		t.tables[op.Table] = tb
	case op.Kind == nft.OpDeleteTable && !exists:
		t.fail(op, unix.ENOENT, "no table")
	case op.Kind == nft.OpDeleteTable:
		delete(t.tables, op.Table)
	}
}

func (t *tx) chainOp(tb *table, op *nft.Op) {
	c := tb.chains[op.Name]
	switch {
	case op.Kind == nft.OpAddChain && c == nil:
		if op.Base != nil {
			if _, ok := nft.HookNumber(op.Table.Family, op.Base.Hook); !ok {
				t.fail(op, unix.EOPNOTSUPP, "hook %s", op.Base.Hook)
				return
			}
		}
		nc := &chain{base: op.Base}
		t.copied[nc] = true
		tb.chains[op.Name] = nc
	case op.Kind == nft.OpAddChain && !nft.SameHook(c.base, op.Base):
		t.fail(op, unix.EOPNOTSUPP, "chain exists with another hook")
	case op.Kind == nft.OpAddChain:
		if op.Base != nil {
			t.chain(tb, op.Name).base = op.Base // policy update
		}
	case c == nil:
		t.fail(op, unix.ENOENT, "no chain %s", op.Name)
	case op.Kind == nft.OpFlushChain:
		t.chain(tb, op.Name).rules = nil
	case chainInUse(tb, op.Name):
		t.fail(op, unix.EBUSY, "chain is a jump target")
	default:
		delete(tb.chains, op.Name) // with its rules, as the kernel does
	}
}

func (t *tx) addRule(tb *table, op *nft.Op) {
	if tb.chains[op.Name] == nil {
		t.fail(op, unix.ENOENT, "no chain %s", op.Name)
		return
	}
	canon, err := nft.Canonical(op.Table.Family, *op.Rule)
	if err != nil {
		t.fail(op, unix.EINVAL, "%v", err)
		return
	}
	for _, rf := range op.Rule.Refs() {
		if errno, msg := checkRef(tb, rf); errno != 0 {
			t.fail(op, errno, "%s", msg)
			return
		}
	}
	c := t.chain(tb, op.Name)
	c.rules = append(c.rules, canon)
	t.validate(tb, op, hasJumps(op.Rule.Refs()))
}

// validate mimics the kernel's table validation: a jump loop refuses the
// operation that made it, and every rule or element added after it, with
// EMLINK (the kernel finds loops as chains nested too deep).
func (t *tx) validate(tb *table, op *nft.Op, jumps bool) {
	if t.validErr == nil && jumps && hasLoop(tb) {
		t.validErr = unix.EMLINK
	}
	if t.validErr != nil {
		t.fail(op, t.validErr, "table validation")
	}
}

func hasJumps(refs []nft.Ref) bool {
	return slices.ContainsFunc(refs, func(rf nft.Ref) bool { return rf.Kind == nft.RefChain || rf.Kind == nft.RefMap })
}

// checkRef checks a rule's reference as the kernel does. (The kernel does
// not compare a lookup's key with the set's type; the Applier does.)
func checkRef(tb *table, rf nft.Ref) (syscall.Errno, string) {
	switch rf.Kind {
	case nft.RefChain:
		c := tb.chains[rf.Name]
		if c == nil {
			return unix.ENOENT, "no chain " + rf.Name
		}
		if c.base != nil {
			return unix.EOPNOTSUPP, "jump to base chain " + rf.Name
		}
	case nft.RefSet:
		if tb.sets[rf.Name] == nil && tb.maps[rf.Name] == nil {
			return unix.ENOENT, "no set " + rf.Name
		}
	case nft.RefMap:
		switch {
		case tb.maps[rf.Name] == nil && tb.sets[rf.Name] != nil:
			return unix.EINVAL, rf.Name + " is not a map"
		case tb.maps[rf.Name] == nil:
			return unix.ENOENT, "no map " + rf.Name
		}
	}
	return 0, ""
}
