package nft

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
)

// Fake is an in-memory Kernel for tests. A Commit applies the transaction
// to a copy of the table and keeps the copy only if every operation
// succeeded, like the kernel. It checks what the kernel checks: references
// to missing chains, sets and maps, deletion of objects still in use,
// jumps to base chains, elements of the wrong type, overlapping intervals.
type Fake struct {
	mu      sync.Mutex
	table   string
	state   *fakeTable // nil: table absent
	handle  uint64
	fail    []error
	commits int
	last    *Transaction
}

// FakeOption configures a Fake.
type FakeOption func(*Fake)

// WithFakeTable names the fake's table (default DefaultTable).
func WithFakeTable(name string) FakeOption { return func(f *Fake) { f.table = name } }

// NewFake returns an empty fake kernel: the table does not exist yet.
func NewFake(opts ...FakeOption) *Fake {
	f := &Fake{table: DefaultTable}
	for _, o := range opts {
		o(f)
	}
	return f
}

// fakeTable is the table content. Objects are shared between successive
// states and copied on first write within a transaction.
type fakeTable struct {
	chains map[string]*fakeChain
	sets   map[string]*fakeSet
	maps   map[string]*fakeMap
	uses   map[ref]int // how many rules and map elements refer to each object
	owned  map[any]bool
}

type fakeChain struct {
	base  *BaseChain
	rules []fakeRule
}

type fakeRule struct {
	rule   Rule
	hash   string
	handle uint64
}

type fakeSet struct {
	typ      *setType
	interval bool
	elems    map[string]element
}

type fakeMap struct {
	typ   *setType
	elems map[string]mapElement
}

func newFakeTable() *fakeTable {
	return &fakeTable{
		chains: map[string]*fakeChain{},
		sets:   map[string]*fakeSet{},
		maps:   map[string]*fakeMap{},
		uses:   map[ref]int{},
	}
}

// fork starts a transaction: a shallow copy whose objects are copied when
// first modified.
func (t *fakeTable) fork() *fakeTable {
	if t == nil {
		return nil
	}
	return &fakeTable{
		chains: maps.Clone(t.chains),
		sets:   maps.Clone(t.sets),
		maps:   maps.Clone(t.maps),
		uses:   maps.Clone(t.uses),
		owned:  map[any]bool{},
	}
}

func (t *fakeTable) chainForWrite(name string) *fakeChain {
	c := t.chains[name]
	if c == nil || t.owned[c] {
		return c
	}
	c = &fakeChain{base: c.base, rules: slices.Clone(c.rules)}
	t.chains[name] = c
	t.owned[c] = true
	return c
}

func (t *fakeTable) setForWrite(name string) *fakeSet {
	s := t.sets[name]
	if s == nil || t.owned[s] {
		return s
	}
	s = &fakeSet{typ: s.typ, interval: s.interval, elems: maps.Clone(s.elems)}
	t.sets[name] = s
	t.owned[s] = true
	return s
}

func (t *fakeTable) mapForWrite(name string) *fakeMap {
	m := t.maps[name]
	if m == nil || t.owned[m] {
		return m
	}
	m = &fakeMap{typ: m.typ, elems: maps.Clone(m.elems)}
	t.maps[name] = m
	t.owned[m] = true
	return m
}

// Commit applies tx atomically.
func (f *Fake) Commit(_ context.Context, tx *Transaction) (CommitInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.commits++
	f.last = tx
	if len(f.fail) > 0 {
		err := f.fail[0]
		f.fail = f.fail[1:]
		return CommitInfo{}, err
	}
	next := f.state.fork()
	handle := f.handle
	for i, op := range tx.Ops {
		var err error
		next, err = f.apply(next, op, &handle)
		if err != nil {
			return CommitInfo{}, fmt.Errorf("op %d (%s): %w", i, op.script("inet "+f.table), err)
		}
	}
	if next != nil {
		next.owned = nil
	}
	f.state, f.handle = next, handle
	return CommitInfo{}, nil
}

// Table is the fake table's name.
func (f *Fake) Table() string { return f.table }

// FailCommits makes the next len(errs) commits fail with these errors,
// without changing anything.
func (f *Fake) FailCommits(errs ...error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = append(f.fail, errs...)
}

// Commits is the number of Commit calls so far.
func (f *Fake) Commits() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.commits
}

// LastTransaction is the transaction of the last Commit call.
func (f *Fake) LastTransaction() *Transaction {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last
}

// Read returns the table's content as the netlink Kernel would.
func (f *Fake) Read(context.Context) (*KernelState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ks := newKernelState()
	if f.state == nil {
		return ks, nil
	}
	ks.TableExists = true
	for name, c := range f.state.chains {
		kc := &KernelChain{Base: c.base}
		for _, r := range c.rules {
			kc.Hashes = append(kc.Hashes, r.hash)
			kc.Handles = append(kc.Handles, r.handle)
		}
		ks.Chains[name] = kc
	}
	for name, s := range f.state.sets {
		ks.Sets[name] = &KernelSet{Type: s.typ.name, Interval: s.interval, Elements: slices.Sorted(maps.Keys(s.elems))}
	}
	for name, m := range f.state.maps {
		km := &KernelMap{KeyType: m.typ.name, Elements: map[string]Verdict{}}
		for k, e := range m.elems {
			km.Elements[k] = e.verdict
		}
		ks.Maps[name] = km
	}
	return ks, nil
}

// Dump prints the table as sorted, deterministic nft text: sets, then maps,
// then chains, each sorted by name, elements sorted. Rule comments are the
// rules' own (without the identity hash). An absent table dumps as "".
func (f *Fake) Dump() string { return f.dump(false) }

// DumpWithHashes is Dump with rule comments as the kernel stores them
// (`cali:<hash>; comment`); its output loads with `nft -f`.
func (f *Fake) DumpWithHashes() string { return f.dump(true) }

func (f *Fake) dump(hashes bool) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.state == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "table inet %s {\n", quoteName(f.table))
	for _, name := range sortedKeys(f.state.sets) {
		s := f.state.sets[name]
		setText(&b, name, s.typ.name, s.interval, slices.Collect(maps.Keys(s.elems)))
	}
	for _, name := range sortedKeys(f.state.maps) {
		m := f.state.maps[name]
		elems := map[string]Verdict{}
		for k, e := range m.elems {
			elems[k] = e.verdict
		}
		mapText(&b, name, m.typ.name, elems)
	}
	for _, name := range sortedKeys(f.state.chains) {
		c := f.state.chains[name]
		rules := make([]string, len(c.rules))
		for i, r := range c.rules {
			rules[i] = r.rule.String()
			if hashes && r.hash != "" {
				rules[i] = ruleWithHash(r.rule, r.hash)
			}
		}
		chainText(&b, name, c.base, rules)
	}
	b.WriteString("}\n")
	return b.String()
}

// Drift helpers: they change the table outside any transaction, as an
// administrator would.

// DeleteTable removes the whole table.
func (f *Fake) DeleteTable() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.state = nil
}

// DeleteRule removes rule index of chain.
func (f *Fake) DeleteRule(chain string, index int) error {
	return f.drift(func(t *fakeTable) error {
		c := t.chainForWrite(chain)
		if c == nil || index < 0 || index >= len(c.rules) {
			return fmt.Errorf("no rule %d in chain %q", index, chain)
		}
		t.unuse(c.rules[index].rule)
		c.rules = slices.Delete(c.rules, index, index+1)
		return nil
	})
}

// InsertRule adds a rule without our identity hash at index of chain.
func (f *Fake) InsertRule(chain string, index int, r Rule) error {
	return f.drift(func(t *fakeTable) error {
		c := t.chainForWrite(chain)
		if c == nil || index < 0 || index > len(c.rules) {
			return fmt.Errorf("cannot insert at %d in chain %q", index, chain)
		}
		f.handle++
		c.rules = slices.Insert(c.rules, index, fakeRule{rule: r, handle: f.handle})
		return t.use(r)
	})
}

// Apply runs ops outside the Applier, for example to add foreign chains or
// sets, or to add and delete elements behind the Applier's back.
func (f *Fake) Apply(ops ...Op) error {
	_, err := f.Commit(context.Background(), &Transaction{Ops: ops})
	return err
}

func (f *Fake) drift(fn func(*fakeTable) error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.state == nil {
		return errors.New("table does not exist")
	}
	next := f.state.fork()
	if err := fn(next); err != nil {
		return err
	}
	next.owned = nil
	f.state = next
	return nil
}

// AddElements adds elements (nft syntax) to a set of the table.
func (f *Fake) AddElements(set string, elems ...string) error {
	return f.setDrift(OpAddElements, set, elems)
}

// DeleteElements deletes elements (nft syntax, as Dump prints them) from a
// set of the table.
func (f *Fake) DeleteElements(set string, elems ...string) error {
	return f.setDrift(OpDeleteElements, set, elems)
}

func (f *Fake) setDrift(kind OpKind, set string, texts []string) error {
	f.mu.Lock()
	var s *fakeSet
	if f.state != nil {
		s = f.state.sets[set]
	}
	f.mu.Unlock()
	if s == nil {
		return fmt.Errorf("set %q: %w", set, ErrFakeNoEntry)
	}
	op := Op{Kind: kind, Name: set, Interval: s.interval}
	for _, text := range texts {
		e, err := parseElement(s.typ, s.interval, text)
		if err != nil {
			return err
		}
		op.Elements = append(op.Elements, e)
	}
	return f.Apply(op)
}
