package nft

import (
	"bytes"
	"fmt"
	"math/bits"
	"slices"
	"strings"
)

// element is one set element as the kernel holds it, in canonical form.
// In an interval set it is one interval: key is its first value and end the
// value just past its last one (nil when the interval runs to the top of the
// type's range). Outside interval sets end is always nil.
type element struct {
	text string
	key  []byte
	end  []byte
}

// span is an inclusive interval of big-endian values of one type.
type span struct{ lo, hi []byte }

// parseElement parses one element of a set of type t in nft syntax without
// merging anything: an interval element stays the interval it names.
func parseElement(t *setType, interval bool, s string) (element, error) {
	if interval {
		sp, err := parseSpan(t.fields[0], s)
		if err != nil {
			return element{}, err
		}
		return spanElement(t.fields[0], sp), nil
	}
	return parseKey(t, s)
}

// parseKey parses a single (possibly concatenated) value.
func parseKey(t *setType, s string) (element, error) {
	parts := strings.Split(s, " . ")
	if len(parts) != len(t.fields) {
		return element{}, fmt.Errorf("element %q does not match type %s", s, t.name)
	}
	key := make([]byte, 0, t.size)
	texts := make([]string, len(parts))
	for i, f := range t.fields {
		v, err := f.parse(strings.TrimSpace(parts[i]))
		if err != nil {
			return element{}, fmt.Errorf("element %q of type %s: %w", s, t.name, err)
		}
		key = append(key, v...)
		key = append(key, make([]byte, t.fieldSize(f)-len(v))...)
		texts[i] = f.format(v)
	}
	return element{text: strings.Join(texts, " . "), key: key}, nil
}

// parseSpan parses "v", "addr/len" or "v1-v2" into an inclusive interval.
func parseSpan(f *baseType, s string) (span, error) {
	s = strings.TrimSpace(s)
	if lo, hi, ok := strings.Cut(s, "-"); ok {
		return parseRange(f, strings.TrimSpace(lo), strings.TrimSpace(hi))
	}
	if addr, plen, ok := strings.Cut(s, "/"); ok && (f.name == TypeIPv4Addr || f.name == TypeIPv6Addr) {
		return parsePrefixSpan(f, addr, plen)
	}
	v, err := f.parse(s)
	if err != nil {
		return span{}, err
	}
	return span{lo: v, hi: v}, nil
}

func parseRange(f *baseType, los, his string) (span, error) {
	lo, err := f.parse(los)
	if err != nil {
		return span{}, err
	}
	hi, err := f.parse(his)
	if err != nil {
		return span{}, err
	}
	if bytes.Compare(lo, hi) > 0 {
		return span{}, fmt.Errorf("range %s-%s is empty", los, his)
	}
	return span{lo: lo, hi: hi}, nil
}

func parsePrefixSpan(f *baseType, addr, plen string) (span, error) {
	lo, err := f.parse(addr)
	if err != nil {
		return span{}, err
	}
	var n int
	if _, err := fmt.Sscanf(plen, "%d", &n); err != nil || n < 0 || n > len(lo)*8 {
		return span{}, fmt.Errorf("bad prefix length in %s/%s", addr, plen)
	}
	hi := slices.Clone(lo)
	for i := range lo {
		keep := min(max(n-i*8, 0), 8)
		mask := byte(0xff << (8 - keep))
		if keep == 0 {
			mask = 0
		}
		lo[i] &= mask
		hi[i] |= ^mask
	}
	return span{lo: lo, hi: hi}, nil
}

// spanElement turns an inclusive interval into its canonical element.
func spanElement(f *baseType, sp span) element {
	return element{text: formatSpan(f, sp), key: sp.lo, end: increment(sp.hi)}
}

// formatSpan prints an interval as nft does: a value, a prefix or a range.
func formatSpan(f *baseType, sp span) string {
	if bytes.Equal(sp.lo, sp.hi) {
		return f.format(sp.lo)
	}
	if f.name == TypeIPv4Addr || f.name == TypeIPv6Addr {
		if plen, ok := prefixLen(sp); ok {
			return fmt.Sprintf("%s/%d", f.format(sp.lo), plen)
		}
	}
	return f.format(sp.lo) + "-" + f.format(sp.hi)
}

// prefixLen reports whether the interval is exactly one CIDR block: lo and
// hi differ only in a run of trailing bits that are all 0 in lo and 1 in hi.
func prefixLen(sp span) (int, bool) {
	host := 0
	for i := len(sp.lo) - 1; i >= 0; i-- {
		x := sp.lo[i] ^ sp.hi[i]
		if x&(x+1) != 0 || sp.lo[i]&x != 0 {
			return 0, false
		}
		host += bits.OnesCount8(x)
		if x != 0xff {
			if !bytes.Equal(sp.lo[:i], sp.hi[:i]) {
				return 0, false
			}
			break
		}
	}
	return len(sp.lo)*8 - host, true
}

// increment returns b+1 as a new slice, or nil when b is the maximum value.
func increment(b []byte) []byte {
	out := slices.Clone(b)
	for i := len(out) - 1; i >= 0; i-- {
		out[i]++
		if out[i] != 0 {
			return out
		}
	}
	return nil
}

// decrement returns b-1 (b must not be zero).
func decrement(b []byte) []byte {
	out := slices.Clone(b)
	for i := len(out) - 1; i >= 0; i-- {
		out[i]--
		if out[i] != 0xff {
			break
		}
	}
	return out
}

// normalizeElements parses the elements of a desired set into the kernel's
// canonical form. Interval sets get the union of their elements as a sorted
// list of disjoint, non-adjacent intervals.
func normalizeElements(t *setType, interval bool, raw []string) ([]element, error) {
	_, elems, err := newSetState(t, interval, raw)
	return elems, err
}

// parsedElem is one raw element of a desired set, parsed: a key for plain
// sets, an inclusive interval for interval sets.
type parsedElem struct {
	el element
	sp span
}

func parseRaw(t *setType, interval bool, s string) (parsedElem, error) {
	if interval {
		sp, err := parseSpan(t.fields[0], s)
		return parsedElem{sp: sp}, err
	}
	el, err := parseKey(t, s)
	return parsedElem{el: el}, err
}

// mergeSpans sorts intervals and merges overlapping and adjacent ones.
func mergeSpans(spans []span) []span {
	slices.SortFunc(spans, func(a, b span) int { return bytes.Compare(a.lo, b.lo) })
	var out []span
	for _, sp := range spans {
		if n := len(out); n > 0 {
			last := &out[n-1]
			next := increment(last.hi)
			if next == nil || bytes.Compare(sp.lo, next) <= 0 {
				if bytes.Compare(sp.hi, last.hi) > 0 {
					last.hi = sp.hi
				}
				continue
			}
		}
		out = append(out, sp)
	}
	return out
}

// overlapping reports the first pair of overlapping intervals, if any.
func overlapping(f *baseType, elems []element) (string, string, bool) {
	spans := make([]span, len(elems))
	for i, e := range elems {
		hi := bytes.Repeat([]byte{0xff}, len(e.key))
		if e.end != nil {
			hi = decrement(e.end)
		}
		spans[i] = span{lo: e.key, hi: hi}
	}
	slices.SortFunc(spans, func(a, b span) int { return bytes.Compare(a.lo, b.lo) })
	for i := 1; i < len(spans); i++ {
		if bytes.Compare(spans[i].lo, spans[i-1].hi) <= 0 {
			return formatSpan(f, spans[i-1]), formatSpan(f, spans[i]), true
		}
	}
	return "", "", false
}

// mapElement is one verdict map element in canonical form.
type mapElement struct {
	text    string
	key     []byte
	verdict Verdict
}

// normalizeMap parses a desired map's keys, keyed by canonical key text,
// reusing the keys parsed for the previous version of the map; it returns
// the cache for the next one.
func normalizeMap(m *Map, cache map[string]element) (map[string]mapElement, map[string]element, error) {
	t, err := parseSetType(m.KeyType)
	if err != nil {
		return nil, nil, fmt.Errorf("map %q: %w", m.Name, err)
	}
	out := make(map[string]mapElement, len(m.Elements))
	next := make(map[string]element, len(m.Elements))
	for k, v := range m.Elements {
		e, ok := cache[k]
		if !ok {
			if e, err = parseKey(t, k); err != nil {
				return nil, nil, fmt.Errorf("map %q: %w", m.Name, err)
			}
		}
		if _, dup := out[e.text]; dup {
			return nil, nil, fmt.Errorf("map %q: key %q given twice", m.Name, e.text)
		}
		next[k] = e
		out[e.text] = mapElement{text: e.text, key: e.key, verdict: v}
	}
	return out, next, nil
}
