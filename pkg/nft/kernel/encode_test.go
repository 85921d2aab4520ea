package kernel

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/internal/nla"
)

// messages splits an encoded batch into its messages.
func messages(buf []byte) [][]byte {
	var out [][]byte
	for len(buf) >= unix.SizeofNlMsghdr {
		n := int(binary.NativeEndian.Uint32(buf))
		out = append(out, buf[:n])
		buf = buf[(n+3)&^3:]
	}
	return out
}

// TestEncodeSplitsElements: an element list longer than an attribute can
// hold goes out in several messages of the same batch, each attribute
// within the 16-bit limit, each message with the next sequence number, and
// only the last one asking for an acknowledgement.
func TestEncodeSplitsElements(t *testing.T) {
	id := nft.TableID{Family: nft.FamilyIP, Name: "t"}
	var elems []nft.Element
	for i := range 100000 {
		elems = append(elems, nft.AddrElem(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})))
	}
	b := &nft.Batch{Ops: []nft.Op{{Kind: nft.OpAddElements, Table: id, Name: "s", Type: nft.TypeIPv4Addr, Elements: elems}}}
	e := newEncoder(100, b, sizeHint(b))
	e.encode()
	if len(e.errs) > 0 {
		t.Fatal(e.errs)
	}
	msgs := messages(e.b.Buf)
	if len(msgs) < 20 || len(msgs) != len(e.msgs) {
		t.Fatalf("%d messages (%d recorded)", len(msgs), len(e.msgs))
	}
	count := 0
	for i, m := range msgs {
		if seq := binary.NativeEndian.Uint32(m[8:]); seq != 100+uint32(i) {
			t.Errorf("message %d: sequence %d", i, seq)
		}
		ack := binary.NativeEndian.Uint16(m[6:])&unix.NLM_F_ACK != 0
		if ack != (i == len(msgs)-2) {
			t.Errorf("message %d: ack %v", i, ack)
		}
		if list, ok := nla.Find(m[unix.SizeofNlMsghdr+4:], unix.NFTA_SET_ELEM_LIST_ELEMENTS); ok {
			for it := nla.NewIter(list); it.Next(); {
				count++
			}
		}
	}
	if count != len(elems) {
		t.Errorf("%d elements encoded, want %d", count, len(elems))
	}
}

// TestEncodeRefuses: operations that cannot be encoded are refused before
// anything is sent, each named.
func TestEncodeRefuses(t *testing.T) {
	id := nft.TableID{Family: nft.FamilyIP, Name: "t"}
	bad := nft.NewRule(nft.SAddr(netip.MustParsePrefix("fd5c::/16")))
	huge := nft.NewRule()
	for range 3000 {
		huge.Exprs = append(huge.Exprs, nft.Counter())
	}
	ok := nft.NewRule(nft.Accept())
	b := &nft.Batch{Ops: []nft.Op{
		{Kind: nft.OpAddRule, Table: id, Name: "c", Rule: &ok},
		{Kind: nft.OpAddRule, Table: id, Name: "c", Rule: &bad, Index: 1},
		{Kind: nft.OpAddRule, Table: id, Name: "c", Rule: &huge, Index: 2},
	}}
	_, err := (&Backend{}).Commit(t.Context(), b)
	var ce *nft.CommitError
	if !errors.As(err, &ce) || ce.Kernel || len(ce.Objects) != 2 || ce.Objects[0].Object.Rule != 1 || ce.Objects[1].Object.Rule != 2 ||
		!errors.Is(ce.Objects[1].Err, nla.ErrTooLong) {
		t.Errorf("got %v", err)
	}
}
