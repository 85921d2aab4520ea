package selector

import (
	"crypto/sha256"
	"encoding/base64"
	"slices"
	"strings"
)

// Labels is a read-only label set. Callers can implement it to layer inherited labels (for
// example profile labels under endpoint labels) without copying maps.
type Labels interface {
	// Get returns the value of the label key and whether it is present.
	Get(key string) (string, bool)
}

// Map is a plain label map that implements Labels.
type Map map[string]string

// Get returns the value of key in m and whether it is present.
func (m Map) Get(key string) (string, bool) {
	v, ok := m[key]
	return v, ok
}

// Selector is a parsed, immutable selector. A nil *Selector behaves as all().
type Selector struct {
	root *node
	str  string   // canonical form
	uid  string   // "s:" + base64url(sha224("s:" + str))
	keys []string // sorted, distinct label keys the selector reads
}

// allSelector is what a nil *Selector stands for.
var allSelector = newSelector(&node{op: opAll})

// newSelector wraps a compiled tree, precomputing its canonical form, ID and keys.
func newSelector(root *node) *Selector {
	var b strings.Builder
	root.writeTo(&b)
	s := &Selector{root: root, str: b.String()}
	s.uid = uniqueID(s.str)
	s.keys = root.collectKeys(nil)
	slices.Sort(s.keys)
	s.keys = slices.Compact(s.keys)
	return s
}

// uniqueID hashes a canonical selector the way Calico's hash.MakeUniqueID("s", sel) does.
func uniqueID(canonical string) string {
	h := sha256.Sum224([]byte("s:" + canonical))
	return "s:" + base64.RawURLEncoding.EncodeToString(h[:])
}

// Parse parses a selector. An empty or blank string is all(). Errors are *ParseError, naming
// the byte offset and what was expected there.
func Parse(s string) (*Selector, error) {
	root, err := parse(s)
	if err != nil {
		return nil, err
	}
	return newSelector(root), nil
}

// MustParse is Parse for selectors known to be valid; it panics on error.
func MustParse(s string) *Selector {
	sel, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return sel
}

// orAll returns s, or the all() selector when s is nil.
func (s *Selector) orAll() *Selector {
	if s == nil {
		return allSelector
	}
	return s
}

// Evaluate reports whether the label set l matches. It does not allocate.
func (s *Selector) Evaluate(l Labels) bool {
	return s.orAll().root.eval(l)
}

// EvaluateMap reports whether the label map m matches.
func (s *Selector) EvaluateMap(m map[string]string) bool {
	return s.orAll().root.eval(Map(m))
}

// String returns the canonical form, identical to Calico's: it re-parses to the same
// selector, uses double quotes (single quotes only for values containing a double quote),
// sorts set members and wraps each && or || group in parentheses.
func (s *Selector) String() string {
	return s.orAll().str
}

// UniqueID returns Calico's ID for the selector: "s:" + base64url(SHA-224("s:" + String())),
// unpadded (38 characters after the prefix). Equal selectors have equal IDs.
func (s *Selector) UniqueID() string {
	return s.orAll().uid
}

// LabelKeys returns the sorted, distinct label keys the selector reads (global() reads
// NamespaceLabel). The caller may modify the returned slice.
func (s *Selector) LabelKeys() []string {
	return slices.Clone(s.orAll().keys)
}

// IsAll reports whether the selector is all() (or was empty).
func (s *Selector) IsAll() bool {
	return s.orAll().root.op == opAll
}

// Equal reports whether a and b have the same canonical form.
func (s *Selector) Equal(o *Selector) bool {
	return s.String() == o.String()
}

// And returns the conjunction of a and b, the same as parsing "(<a>) && (<b>)", so its
// String and UniqueID match what Calico computes for that text (for example when it ANDs
// `projectcalico.org/namespace == "ns"` into a namespaced policy's selector). It does not
// simplify: And(all(), b) is `(all() && <b>)`. A nil argument stands for all().
func And(a, b *Selector) *Selector {
	return newSelector(&node{op: opAnd, kids: []*node{a.orAll().root, b.orAll().root}})
}
