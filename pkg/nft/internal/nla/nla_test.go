package nla

import (
	"errors"
	"testing"
)

func TestNestedTooLong(t *testing.T) {
	var b Builder
	n := b.Begin(1)
	for range 1000 {
		b.Bytes(2, make([]byte, 100))
	}
	b.End(n)
	if !errors.Is(b.Err(), ErrTooLong) {
		t.Errorf("err = %v", b.Err())
	}
	if b.TakeErr() == nil || b.Err() != nil {
		t.Error("TakeErr does not clear")
	}
}

func TestIter(t *testing.T) {
	var b Builder
	b.U32(1, 7)
	b.String(2, "abc")
	n := b.Begin(3)
	b.U64(4, 9)
	b.End(n)
	var got []uint16
	for it := NewIter(b.Buf); it.Next(); {
		got = append(got, it.Type())
		switch it.Type() {
		case 1:
			if it.U32() != 7 {
				t.Error("u32")
			}
		case 2:
			if it.String() != "abc" {
				t.Error("string")
			}
		case 3:
			if d, ok := Find(it.Data(), 4); !ok || len(d) != 8 {
				t.Error("nested")
			}
		}
	}
	if len(got) != 3 {
		t.Errorf("types %v", got)
	}
	it := NewIter([]byte{200, 0, 1, 0})
	if it.Next() || it.Err() == nil {
		t.Error("a length past the end is not an error")
	}
}
