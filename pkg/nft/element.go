package nft

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// Key is one value of a set's or map's key type, held as the bytes the
// kernel compares (a concatenation's fields each padded to 4 bytes). It is
// comparable and cheap to store: a string header and its bytes. Build keys
// with the typed constructors; a constructor given an invalid value returns
// the empty Key, which no table accepts.
type Key struct{ raw string }

// KeyFromBytes makes a key of raw kernel bytes (as read from the kernel).
func KeyFromBytes(b []byte) Key { return Key{raw: string(b)} }

// Bytes returns a copy of the key's bytes.
func (k Key) Bytes() []byte { return []byte(k.raw) }

// Raw returns the key's bytes as a string (no copy).
func (k Key) Raw() string { return k.raw }

// Len is the key's length in bytes.
func (k Key) Len() int { return len(k.raw) }

// AddrKey is an ipv4_addr key for an IPv4 address, an ipv6_addr key for an
// IPv6 one.
func AddrKey(a netip.Addr) Key {
	if !a.IsValid() || a.Zone() != "" {
		return Key{}
	}
	return Key{raw: string(a.AsSlice())}
}

// PortKey is an inet_service key.
func PortKey(p uint16) Key { return Key{raw: string(binary.BigEndian.AppendUint16(nil, p))} }

// ProtoKey is an inet_proto key.
func ProtoKey(p uint8) Key { return Key{raw: string([]byte{p})} }

// MarkKey is a mark key.
func MarkKey(m uint32) Key { return Key{raw: string(binary.NativeEndian.AppendUint32(nil, m))} }

// IfnameKey is an ifname key: the name padded with NULs to IFNAMSIZ.
func IfnameKey(name string) Key {
	if validateIfname(name, false) != nil || name == "" {
		return Key{}
	}
	b := make([]byte, ifnameSize)
	copy(b, name)
	return Key{raw: string(b)}
}

// EtherKey is an ether_addr key.
func EtherKey(mac net.HardwareAddr) Key {
	if len(mac) != 6 {
		return Key{}
	}
	return Key{raw: string(mac)}
}

// ConcatKey concatenates keys into a key of a concatenated type, padding
// each part to 4 bytes as the kernel lays out registers.
func ConcatKey(parts ...Key) Key {
	var b []byte
	for _, p := range parts {
		if p.raw == "" {
			return Key{}
		}
		b = append(b, p.raw...)
		b = append(b, make([]byte, (4-len(p.raw)%4)%4)...)
	}
	return Key{raw: string(b)}
}

// Element is one element of a set: a single key or, in interval sets, an
// inclusive range of keys. Like Key it is comparable and compact: one
// string holding a tag byte and the key (or both bounds).
type Element struct{ raw string }

const (
	tagSingle = 0
	tagRange  = 1
)

// Elem is the element holding only k.
func (k Key) Elem() Element {
	if k.raw == "" {
		return Element{}
	}
	return Element{raw: "\x00" + k.raw}
}

// RangeElem is the inclusive range lo-hi (interval sets only). A range of
// one value is that single element; lo and hi must have the same length
// and lo must not be above hi, else the element is invalid.
func RangeElem(lo, hi Key) Element {
	switch c := bytes.Compare([]byte(lo.raw), []byte(hi.raw)); {
	case lo.raw == "" || len(lo.raw) != len(hi.raw) || c > 0:
		return Element{}
	case c == 0:
		return lo.Elem()
	}
	return Element{raw: "\x01" + lo.raw + hi.raw}
}

// AddrElem is the element holding address a.
func AddrElem(a netip.Addr) Element { return AddrKey(a).Elem() }

// PrefixElem is the range of addresses of prefix p (a single address for
// a full-length prefix).
func PrefixElem(p netip.Prefix) Element {
	lo, hi, ok := prefixBounds(p)
	if !ok {
		return Element{}
	}
	return RangeElem(lo, hi)
}

// PortElem is the element holding port p.
func PortElem(p uint16) Element { return PortKey(p).Elem() }

// PortRangeElem is the range of ports lo-hi.
func PortRangeElem(lo, hi uint16) Element { return RangeElem(PortKey(lo), PortKey(hi)) }

// IfnameElem is the element holding interface name name.
func IfnameElem(name string) Element { return IfnameKey(name).Elem() }

// IfnamePrefixElem is the range of the interface names that start with
// prefix: `"cali*"` in nft (lists and interval sets).
func IfnamePrefixElem(prefix string) Element {
	if validateIfname(prefix, false) != nil || prefix == "" {
		return Element{}
	}
	lo, hi := make([]byte, ifnameSize), bytes.Repeat([]byte{0xff}, ifnameSize)
	copy(lo, prefix)
	copy(hi, prefix)
	return RangeElem(Key{raw: string(lo)}, Key{raw: string(hi)})
}

// ConcatElem concatenates elements into an element of a concatenated type:
// `10.0.0.0/8 . tcp . 1000-2000` is
// ConcatElem(PrefixElem(p), ProtoKey(6).Elem(), PortRangeElem(1000, 2000)).
// When any part is a range the result is a range (interval sets only).
func ConcatElem(parts ...Element) Element {
	los, his := make([]Key, len(parts)), make([]Key, len(parts))
	for i, p := range parts {
		if !p.Valid() {
			return Element{}
		}
		los[i], his[i] = p.Bounds()
	}
	return RangeElem(ConcatKey(los...), ConcatKey(his...))
}

// Valid reports whether e was built from valid values.
func (e Element) Valid() bool {
	switch {
	case len(e.raw) < 2:
		return false
	case e.raw[0] == tagSingle:
		return true
	}
	return e.raw[0] == tagRange && len(e.raw)%2 == 1
}

// IsRange reports whether e is a range of more than one value.
func (e Element) IsRange() bool { return len(e.raw) > 0 && e.raw[0] == tagRange }

// Bounds returns the first and last key of e (the same key for a single).
func (e Element) Bounds() (lo, hi Key) {
	if !e.Valid() {
		return Key{}, Key{}
	}
	if e.raw[0] == tagSingle {
		k := Key{raw: e.raw[1:]}
		return k, k
	}
	n := (len(e.raw) - 1) / 2
	return Key{raw: e.raw[1 : 1+n]}, Key{raw: e.raw[1+n:]}
}

// KeyLen is the length of e's key(s).
func (e Element) KeyLen() int {
	lo, _ := e.Bounds()
	return lo.Len()
}

// compareElems orders elements by first key, then last key.
func compareElems(a, b Element) int {
	alo, ahi := a.Bounds()
	blo, bhi := b.Bounds()
	if c := strings.Compare(alo.raw, blo.raw); c != 0 {
		return c
	}
	return strings.Compare(ahi.raw, bhi.raw)
}

// prefixBounds returns the first and last address of p.
func prefixBounds(p netip.Prefix) (lo, hi Key, ok bool) {
	if !p.IsValid() || p.Addr().Zone() != "" {
		return Key{}, Key{}, false
	}
	p = p.Masked()
	first := p.Addr().AsSlice()
	last := bytes.Clone(first)
	for i := range last {
		keep := min(max(p.Bits()-i*8, 0), 8)
		last[i] |= byte(0xff >> keep)
	}
	return Key{raw: string(first)}, Key{raw: string(last)}, true
}

// increment returns b+1, or nil when b is all ones.
func increment(b []byte) []byte {
	out := bytes.Clone(b)
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
	out := bytes.Clone(b)
	for i := len(out) - 1; i >= 0; i-- {
		out[i]--
		if out[i] != 0xff {
			break
		}
	}
	return out
}

// IntervalEnd is the key just past hi: the end marker the kernel stores for
// a range ending at hi; nil when hi is the largest key.
func IntervalEnd(hi Key) []byte { return increment([]byte(hi.raw)) }

// AppendIntervalEnd appends IntervalEnd(hi) to dst; ok is false (and dst
// unchanged) when hi is the largest key.
func AppendIntervalEnd(dst []byte, hi Key) ([]byte, bool) {
	n := len(dst)
	dst = append(dst, hi.raw...)
	for i := len(dst) - 1; i >= n; i-- {
		dst[i]++
		if dst[i] != 0 {
			return dst, true
		}
	}
	return dst[:n], false
}

// KeyBefore is the key just before end (end must not be zero): the last key
// of a range the kernel stores with end marker end.
func KeyBefore(end []byte) Key { return Key{raw: string(decrement(end))} }

// prefixLen reports whether [lo, hi] is exactly one CIDR block and its
// length: lo and hi differ only in trailing bits, 0 in lo and 1 in hi.
func prefixLen(lo, hi []byte) (int, bool) {
	host := 0
	for i := len(lo) - 1; i >= 0; i-- {
		x := lo[i] ^ hi[i]
		if x&(x+1) != 0 || lo[i]&x != 0 {
			return 0, false
		}
		host += bits.OnesCount8(x)
		if x != 0xff {
			if !bytes.Equal(lo[:i], hi[:i]) {
				return 0, false
			}
			break
		}
	}
	return len(lo)*8 - host, true
}

// formatElement prints an element of a set of type t as nft does.
func (t DataType) formatElement(e Element) string {
	lo, hi := e.Bounds()
	if lo.Len() != t.KeyLen() || !t.Valid() {
		return fmt.Sprintf("invalid(%x)", e.raw)
	}
	if !e.IsRange() {
		return t.format([]byte(lo.raw))
	}
	parts := make([]string, t.n)
	off := 0
	for i, b := range t.fields() {
		size := baseInfos[b].size
		parts[i] = formatSpan(b, []byte(lo.raw[off:off+size]), []byte(hi.raw[off:off+size]))
		off += t.fieldSize(i)
	}
	return joinConcat(parts)
}

func joinConcat(parts []string) string {
	out := parts[0]
	for _, p := range parts[1:] {
		out += " . " + p
	}
	return out
}

// formatSpan prints one field's range: a value, a prefix or lo-hi.
func formatSpan(b baseType, lo, hi []byte) string {
	f := baseInfos[b].format
	if bytes.Equal(lo, hi) {
		return f(lo)
	}
	if b == btIPv4Addr || b == btIPv6Addr {
		if n, ok := prefixLen(lo, hi); ok {
			return fmt.Sprintf("%s/%d", f(lo), n)
		}
	}
	if n, ok := prefixLen(lo, hi); b == btIfname && ok && n%8 == 0 && n > 0 && bytes.IndexByte(lo[:n/8], 0) < 0 {
		return strconv.Quote(string(lo[:n/8]) + "*") // a wildcard name
	}
	return f(lo) + "-" + f(hi)
}

// FormatKey prints a key of type t as nft does.
func (t DataType) FormatKey(k Key) string { return t.format([]byte(k.raw)) }

// FormatElement prints an element of a set of type t as nft does.
func (t DataType) FormatElement(e Element) string { return t.formatElement(e) }
