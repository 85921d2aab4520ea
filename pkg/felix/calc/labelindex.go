package calc

import (
	"maps"
	"slices"

	"github.com/calico-host/calico-host/pkg/selector"
)

// labelIndex matches selectors against labelled items incrementally and reports every match that
// starts or stops. Each selector is filed under one "anchor" taken from what it requires of a
// label set: a (key, value) pair (`k == "v"`, `k in {...}`), else a key (`has(k)`), else it is
// scanned against every item. An item change therefore evaluates only the selectors anchored on
// its own labels plus the scanned ones, and a new selector only the items carrying its anchor:
// the work is proportional to what is affected, not to the size of the index.
//
// Items are filed only under the label keys that some selector could be anchored on (keyRefs):
// most labels of a big cluster's endpoints are never selected on, and filing every item under
// every label was the biggest part of calc's memory. A selector that brings a new key files the
// items carrying it (one pass over the items: with selectors on many distinct keys, as the calc
// bench shape's 550 has(sg-<n>) keys or OpenStack's security groups, about 0.1 ms per key and
// 10,000 items, 60 ms of the big shape's start).
//
// Inside the index, sets hold pointers to items and selectors (each knows its ID), not their IDs:
// half the size for the index's biggest part.
type labelIndex struct {
	onMatch func(selID, itemID string, matched bool)

	items map[string]*idxItem
	sels  map[string]*idxSel

	keyRefs   map[string]int                              // anchor keys -> selectors that could use them
	itemsByKV map[string]map[string]map[*idxItem]struct{} // key (of keyRefs) -> value -> items
	selsByKV  map[string]map[string]map[*idxSel]struct{}  // anchor key -> value -> selectors
	selsByKey map[string]map[*idxSel]struct{}             // has() anchor key -> selectors
	scanSels  map[*idxSel]struct{}
}

type idxItem struct {
	id      string
	labels  map[string]string
	matches map[*idxSel]struct{}
}

type idxSel struct {
	id      string
	sel     *selector.Selector
	keys    []string // the keys of its anchor options (counted in keyRefs)
	anchor  anchor
	matches map[*idxItem]struct{}
}

type anchorKind uint8

const (
	anchorScan anchorKind = iota
	anchorKV
	anchorKey
)

type anchor struct {
	kind   anchorKind
	key    string
	values []string
}

func newLabelIndex(onMatch func(selID, itemID string, matched bool)) *labelIndex {
	return &labelIndex{
		onMatch:   onMatch,
		items:     map[string]*idxItem{},
		sels:      map[string]*idxSel{},
		keyRefs:   map[string]int{},
		itemsByKV: map[string]map[string]map[*idxItem]struct{}{},
		selsByKV:  map[string]map[string]map[*idxSel]struct{}{},
		selsByKey: map[string]map[*idxSel]struct{}{},
		scanSels:  map[*idxSel]struct{}{},
	}
}

// weakAnchorKeys are labels that most items share, so anchoring on them narrows little.
var weakAnchorKeys = map[string]bool{
	labelNamespace:            true,
	labelOrchestrator:         true,
	labelServiceAccount:       true,
	nsLabelPrefix + labelName: true,
	saLabelPrefix + labelName: true,
}

// anchorOptions lists the anchors a selector could be filed under, best first by a static
// ranking: strong (key, values) pairs, strong has() keys, weak pairs, weak keys.
func anchorOptions(sel *selector.Selector) []anchor {
	var opts []anchor
	var ranks []int
	eq := sel.RequiredEqualities()
	for _, k := range slices.Sorted(maps.Keys(eq)) {
		opts, ranks = append(opts, anchor{kind: anchorKV, key: k, values: eq[k]}), append(ranks, rankOf(k, 0))
	}
	for _, k := range sel.RequiredKeys() {
		opts, ranks = append(opts, anchor{kind: anchorKey, key: k}), append(ranks, rankOf(k, 1))
	}
	idx := make([]int, len(opts))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		if ranks[a] != ranks[b] {
			return ranks[a] - ranks[b]
		}
		if opts[a].kind == anchorKV && opts[b].kind == anchorKV {
			return len(opts[a].values) - len(opts[b].values)
		}
		return 0
	})
	out := make([]anchor, len(idx))
	for i, j := range idx {
		out[i] = opts[j]
	}
	return out
}

func rankOf(key string, base int) int {
	if weakAnchorKeys[key] {
		return base + 2
	}
	return base
}

// chooseAnchor picks the option with the fewest items behind it (the static ranking decides
// ties, and everything while the index holds no items). The options' keys must be indexed.
func (x *labelIndex) chooseAnchor(opts []anchor) anchor {
	if len(opts) == 0 {
		return anchor{kind: anchorScan}
	}
	best, bestCount := opts[0], x.anchorCount(opts[0])
	for _, a := range opts[1:] {
		if n := x.anchorCount(a); n < bestCount {
			best, bestCount = a, n
		}
	}
	return best
}

// anchorCount is the number of items carrying an anchor.
func (x *labelIndex) anchorCount(a anchor) int {
	n := 0
	switch a.kind {
	case anchorKV:
		for _, v := range a.values {
			n += len(x.itemsByKV[a.key][v])
		}
	case anchorKey:
		for _, ids := range x.itemsByKV[a.key] {
			n += len(ids)
		}
	}
	return n
}

// UpdateSelector adds or replaces a selector and reports the matches that change.
func (x *labelIndex) UpdateSelector(id string, sel *selector.Selector) {
	s := x.sels[id]
	if s != nil && s.sel.String() == sel.String() {
		return
	}
	if s == nil {
		s = &idxSel{id: id}
		x.sels[id] = s
	} else {
		x.unfileSel(s)
	}
	oldMatches, oldKeys := s.matches, s.keys
	opts := anchorOptions(sel)
	s.keys = anchorKeys(opts)
	x.refKeys(s.keys)
	x.unrefKeys(oldKeys)
	s.sel, s.anchor, s.matches = sel, x.chooseAnchor(opts), map[*idxItem]struct{}{}
	x.fileSel(s)
	x.candidateItems(s.anchor, func(it *idxItem) {
		if sel.Evaluate(selector.Map(it.labels)) {
			s.matches[it] = struct{}{}
		}
	})
	for it := range oldMatches {
		if _, ok := s.matches[it]; !ok {
			delete(it.matches, s)
			x.onMatch(id, it.id, false)
		}
	}
	for it := range s.matches {
		if _, ok := oldMatches[it]; !ok {
			it.matches[s] = struct{}{}
			x.onMatch(id, it.id, true)
		}
	}
}

// DeleteSelector removes a selector, reporting the end of each of its matches.
func (x *labelIndex) DeleteSelector(id string) {
	s := x.sels[id]
	if s == nil {
		return
	}
	x.unfileSel(s)
	x.unrefKeys(s.keys)
	delete(x.sels, id)
	for it := range s.matches {
		delete(it.matches, s)
		x.onMatch(id, it.id, false)
	}
}

// UpdateItem adds or replaces an item's labels and reports the matches that change. The index
// keeps the map; callers must not modify it afterwards.
func (x *labelIndex) UpdateItem(id string, labels map[string]string) {
	it := x.items[id]
	if it != nil && maps.Equal(it.labels, labels) {
		return
	}
	if it == nil {
		it = &idxItem{id: id, matches: map[*idxSel]struct{}{}}
		x.items[id] = it
	} else {
		x.unfileItem(it)
	}
	it.labels = labels
	x.fileItem(it)
	now := make(map[*idxSel]struct{}, len(it.matches))
	x.candidateSels(labels, func(s *idxSel) {
		if s.sel.Evaluate(selector.Map(labels)) {
			now[s] = struct{}{}
		}
	})
	for s := range it.matches {
		if _, ok := now[s]; !ok {
			delete(it.matches, s)
			delete(s.matches, it)
			x.onMatch(s.id, id, false)
		}
	}
	for s := range now {
		if _, ok := it.matches[s]; !ok {
			it.matches[s] = struct{}{}
			s.matches[it] = struct{}{}
			x.onMatch(s.id, id, true)
		}
	}
}

// DeleteItem removes an item, reporting the end of each of its matches.
func (x *labelIndex) DeleteItem(id string) {
	it := x.items[id]
	if it == nil {
		return
	}
	x.unfileItem(it)
	delete(x.items, id)
	for s := range it.matches {
		delete(s.matches, it)
		x.onMatch(s.id, id, false)
	}
}

// ItemMatches calls f for every selector that matches the item.
func (x *labelIndex) ItemMatches(itemID string, f func(selID string)) {
	if it := x.items[itemID]; it != nil {
		for s := range it.matches {
			f(s.id)
		}
	}
}

// SelectorMatches calls f for every item the selector matches.
func (x *labelIndex) SelectorMatches(selID string, f func(itemID string)) {
	if s := x.sels[selID]; s != nil {
		for it := range s.matches {
			f(it.id)
		}
	}
}

// candidateSels calls f for every selector that could match labels; each at most once, since a
// selector has one anchor and a label set one value per key.
func (x *labelIndex) candidateSels(labels map[string]string, f func(*idxSel)) {
	for k, v := range labels {
		for s := range x.selsByKV[k][v] {
			f(s)
		}
		for s := range x.selsByKey[k] {
			f(s)
		}
	}
	for s := range x.scanSels {
		f(s)
	}
}

// candidateItems calls f for every item that carries the anchor.
func (x *labelIndex) candidateItems(a anchor, f func(*idxItem)) {
	switch a.kind {
	case anchorKV:
		for _, v := range a.values {
			for it := range x.itemsByKV[a.key][v] {
				f(it)
			}
		}
	case anchorKey:
		for _, items := range x.itemsByKV[a.key] {
			for it := range items {
				f(it)
			}
		}
	default:
		for _, it := range x.items {
			f(it)
		}
	}
}

func (x *labelIndex) fileSel(s *idxSel) {
	switch s.anchor.kind {
	case anchorKV:
		for _, v := range s.anchor.values {
			addNested(x.selsByKV, s.anchor.key, v, s)
		}
	case anchorKey:
		addToSet(x.selsByKey, s.anchor.key, s)
	default:
		x.scanSels[s] = struct{}{}
	}
}

func (x *labelIndex) unfileSel(s *idxSel) {
	switch s.anchor.kind {
	case anchorKV:
		for _, v := range s.anchor.values {
			removeNested(x.selsByKV, s.anchor.key, v, s)
		}
	case anchorKey:
		removeFromSet(x.selsByKey, s.anchor.key, s)
	default:
		delete(x.scanSels, s)
	}
}

func (x *labelIndex) fileItem(it *idxItem) {
	for k, v := range it.labels {
		if x.keyRefs[k] > 0 {
			addNested(x.itemsByKV, k, v, it)
		}
	}
}

// anchorKeys lists the keys of a selector's anchor options, each once.
func anchorKeys(opts []anchor) []string {
	var keys []string
	for _, a := range opts {
		if !slices.Contains(keys, a.key) {
			keys = append(keys, a.key)
		}
	}
	return keys
}

// refKeys counts one more selector for each key; the items carrying a key that no selector
// used before are filed under it.
func (x *labelIndex) refKeys(keys []string) {
	for _, k := range keys {
		if x.keyRefs[k]++; x.keyRefs[k] > 1 {
			continue
		}
		for _, it := range x.items {
			if v, ok := it.labels[k]; ok {
				addNested(x.itemsByKV, k, v, it)
			}
		}
	}
}

// unrefKeys counts one selector less for each key; a key no selector uses any more is no
// longer indexed.
func (x *labelIndex) unrefKeys(keys []string) {
	for _, k := range keys {
		if x.keyRefs[k]--; x.keyRefs[k] <= 0 {
			delete(x.keyRefs, k)
			delete(x.itemsByKV, k)
		}
	}
}

func (x *labelIndex) unfileItem(it *idxItem) {
	for k, v := range it.labels {
		removeNested(x.itemsByKV, k, v, it)
	}
}

// addToSet adds id to m[k], creating the set.
func addToSet[K, V comparable](m map[K]map[V]struct{}, k K, id V) {
	s := m[k]
	if s == nil {
		s = map[V]struct{}{}
		m[k] = s
	}
	s[id] = struct{}{}
}

// removeFromSet removes id from m[k], dropping the set when it empties.
func removeFromSet[K, V comparable](m map[K]map[V]struct{}, k K, id V) {
	if s := m[k]; s != nil {
		delete(s, id)
		if len(s) == 0 {
			delete(m, k)
		}
	}
}

func addNested[V comparable](m map[string]map[string]map[V]struct{}, k, v string, id V) {
	inner := m[k]
	if inner == nil {
		inner = map[string]map[V]struct{}{}
		m[k] = inner
	}
	addToSet(inner, v, id)
}

func removeNested[V comparable](m map[string]map[string]map[V]struct{}, k, v string, id V) {
	if inner := m[k]; inner != nil {
		removeFromSet(inner, v, id)
		if len(inner) == 0 {
			delete(m, k)
		}
	}
}
