package kernel

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/internal/nla"
	"github.com/calico-host/calico-host/pkg/nft/vm"
)

// setInfo is a set or map as GETSET describes it.
type setInfo struct {
	name, table      string
	flags            uint32
	keyType, keyLen  uint32
	dataType         uint32
	hasData, anonSet bool
	handle           uint64
}

func decodeSet(b []byte) setInfo {
	var s setInfo
	for it := nla.NewIter(b); it.Next(); {
		switch it.Type() {
		case unix.NFTA_SET_NAME:
			s.name = it.String()
		case unix.NFTA_SET_TABLE:
			s.table = it.String()
		case unix.NFTA_SET_FLAGS:
			s.flags = it.U32()
		case unix.NFTA_SET_KEY_TYPE:
			s.keyType = it.U32()
		case unix.NFTA_SET_KEY_LEN:
			s.keyLen = it.U32()
		case unix.NFTA_SET_DATA_TYPE:
			s.dataType, s.hasData = it.U32(), true
		case attrSetHandle:
			if d := it.Data(); len(d) == 8 {
				s.handle = binary.BigEndian.Uint64(d)
			}
		}
	}
	s.anonSet = s.flags&unix.NFT_SET_ANONYMOUS != 0
	return s
}

// setIdentity is what a read reports as a set's Handle: its handle in its table, with the
// table's handle in the upper bits. Set handles are numbered per table, so a table deleted and
// made again (a restore of a saved ruleset) can hand the same number to a set holding other
// elements; the table's handle is new then.
func setIdentity(table, set uint64) uint64 { return table<<32 | set&0xffffffff }

// sets reads the table's named sets and maps into t and returns its
// anonymous sets by name, for the rules that look them up.
func (r *reader) sets(t *nft.Table) (map[string]nft.AnonSet, error) {
	var infos []setInfo
	err := r.dump(unix.NFT_MSG_GETSET, t.Family, func(b *nla.Builder) {
		b.String(unix.NFTA_SET_TABLE, t.Name)
	}, func(b []byte) error {
		if info := decodeSet(b); info.table == t.Name {
			info.handle = setIdentity(r.tableHandle, info.handle)
			infos = append(infos, info)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing sets: %w", err)
	}
	anon := map[string]nft.AnonSet{}
	for _, info := range infos {
		if r.setsOnly && (info.anonSet || info.flags&unix.NFT_SET_MAP != 0) {
			continue
		}
		if r.skip != nil && !info.anonSet && info.flags&unix.NFT_SET_MAP == 0 && r.skip(t.ID(), info.name) {
			r.storeUnread(t, info)
			continue
		}
		raw, err := r.elements(t, info.name)
		if err != nil {
			return nil, fmt.Errorf("reading set %s: %w", info.name, err)
		}
		r.store(t, info, raw, anon)
	}
	return anon, nil
}

// store turns a set's raw elements into a Set, a Map or an anonymous set.
// A set or map this package cannot represent becomes a Set with an invalid
// type, which a sync replaces or deletes.
func (r *reader) store(t *nft.Table, info setInfo, raw []rawElement, anon map[string]nft.AnonSet) {
	typ, err := nft.DataTypeFromMagic(info.keyType, int(info.keyLen))
	interval := info.flags&unix.NFT_SET_INTERVAL != 0
	isMap := info.flags&unix.NFT_SET_MAP != 0
	switch {
	case err == nil && isMap && info.dataType == dataVerdict && !interval && !info.anonSet:
		if m, ok := mapOf(info.name, typ, raw); ok {
			t.InsertMap(m)
			return
		}
	case err == nil && !isMap && !info.hasData:
		elems, ok := setElements(typ, interval, raw)
		switch {
		case !ok:
		case info.anonSet:
			anon[info.name] = nft.AnonSet{Type: typ, Interval: interval, Elements: elems}
			return
		default:
			t.InsertSet(&nft.Set{Name: info.name, Type: typ, Interval: interval, Elements: elems, Handle: info.handle})
			return
		}
	}
	if !info.anonSet {
		t.InsertSet(&nft.Set{Name: info.name, Handle: info.handle}) // unusable: invalid type
	}
}

// storeUnread stores a set whose elements are not read: its declaration.
func (r *reader) storeUnread(t *nft.Table, info setInfo) {
	typ, err := nft.DataTypeFromMagic(info.keyType, int(info.keyLen))
	if err != nil || info.hasData {
		t.InsertSet(&nft.Set{Name: info.name, Handle: info.handle}) // unusable: invalid type
		return
	}
	t.InsertSet(&nft.Set{Name: info.name, Type: typ, Interval: info.flags&unix.NFT_SET_INTERVAL != 0, Handle: info.handle, Unread: true})
}

// rawElement is one kernel set element.
type rawElement struct {
	key, keyEnd []byte
	end         bool // NFT_SET_ELEM_INTERVAL_END
	verdict     *vm.Verdict
}

func (r *reader) elements(t *nft.Table, set string) ([]rawElement, error) {
	var out []rawElement
	err := r.dump(unix.NFT_MSG_GETSETELEM, t.Family, func(b *nla.Builder) {
		b.String(unix.NFTA_SET_ELEM_LIST_TABLE, t.Name)
		b.String(unix.NFTA_SET_ELEM_LIST_SET, set)
	}, func(b []byte) error {
		if list, ok := nla.Find(b, unix.NFTA_SET_ELEM_LIST_ELEMENTS); ok {
			for it := nla.NewIter(list); it.Next(); {
				out = append(out, decodeElement(it.Data()))
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing elements: %w", err)
	}
	return out, nil
}

func decodeElement(b []byte) rawElement {
	var e rawElement
	for it := nla.NewIter(b); it.Next(); {
		switch it.Type() {
		case unix.NFTA_SET_ELEM_KEY:
			e.key, _, _ = vm.ParseData(it.Data())
		case attrSetElemKeyEnd:
			e.keyEnd, _, _ = vm.ParseData(it.Data())
		case unix.NFTA_SET_ELEM_FLAGS:
			e.end = it.U32()&unix.NFT_SET_ELEM_INTERVAL_END != 0
		case unix.NFTA_SET_ELEM_DATA:
			_, e.verdict, _ = vm.ParseData(it.Data())
		}
	}
	return e
}

func mapOf(name string, t nft.DataType, raw []rawElement) (*nft.Map, bool) {
	m := &nft.Map{Name: name, Type: t, Elements: make(map[nft.Key]nft.Verdict, len(raw))}
	for _, e := range raw {
		if e.verdict == nil || len(e.key) != t.KeyLen() {
			return nil, false
		}
		v, ok := nft.VerdictFromVM(*e.verdict)
		if !ok {
			return nil, false
		}
		m.Elements[nft.KeyFromBytes(e.key)] = v
	}
	return m, true
}

// setElements turns kernel elements into sorted elements: keys; ranges of
// a concatenated interval set (key and inclusive end key); ranges of an
// rbtree interval set, paired from start and end markers.
func setElements(t nft.DataType, interval bool, raw []rawElement) ([]nft.Element, bool) {
	n := t.KeyLen()
	if interval && !t.IsConcat() {
		return pairIntervals(n, raw)
	}
	out := make([]nft.Element, 0, len(raw))
	for _, e := range raw {
		if len(e.key) != n || e.end {
			return nil, false
		}
		el := nft.KeyFromBytes(e.key).Elem()
		if e.keyEnd != nil {
			el = nft.RangeElem(nft.KeyFromBytes(e.key), nft.KeyFromBytes(e.keyEnd))
		}
		if !el.Valid() {
			return nil, false
		}
		out = append(out, el)
	}
	nft.SortElements(out)
	return out, true
}

// pairIntervals sorts rbtree elements by key (an end marker before a start
// at the same key) and pairs each start with the end marker after it. A
// start with no end runs to the top of the range; an end with no start
// (nft's marker at zero) is skipped.
func pairIntervals(n int, raw []rawElement) ([]nft.Element, bool) {
	slices.SortFunc(raw, func(a, b rawElement) int {
		if c := bytes.Compare(a.key, b.key); c != 0 {
			return c
		}
		return b2i(b.end) - b2i(a.end)
	})
	var out []nft.Element
	var start []byte
	for _, e := range raw {
		switch {
		case len(e.key) != n:
			return nil, false
		case !e.end && start != nil:
			return nil, false
		case !e.end:
			start = e.key
		case start != nil:
			out = append(out, nft.RangeElem(nft.KeyFromBytes(start), nft.KeyBefore(e.key)))
			start = nil
		}
	}
	if start != nil {
		out = append(out, nft.RangeElem(nft.KeyFromBytes(start), nft.KeyFromBytes(bytes.Repeat([]byte{0xff}, n))))
	}
	return out, true
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
