package kernel

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/vm"
)

func (e *encoder) elementOp(op *nft.Op) error {
	switch op.Kind {
	case nft.OpAddElements, nft.OpDeleteElements:
		m := unix.NFT_MSG_NEWSETELEM
		if op.Kind == nft.OpDeleteElements {
			m = unix.NFT_MSG_DELSETELEM
		}
		if !op.Type.Valid() {
			return errors.New("element operation without the set's type")
		}
		return e.elements(op, m, op.Name, 0, len(op.Elements), func(i int) {
			e.setElement(op.Type, op.Interval, op.Elements[i])
		})
	case nft.OpAddMapElements:
		return e.elements(op, unix.NFT_MSG_NEWSETELEM, op.Name, 0, len(op.MapElements), func(i int) {
			e.mapElement(op.MapElements[i].Key, &op.MapElements[i].Verdict)
		})
	default:
		return e.elements(op, unix.NFT_MSG_DELSETELEM, op.Name, 0, len(op.Keys), func(i int) {
			e.mapElement(op.Keys[i], nil)
		})
	}
}

var errElementTooLong = errors.New("one element does not fit in a netlink attribute")

// elements writes n elements in as many messages as needed: the element
// list is one attribute, whose length the kernel reads as 16 bits. put(i)
// writes the list entries of element i.
func (e *encoder) elements(op *nft.Op, msg int, set string, setID uint32, n int, put func(i int)) error {
	if n == 0 {
		return nil
	}
	flags := uint16(0)
	if msg == unix.NFT_MSG_NEWSETELEM {
		flags = flagsCreate
	}
	start := func(first int) (int, int) {
		off := e.begin(nftMsg(msg), flags, op.Table.Family)
		e.msgs[len(e.msgs)-1].first = int32(first)
		e.b.String(unix.NFTA_SET_ELEM_LIST_TABLE, op.Table.Name)
		e.b.String(unix.NFTA_SET_ELEM_LIST_SET, set)
		if setID != 0 {
			e.b.U32(unix.NFTA_SET_ELEM_LIST_SET_ID, setID)
		}
		return off, e.b.Begin(unix.NFTA_SET_ELEM_LIST_ELEMENTS)
	}
	off, list := start(0)
	for i := 0; i < n; i++ {
		mark := len(e.b.Buf)
		put(i)
		if len(e.b.Buf)-list <= maxElementsAttrSize {
			continue
		}
		if mark == list+4 { // alone in its message and still too long
			return errElementTooLong
		}
		e.b.Buf = e.b.Buf[:mark]
		e.b.End(list)
		e.end(off)
		off, list = start(i)
		i--
	}
	e.b.End(list)
	e.end(off)
	return nil
}

// setElement writes one element of a set: a key; in a non-concatenated
// interval set, a start and (unless the range runs to the top) an end
// marker one past it; in a concatenated interval set, a key and an
// inclusive end key.
func (e *encoder) setElement(t nft.DataType, interval bool, el nft.Element) {
	lo, hi := el.Bounds()
	switch {
	case !interval:
		e.listElem(lo.Raw(), "", 0)
	case t.IsConcat():
		e.listElem(lo.Raw(), hi.Raw(), 0)
	default:
		e.listElem(lo.Raw(), "", 0)
		var ok bool
		if e.scratch, ok = nft.AppendIntervalEnd(e.scratch[:0], hi); ok {
			e.listElem(string(e.scratch), "", unix.NFT_SET_ELEM_INTERVAL_END)
		}
	}
}

func (e *encoder) listElem(key, keyEnd string, flags uint32) {
	n := e.b.Begin(unix.NFTA_LIST_ELEM)
	k := e.b.Begin(unix.NFTA_SET_ELEM_KEY)
	e.b.BytesString(unix.NFTA_DATA_VALUE, key)
	e.b.End(k)
	if keyEnd != "" {
		k := e.b.Begin(attrSetElemKeyEnd)
		e.b.BytesString(unix.NFTA_DATA_VALUE, keyEnd)
		e.b.End(k)
	}
	if flags != 0 {
		e.b.U32(unix.NFTA_SET_ELEM_FLAGS, flags)
	}
	e.b.End(n)
}

// mapElement writes a verdict map element (v nil: a key to delete).
func (e *encoder) mapElement(key nft.Key, v *nft.Verdict) {
	n := e.b.Begin(unix.NFTA_LIST_ELEM)
	k := e.b.Begin(unix.NFTA_SET_ELEM_KEY)
	e.b.BytesString(unix.NFTA_DATA_VALUE, key.Raw())
	e.b.End(k)
	if v != nil {
		x, err := v.VM()
		if err != nil {
			e.b.SetErr(fmt.Errorf("map element: %w", err))
		}
		d := e.b.Begin(unix.NFTA_SET_ELEM_DATA)
		vm.MarshalVerdict(&e.b, x)
		e.b.End(d)
	}
	e.b.End(n)
}
