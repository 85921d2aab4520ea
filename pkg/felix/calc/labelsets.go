package calc

import (
	"slices"
	"strconv"
)

// labelSets shares identical label maps between items. Endpoints come in groups that carry the
// same labels (replicas of one app in one namespace), so the big shape's 11,000 endpoints hold a
// few hundred distinct own and flattened label sets: one map each, counted, instead of two maps
// per endpoint (11 MB of the calc bench shape's 70 MB live heap). Shared maps are never written:
// an item's labels change by registering a new map.
type labelSets struct {
	byKey map[string]*labelSet
	// scratch space for keys (lookups allocate nothing)
	keys []string
	buf  []byte
}

type labelSet struct {
	labels map[string]string
	refs   int
}

func newLabelSets() *labelSets { return &labelSets{byKey: map[string]*labelSet{}} }

// intern returns the shared map equal to labels (labels itself if it is the first), counting
// one more holder. A nil map stays nil.
func (s *labelSets) intern(labels map[string]string) map[string]string {
	if labels == nil {
		return nil
	}
	k := s.key(labels)
	if ls := s.byKey[string(k)]; ls != nil {
		ls.refs++
		return ls.labels
	}
	s.byKey[string(k)] = &labelSet{labels: labels, refs: 1}
	return labels
}

// release counts one holder of an interned map less, forgetting the map with its last holder.
func (s *labelSets) release(labels map[string]string) {
	if labels == nil {
		return
	}
	k := s.key(labels)
	if ls := s.byKey[string(k)]; ls != nil {
		if ls.refs--; ls.refs <= 0 {
			delete(s.byKey, string(k))
		}
	}
}

// key encodes a label map canonically into the scratch buffer: its keys sorted, each key and
// value prefixed with its length (labels may hold any byte).
func (s *labelSets) key(labels map[string]string) []byte {
	s.keys = s.keys[:0]
	for k := range labels {
		s.keys = append(s.keys, k)
	}
	slices.Sort(s.keys)
	b := s.buf[:0]
	for _, k := range s.keys {
		v := labels[k]
		b = strconv.AppendInt(b, int64(len(k)), 10)
		b = append(b, ':')
		b = append(b, k...)
		b = strconv.AppendInt(b, int64(len(v)), 10)
		b = append(b, ':')
		b = append(b, v...)
	}
	s.buf = b
	clear(s.keys) // hold no label text beyond the call
	return b
}
