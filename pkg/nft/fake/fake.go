package fake

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/calico-host/calico-host/pkg/nft"
)

// Backend is the fake. It is safe for concurrent use.
type Backend struct {
	mu      sync.Mutex
	tables  map[nft.TableID]*table
	refuse  func(op *nft.Op) error
	commits int
	last    *nft.Batch
	gen     uint32 // the ruleset generation: every commit and tamper changes it
	handles uint64 // the last set handle given
	reads   []nft.ReadOptions
}

// New returns an empty fake: no tables.
func New() *Backend { return &Backend{tables: map[nft.TableID]*table{}, gen: 1} }

// table is one table's content. Objects are replaced, never modified, once
// a commit has kept them (copy on write: see tx).
type table struct {
	chains map[string]*chain
	sets   map[string]*set
	maps   map[string]*vmap
}

type chain struct {
	base  *nft.BaseChain
	rules []nft.Rule
}

type set struct {
	typ      nft.DataType
	interval bool
	elems    map[nft.Element]struct{}
	handle   uint64
}

type vmap struct {
	typ   nft.DataType
	elems map[nft.Key]nft.Verdict
}

func newTable() *table {
	return &table{chains: map[string]*chain{}, sets: map[string]*set{}, maps: map[string]*vmap{}}
}

// Refuse makes every later commit refuse the operations for which fn
// returns an error (the whole batch fails, with that error attributed to
// the operation). nil stops refusing.
func (b *Backend) Refuse(fn func(op *nft.Op) error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refuse = fn
}

// Commits is the number of batches committed.
func (b *Backend) Commits() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.commits
}

// LastBatch is the last batch committed (or refused).
func (b *Backend) LastBatch() *nft.Batch {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.last
}

// Read returns the tables among ids that exist.
func (b *Backend) Read(ctx context.Context, ids []nft.TableID, opts nft.ReadOptions) ([]*nft.Table, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.reads = append(b.reads, opts)
	var out []*nft.Table
	for _, id := range ids {
		t := b.tables[id]
		switch {
		case t == nil:
		case opts.SetsOnly:
			out = append(out, (&table{sets: t.sets}).export(id, func(nft.TableID, string) bool { return true }))
		default:
			out = append(out, t.export(id, opts.SkipElements))
		}
	}
	return out, nil
}

// Generation is the ruleset generation.
func (b *Backend) Generation(ctx context.Context) (uint32, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.gen, nil
}

// ElementsRead lists, for each Read so far, whether it read the elements
// of set name of table id.
func (b *Backend) ElementsRead(id nft.TableID, name string) []bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]bool, len(b.reads))
	for i, o := range b.reads {
		out[i] = o.SkipElements == nil || !o.SkipElements(id, name)
	}
	return out
}

// export builds the typed table (objects copied), without the elements of
// the sets skip names.
func (t *table) export(id nft.TableID, skip func(nft.TableID, string) bool) *nft.Table {
	out := nft.NewTable(id.Family, id.Name)
	for name, c := range t.chains {
		out.InsertChain(&nft.Chain{Name: name, Base: c.base, Rules: slices.Clone(c.rules)})
	}
	for name, s := range t.sets {
		if skip != nil && skip(id, name) {
			out.InsertSet(&nft.Set{Name: name, Type: s.typ, Interval: s.interval, Handle: s.handle, Unread: true})
			continue
		}
		elems := slices.Collect(maps.Keys(s.elems))
		slices.SortFunc(elems, compareElems)
		out.InsertSet(&nft.Set{Name: name, Type: s.typ, Interval: s.interval, Elements: elems, Handle: s.handle})
	}
	for name, m := range t.maps {
		out.InsertMap(&nft.Map{Name: name, Type: m.typ, Elements: maps.Clone(m.elems)})
	}
	return out
}

func compareElems(a, b nft.Element) int {
	alo, ahi := a.Bounds()
	blo, bhi := b.Bounds()
	if c := slices.Compare(alo.Bytes(), blo.Bytes()); c != 0 {
		return c
	}
	return slices.Compare(ahi.Bytes(), bhi.Bytes())
}

// Dump renders every table as nft.Dump does.
func (b *Backend) Dump() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var tables []*nft.Table
	for id, t := range b.tables {
		tables = append(tables, t.export(id, nil))
	}
	return nft.Dump(tables...)
}

// Tables lists the tables that exist.
func (b *Backend) Tables() []nft.TableID {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.SortedFunc(maps.Keys(b.tables), func(x, y nft.TableID) int {
		return cmp.Or(cmp.Compare(x.Family, y.Family), strings.Compare(x.Name, y.Name))
	})
}

// Tamper changes the fake behind the Applier's back, as an administrator
// running nft would (drift): fn gets the table's current content and
// returns what it should hold, nil to delete it. The changes are not
// checked.
func (b *Backend) Tamper(id nft.TableID, fn func(t *nft.Table) *nft.Table) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var cur *nft.Table
	if t := b.tables[id]; t != nil {
		cur = t.export(id, nil)
	}
	b.gen++
	next := fn(cur)
	if next == nil {
		delete(b.tables, id)
		return
	}
	b.tables[id] = importTable(next, b.nextHandle)
}

// nextHandle gives a new set handle.
func (b *Backend) nextHandle() uint64 {
	b.handles++
	return b.handles
}

// importTable stores a typed table as fake state (a set keeps its handle,
// or gets a new one).
func importTable(t *nft.Table, handle func() uint64) *table {
	out := newTable()
	for _, name := range t.ChainNames() {
		c := t.Chain(name)
		out.chains[name] = &chain{base: c.Base, rules: slices.Clone(c.Rules)}
	}
	for _, name := range t.SetNames() {
		s := t.Set(name)
		st := &set{typ: s.Type, interval: s.Interval, elems: map[nft.Element]struct{}{}, handle: s.Handle}
		if st.handle == 0 {
			st.handle = handle()
		}
		for _, e := range s.Elements {
			st.elems[e] = struct{}{}
		}
		out.sets[name] = st
	}
	for _, name := range t.MapNames() {
		m := t.Map(name)
		out.maps[name] = &vmap{typ: m.Type, elems: maps.Clone(m.Elements)}
	}
	return out
}

// Commit applies the batch atomically.
func (b *Backend) Commit(ctx context.Context, batch *nft.Batch) (nft.CommitInfo, error) {
	if err := ctx.Err(); err != nil {
		return nft.CommitInfo{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.last = batch
	if errs := encodeErrors(batch); len(errs) > 0 {
		return nft.CommitInfo{}, &nft.CommitError{Objects: errs} // as the kernel backend's encoder
	}
	tx := newTx(b.tables, b.refuse, b.nextHandle)
	for i := range batch.Ops {
		tx.apply(&batch.Ops[i])
	}
	if len(tx.errs) > 0 {
		return nft.CommitInfo{}, &nft.CommitError{Objects: tx.errs, Kernel: true}
	}
	b.tables = tx.tables
	b.commits++
	b.gen++
	return nft.CommitInfo{Generation: b.gen}, nil
}

// encodeErrors lists the rules that cannot be encoded, which the kernel
// backend refuses before sending anything.
func encodeErrors(batch *nft.Batch) []nft.ObjectError {
	var out []nft.ObjectError
	for i := range batch.Ops {
		op := &batch.Ops[i]
		if op.Kind != nft.OpAddRule {
			continue
		}
		if _, err := nft.LowerRule(op.Table.Family, *op.Rule); err != nil {
			out = append(out, nft.ObjectError{Object: op.Object(), Op: op.Kind, Err: err})
		}
	}
	return out
}
