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
type labelIndex struct {
	onMatch func(selID, itemID string, matched bool)

	items map[string]*idxItem
	sels  map[string]*idxSel

	itemsByKV map[string]map[string]map[string]struct{} // key -> value -> item IDs
	selsByKV  map[string]map[string]map[string]struct{} // anchor key -> value -> selector IDs
	selsByKey map[string]map[string]struct{}            // has() anchor key -> selector IDs
	scanSels  map[string]struct{}
}

type idxItem struct {
	labels  map[string]string
	matches map[string]struct{} // selector IDs
}

type idxSel struct {
	sel     *selector.Selector
	anchor  anchor
	matches map[string]struct{} // item IDs
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
		itemsByKV: map[string]map[string]map[string]struct{}{},
		selsByKV:  map[string]map[string]map[string]struct{}{},
		selsByKey: map[string]map[string]struct{}{},
		scanSels:  map[string]struct{}{},
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

// chooseAnchor picks the anchor with the fewest items behind it (the static ranking decides
// ties, and everything while the index holds no items).
func (x *labelIndex) chooseAnchor(sel *selector.Selector) anchor {
	opts := anchorOptions(sel)
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
	old := x.sels[id]
	if old != nil && old.sel.String() == sel.String() {
		return
	}
	s := &idxSel{sel: sel, anchor: x.chooseAnchor(sel), matches: map[string]struct{}{}}
	var oldMatches map[string]struct{}
	if old != nil {
		x.unfileSel(id, old.anchor)
		oldMatches = old.matches
	}
	x.sels[id] = s
	x.fileSel(id, s.anchor)
	x.candidateItems(s.anchor, func(itemID string, it *idxItem) {
		if sel.Evaluate(selector.Map(it.labels)) {
			s.matches[itemID] = struct{}{}
		}
	})
	for itemID := range oldMatches {
		if _, ok := s.matches[itemID]; !ok {
			delete(x.items[itemID].matches, id)
			x.onMatch(id, itemID, false)
		}
	}
	for itemID := range s.matches {
		if _, ok := oldMatches[itemID]; !ok {
			x.items[itemID].matches[id] = struct{}{}
			x.onMatch(id, itemID, true)
		}
	}
}

// DeleteSelector removes a selector, reporting the end of each of its matches.
func (x *labelIndex) DeleteSelector(id string) {
	s := x.sels[id]
	if s == nil {
		return
	}
	x.unfileSel(id, s.anchor)
	delete(x.sels, id)
	for itemID := range s.matches {
		delete(x.items[itemID].matches, id)
		x.onMatch(id, itemID, false)
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
		it = &idxItem{matches: map[string]struct{}{}}
		x.items[id] = it
	} else {
		x.unfileItem(id, it.labels)
	}
	it.labels = labels
	x.fileItem(id, labels)
	now := make(map[string]struct{}, len(it.matches))
	x.candidateSels(labels, func(selID string, s *idxSel) {
		if s.sel.Evaluate(selector.Map(labels)) {
			now[selID] = struct{}{}
		}
	})
	for selID := range it.matches {
		if _, ok := now[selID]; !ok {
			delete(it.matches, selID)
			delete(x.sels[selID].matches, id)
			x.onMatch(selID, id, false)
		}
	}
	for selID := range now {
		if _, ok := it.matches[selID]; !ok {
			it.matches[selID] = struct{}{}
			x.sels[selID].matches[id] = struct{}{}
			x.onMatch(selID, id, true)
		}
	}
}

// DeleteItem removes an item, reporting the end of each of its matches.
func (x *labelIndex) DeleteItem(id string) {
	it := x.items[id]
	if it == nil {
		return
	}
	x.unfileItem(id, it.labels)
	delete(x.items, id)
	for selID := range it.matches {
		delete(x.sels[selID].matches, id)
		x.onMatch(selID, id, false)
	}
}

// ItemMatches calls f for every selector that matches the item.
func (x *labelIndex) ItemMatches(itemID string, f func(selID string)) {
	if it := x.items[itemID]; it != nil {
		for selID := range it.matches {
			f(selID)
		}
	}
}

// SelectorMatches calls f for every item the selector matches.
func (x *labelIndex) SelectorMatches(selID string, f func(itemID string)) {
	if s := x.sels[selID]; s != nil {
		for itemID := range s.matches {
			f(itemID)
		}
	}
}

// candidateSels calls f for every selector that could match labels; each at most once, since a
// selector has one anchor and a label set one value per key.
func (x *labelIndex) candidateSels(labels map[string]string, f func(string, *idxSel)) {
	for k, v := range labels {
		for selID := range x.selsByKV[k][v] {
			f(selID, x.sels[selID])
		}
		for selID := range x.selsByKey[k] {
			f(selID, x.sels[selID])
		}
	}
	for selID := range x.scanSels {
		f(selID, x.sels[selID])
	}
}

// candidateItems calls f for every item that carries the anchor.
func (x *labelIndex) candidateItems(a anchor, f func(string, *idxItem)) {
	switch a.kind {
	case anchorKV:
		for _, v := range a.values {
			for itemID := range x.itemsByKV[a.key][v] {
				f(itemID, x.items[itemID])
			}
		}
	case anchorKey:
		for _, ids := range x.itemsByKV[a.key] {
			for itemID := range ids {
				f(itemID, x.items[itemID])
			}
		}
	default:
		for itemID, it := range x.items {
			f(itemID, it)
		}
	}
}

func (x *labelIndex) fileSel(id string, a anchor) {
	switch a.kind {
	case anchorKV:
		for _, v := range a.values {
			addNested(x.selsByKV, a.key, v, id)
		}
	case anchorKey:
		addToSet(x.selsByKey, a.key, id)
	default:
		x.scanSels[id] = struct{}{}
	}
}

func (x *labelIndex) unfileSel(id string, a anchor) {
	switch a.kind {
	case anchorKV:
		for _, v := range a.values {
			removeNested(x.selsByKV, a.key, v, id)
		}
	case anchorKey:
		removeFromSet(x.selsByKey, a.key, id)
	default:
		delete(x.scanSels, id)
	}
}

func (x *labelIndex) fileItem(id string, labels map[string]string) {
	for k, v := range labels {
		addNested(x.itemsByKV, k, v, id)
	}
}

func (x *labelIndex) unfileItem(id string, labels map[string]string) {
	for k, v := range labels {
		removeNested(x.itemsByKV, k, v, id)
	}
}

// addToSet adds id to m[k], creating the set.
func addToSet[K comparable](m map[K]map[string]struct{}, k K, id string) {
	s := m[k]
	if s == nil {
		s = map[string]struct{}{}
		m[k] = s
	}
	s[id] = struct{}{}
}

// removeFromSet removes id from m[k], dropping the set when it empties.
func removeFromSet[K comparable](m map[K]map[string]struct{}, k K, id string) {
	if s := m[k]; s != nil {
		delete(s, id)
		if len(s) == 0 {
			delete(m, k)
		}
	}
}

func addNested(m map[string]map[string]map[string]struct{}, k, v, id string) {
	inner := m[k]
	if inner == nil {
		inner = map[string]map[string]struct{}{}
		m[k] = inner
	}
	addToSet(inner, v, id)
}

func removeNested(m map[string]map[string]map[string]struct{}, k, v, id string) {
	if inner := m[k]; inner != nil {
		removeFromSet(inner, v, id)
		if len(inner) == 0 {
			delete(m, k)
		}
	}
}
