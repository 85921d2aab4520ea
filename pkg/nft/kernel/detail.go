package kernel

import (
	"encoding/binary"

	"golang.org/x/sys/unix"

	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/internal/nla"
	"github.com/calico-host/calico-host/pkg/nft/vm"
)

// elementDetail names the element an error is about, and returns its key,
// when the kernel pointed at it (the extended acknowledgement's attribute
// offset) inside an element message.
func elementDetail(enc *encoder, op *nft.Op, msg message, ke kernelError) (string, nft.Key) {
	if ke.off < 0 {
		return "", nft.Key{}
	}
	buf := enc.b.Buf[msg.off:]
	size := int(binary.NativeEndian.Uint32(buf))
	typ := binary.NativeEndian.Uint16(buf[4:])
	if typ != nftMsg(unix.NFT_MSG_NEWSETELEM) && typ != nftMsg(unix.NFT_MSG_DELSETELEM) || ke.off >= size {
		return "", nft.Key{}
	}
	const attrs = unix.SizeofNlMsghdr + 4
	pos := attrs
	for it := nla.NewIter(buf[attrs:size]); it.Next(); {
		start := pos
		pos += nla.Align(nla.HdrLen + len(it.Data()))
		if it.Type() != unix.NFTA_SET_ELEM_LIST_ELEMENTS || ke.off < start || ke.off >= pos {
			continue
		}
		return listElemAt(op, it.Data(), ke.off-start-nla.HdrLen)
	}
	return "", nft.Key{}
}

// listElemAt describes the list entry of an element list that holds offset
// off, and returns its key.
func listElemAt(op *nft.Op, list []byte, off int) (string, nft.Key) {
	pos := 0
	for it := nla.NewIter(list); it.Next(); {
		start := pos
		pos += nla.Align(nla.HdrLen + len(it.Data()))
		if off < start || off >= pos {
			continue
		}
		key, end := elemKey(it.Data())
		k := nft.KeyFromBytes(key)
		t := op.Type
		switch {
		case !t.Valid() || len(key) != t.KeyLen():
			return "element " + hexBytes(key), k
		case end:
			return "end of the range before " + t.FormatKey(k), nft.Key{}
		}
		return "element " + t.FormatKey(k), k
	}
	return "", nft.Key{}
}

func elemKey(b []byte) (key []byte, end bool) {
	for it := nla.NewIter(b); it.Next(); {
		switch it.Type() {
		case unix.NFTA_SET_ELEM_KEY:
			key, _, _ = vm.ParseData(it.Data())
		case unix.NFTA_SET_ELEM_FLAGS:
			end = it.U32()&unix.NFT_SET_ELEM_INTERVAL_END != 0
		}
	}
	return key, end
}

func hexBytes(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2+2*len(b))
	out = append(out, "0x"...)
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}
