package nla

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Header sizes and flags.
const (
	HdrLen    = 4      // struct nlattr
	FNested   = 0x8000 // NLA_F_NESTED
	FNetOrder = 0x4000 // NLA_F_NET_BYTEORDER
	typeMask  = ^uint16(FNested | FNetOrder)
	// MaxLen is the largest attribute the kernel can parse: its length is a u16.
	MaxLen = 0xffff
)

// ErrTooLong is recorded when an attribute outgrows MaxLen.
var ErrTooLong = errors.New("netlink attribute longer than 65535 bytes")

// Align rounds n up to the attribute alignment (4 bytes).
func Align(n int) int { return (n + 3) &^ 3 }

// Builder appends attributes to Buf. The first error (an attribute too long)
// sticks and is reported by Err.
type Builder struct {
	Buf []byte
	err error
}

// Err reports the first error met while building.
func (b *Builder) Err() error { return b.err }

// SetErr records err unless an error is already recorded.
func (b *Builder) SetErr(err error) {
	if b.err == nil {
		b.err = err
	}
}

func (b *Builder) header(typ uint16, n int) {
	if n > MaxLen {
		b.SetErr(fmt.Errorf("attribute type %d: %w", typ&typeMask, ErrTooLong))
	}
	b.Buf = binary.NativeEndian.AppendUint16(b.Buf, uint16(n))
	b.Buf = binary.NativeEndian.AppendUint16(b.Buf, typ)
}

func (b *Builder) pad() {
	for len(b.Buf)%4 != 0 {
		b.Buf = append(b.Buf, 0)
	}
}

// Bytes appends an attribute holding v.
func (b *Builder) Bytes(typ uint16, v []byte) {
	b.header(typ, HdrLen+len(v))
	b.Buf = append(b.Buf, v...)
	b.pad()
}

// BytesString appends an attribute holding the bytes of s (no NUL).
func (b *Builder) BytesString(typ uint16, s string) {
	b.header(typ, HdrLen+len(s))
	b.Buf = append(b.Buf, s...)
	b.pad()
}

// String appends a NUL-terminated string attribute.
func (b *Builder) String(typ uint16, s string) {
	b.header(typ, HdrLen+len(s)+1)
	b.Buf = append(b.Buf, s...)
	b.Buf = append(b.Buf, 0)
	b.pad()
}

// U32 appends a big-endian 32-bit number.
func (b *Builder) U32(typ uint16, v uint32) {
	b.header(typ, HdrLen+4)
	b.Buf = binary.BigEndian.AppendUint32(b.Buf, v)
}

// U64 appends a big-endian 64-bit number.
func (b *Builder) U64(typ uint16, v uint64) {
	b.header(typ, HdrLen+8)
	b.Buf = binary.BigEndian.AppendUint64(b.Buf, v)
}

// Begin starts a nested attribute; pass its result to End.
func (b *Builder) Begin(typ uint16) int {
	off := len(b.Buf)
	b.Buf = binary.NativeEndian.AppendUint16(b.Buf, 0)
	b.Buf = binary.NativeEndian.AppendUint16(b.Buf, typ|FNested)
	return off
}

// End closes the nested attribute started at off.
func (b *Builder) End(off int) {
	n := len(b.Buf) - off
	if n > MaxLen {
		typ := binary.NativeEndian.Uint16(b.Buf[off+2:]) & typeMask
		b.SetErr(fmt.Errorf("nested attribute type %d of %d bytes: %w", typ, n, ErrTooLong))
		n = MaxLen
	}
	binary.NativeEndian.PutUint16(b.Buf[off:], uint16(n))
}

// Iter walks the attributes of a buffer:
//
//	for it := nla.NewIter(b); it.Next(); { switch it.Type() { ... } }
//	if err := it.Err(); ...
type Iter struct {
	rest []byte
	typ  uint16
	data []byte
	err  error
}

// NewIter returns an iterator over the attributes in b.
func NewIter(b []byte) Iter { return Iter{rest: b} }

// Next advances to the next attribute; false at the end or on malformed input.
func (it *Iter) Next() bool {
	if it.err != nil || len(it.rest) == 0 {
		return false
	}
	if len(it.rest) < HdrLen {
		it.err = errors.New("truncated netlink attribute")
		return false
	}
	n := int(binary.NativeEndian.Uint16(it.rest))
	if n < HdrLen || n > len(it.rest) {
		it.err = fmt.Errorf("netlink attribute length %d out of range", n)
		return false
	}
	it.typ = binary.NativeEndian.Uint16(it.rest[2:]) & typeMask
	it.data = it.rest[HdrLen:n]
	it.rest = it.rest[min(Align(n), len(it.rest)):]
	return true
}

// Type is the current attribute's type, without flags.
func (it *Iter) Type() uint16 { return it.typ }

// Data is the current attribute's payload (aliasing the input buffer).
func (it *Iter) Data() []byte { return it.data }

// Err reports malformed input.
func (it *Iter) Err() error { return it.err }

// U32 reads the payload as a big-endian 32-bit number (0 if too short).
func (it *Iter) U32() uint32 {
	if len(it.data) < 4 {
		it.err = fmt.Errorf("attribute type %d: short u32", it.typ)
		return 0
	}
	return binary.BigEndian.Uint32(it.data)
}

// U64 reads the payload as a big-endian 64-bit number.
func (it *Iter) U64() uint64 {
	if len(it.data) < 8 {
		it.err = fmt.Errorf("attribute type %d: short u64", it.typ)
		return 0
	}
	return binary.BigEndian.Uint64(it.data)
}

// String reads the payload as a NUL-terminated string.
func (it *Iter) String() string { return CString(it.data) }

// CString returns b up to its first NUL.
func CString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// Find returns the payload of the first attribute of type typ in b.
func Find(b []byte, typ uint16) ([]byte, bool) {
	for it := NewIter(b); it.Next(); {
		if it.Type() == typ {
			return it.Data(), true
		}
	}
	return nil, false
}

// TakeErr returns the recorded error and clears it, so that a builder can
// go on after dropping the part that failed.
func (b *Builder) TakeErr() error {
	err := b.err
	b.err = nil
	return err
}
