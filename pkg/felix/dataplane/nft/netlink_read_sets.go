package nft

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// kernelSetInfo is a set or map as GETSET describes it.
type kernelSetInfo struct {
	name, table string
	flags       uint32
	keyType     uint32
	dataType    uint32
}

func (r *reader) readSets(ks *KernelState) error {
	msgs, err := r.request(unix.NFT_MSG_GETSET, true, strAttr(unix.NFTA_SET_TABLE, r.table))
	if err != nil {
		return fmt.Errorf("listing sets: %w", err)
	}
	for _, m := range msgs {
		info, err := decodeSet(m)
		if err != nil {
			return fmt.Errorf("decoding set: %w", err)
		}
		if info.table != r.table || info.flags&unix.NFT_SET_ANONYMOUS != 0 {
			continue
		}
		if err := r.readSet(ks, info); err != nil {
			return fmt.Errorf("reading set %s: %w", info.name, err)
		}
	}
	return nil
}

func decodeSet(m netlink.Message) (kernelSetInfo, error) {
	var s kernelSetInfo
	err := decodeAttrs(m, func(ad *netlink.AttributeDecoder) {
		switch ad.Type() {
		case unix.NFTA_SET_NAME:
			s.name = ad.String()
		case unix.NFTA_SET_TABLE:
			s.table = ad.String()
		case unix.NFTA_SET_FLAGS:
			s.flags = ad.Uint32()
		case unix.NFTA_SET_KEY_TYPE:
			s.keyType = ad.Uint32()
		case unix.NFTA_SET_DATA_TYPE:
			s.dataType = ad.Uint32()
		}
	})
	return s, err
}

// readSet reads one set's elements into ks. A set or map whose type or
// content we cannot represent is recorded with an empty type, which makes
// the Applier replace or delete it.
func (r *reader) readSet(ks *KernelState, info kernelSetInfo) error {
	raw, err := r.readElements(info.name)
	if err != nil {
		return err
	}
	typ, typErr := setTypeFromMagic(info.keyType)
	interval := info.flags&unix.NFT_SET_INTERVAL != 0
	if info.flags&unix.NFT_SET_MAP != 0 {
		km := &KernelMap{Elements: map[string]Verdict{}}
		if typErr == nil && info.dataType == unix.NFT_DATA_VERDICT && !interval {
			km.KeyType = typ.name
			typErr = mapElementsText(typ, raw, km.Elements)
		}
		if typErr != nil {
			km.KeyType = ""
		}
		ks.Maps[info.name] = km
		return nil
	}
	kset := &KernelSet{Interval: interval}
	if typErr == nil && (!interval || typ.intervalCapable()) {
		kset.Type = typ.name
		kset.Elements, typErr = setElementsText(typ, interval, raw)
	}
	if typErr != nil {
		kset.Type, kset.Elements = "", nil
	}
	ks.Sets[info.name] = kset
	return nil
}

// rawElement is one kernel set element.
type rawElement struct {
	key     []byte
	end     bool // NFT_SET_ELEM_INTERVAL_END
	verdict *Verdict
}

func (r *reader) readElements(set string) ([]rawElement, error) {
	msgs, err := r.request(unix.NFT_MSG_GETSETELEM, true,
		strAttr(unix.NFTA_SET_ELEM_LIST_TABLE, r.table), strAttr(unix.NFTA_SET_ELEM_LIST_SET, set))
	if err != nil {
		return nil, fmt.Errorf("listing elements: %w", err)
	}
	var out []rawElement
	for _, m := range msgs {
		err := decodeAttrs(m, func(ad *netlink.AttributeDecoder) {
			if ad.Type() == unix.NFTA_SET_ELEM_LIST_ELEMENTS {
				ad.Nested(func(nd *netlink.AttributeDecoder) error {
					for nd.Next() {
						var e rawElement
						nd.Nested(e.decode)
						out = append(out, e)
					}
					return nil
				})
			}
		})
		if err != nil {
			return nil, fmt.Errorf("decoding elements: %w", err)
		}
	}
	return out, nil
}

func (e *rawElement) decode(ad *netlink.AttributeDecoder) error {
	for ad.Next() {
		switch ad.Type() {
		case unix.NFTA_SET_ELEM_KEY:
			ad.Nested(func(nd *netlink.AttributeDecoder) error {
				for nd.Next() {
					if nd.Type() == unix.NFTA_DATA_VALUE {
						e.key = nd.Bytes()
					}
				}
				return nil
			})
		case unix.NFTA_SET_ELEM_FLAGS:
			e.end = ad.Uint32()&unix.NFT_SET_ELEM_INTERVAL_END != 0
		case unix.NFTA_SET_ELEM_DATA:
			ad.Nested(e.decodeData)
		}
	}
	return nil
}

func (e *rawElement) decodeData(ad *netlink.AttributeDecoder) error {
	for ad.Next() {
		if ad.Type() != unix.NFTA_DATA_VERDICT {
			continue
		}
		var code uint32
		var chain string
		ad.Nested(func(nd *netlink.AttributeDecoder) error {
			for nd.Next() {
				switch nd.Type() {
				case unix.NFTA_VERDICT_CODE:
					code = nd.Uint32()
				case unix.NFTA_VERDICT_CHAIN:
					chain = nd.String()
				}
			}
			return nil
		})
		v := verdictFromCode(int32(code), chain)
		e.verdict = &v
	}
	return nil
}

func verdictFromCode(code int32, chain string) Verdict {
	switch code {
	case nfAccept:
		return Accept()
	case nfDrop:
		return Drop()
	case unix.NFT_RETURN:
		return Return()
	case unix.NFT_JUMP:
		return Jump(chain)
	case unix.NFT_GOTO:
		return Goto(chain)
	}
	return Verdict{}
}

// formatKey prints a (possibly concatenated) key.
func formatKey(t *setType, key []byte) (string, error) {
	if len(key) != t.size {
		return "", fmt.Errorf("key of %d bytes for type %s", len(key), t.name)
	}
	parts := make([]string, len(t.fields))
	off := 0
	for i, f := range t.fields {
		parts[i] = f.format(key[off : off+f.size])
		off += t.fieldSize(f)
	}
	return strings.Join(parts, " . "), nil
}

func mapElementsText(t *setType, raw []rawElement, out map[string]Verdict) error {
	for _, e := range raw {
		k, err := formatKey(t, e.key)
		if err != nil {
			return err
		}
		if e.verdict == nil || e.verdict.Kind == 0 {
			return fmt.Errorf("map element %s without a verdict", k)
		}
		out[k] = *e.verdict
	}
	return nil
}

var errIrregularIntervals = errors.New("interval set elements are not start/end pairs")

// setElementsText prints a set's elements; interval sets come back from
// the kernel as start and end elements, which are paired into intervals.
func setElementsText(t *setType, interval bool, raw []rawElement) ([]string, error) {
	if !interval {
		out := make([]string, 0, len(raw))
		for _, e := range raw {
			k, err := formatKey(t, e.key)
			if err != nil {
				return nil, err
			}
			out = append(out, k)
		}
		return out, nil
	}
	return intervalsText(t.fields[0], raw)
}

// intervalsText sorts the elements by key (an end before a start at the same
// key) and pairs each start with the end that follows it. A start with no
// end runs to the top of the range; an end with no start (nft's marker at
// zero) is skipped.
func intervalsText(f *baseType, raw []rawElement) ([]string, error) {
	slices.SortFunc(raw, func(a, b rawElement) int {
		if c := bytes.Compare(a.key, b.key); c != 0 {
			return c
		}
		return boolOrder(b.end) - boolOrder(a.end)
	})
	var out []string
	var start []byte
	for _, e := range raw {
		if len(e.key) != f.size {
			return nil, fmt.Errorf("key of %d bytes for type %s", len(e.key), f.name)
		}
		switch {
		case !e.end && start != nil:
			return nil, errIrregularIntervals
		case !e.end:
			start = e.key
		case start != nil:
			out = append(out, formatSpan(f, span{lo: start, hi: decrement(e.key)}))
			start = nil
		}
	}
	if start != nil {
		out = append(out, formatSpan(f, span{lo: start, hi: bytes.Repeat([]byte{0xff}, f.size)}))
	}
	return out, nil
}

func boolOrder(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Netfilter verdict codes (linux/netfilter.h).
const (
	nfDrop   = 0
	nfAccept = 1
)
