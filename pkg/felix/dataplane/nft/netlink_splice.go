package nft

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/google/nftables/expr"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// Expressions google/nftables cannot marshal.
//
// google/nftables' expression interface (expr.Any) has unexported methods, so no type outside
// that library can marshal itself into a rule. Where the library's encoding is wrong for us
// (expr.Masq drops NFTA_MASQ_FLAGS whenever it sends a port range, so the kernel never sees
// NF_NAT_RANGE_PROTO_SPECIFIED and ignores the range), the encoder adds a placeholder that the
// kernel refuses (a masq loading its port from the verdict register) and records the
// expression's real netlink encoding as a splice. The lean sender replaces each placeholder
// with its splice in the rule's message before the batch goes out; a placeholder that was not
// replaced fails the whole transaction (EINVAL) rather than programming the wrong thing.

// splice is the real encoding of the expression at position index of a rule's expression list:
// the payload of its NFTA_LIST_ELEM (NFTA_EXPR_NAME and NFTA_EXPR_DATA).
type splice struct {
	index int
	elem  []byte
}

// placeholder is what google/nftables marshals where a splice goes: a masq whose port register
// is 0 (the verdict register), which the kernel refuses.
func placeholder() expr.Any { return &expr.Masq{ToPorts: true} }

// addSplice adds an expression given as its netlink encoding.
func (e *encoder) addSplice(elem []byte) {
	e.splices = append(e.splices, splice{index: len(e.exprs), elem: elem})
	e.add(placeholder())
}

// masqRangeElem is nft's encoding of `masquerade to :<reg min>-<reg max> [fully-random]`:
// the port registers and NF_NAT_RANGE_PROTO_SPECIFIED (plus ..._RANDOM_FULLY), exactly what
// `nft --debug=netlink` shows for it ("masq proto_min reg 1 proto_max reg 2 flags 0x2").
func masqRangeElem(regMin, regMax uint32, fullyRandom bool) []byte {
	flags := uint32(unix.NF_NAT_RANGE_PROTO_SPECIFIED)
	if fullyRandom {
		flags |= unix.NF_NAT_RANGE_PROTO_RANDOM_FULLY
	}
	data, _ := netlink.MarshalAttributes([]netlink.Attribute{
		{Type: unix.NFTA_MASQ_FLAGS, Data: binary.BigEndian.AppendUint32(nil, flags)},
		{Type: unix.NFTA_MASQ_REG_PROTO_MIN, Data: binary.BigEndian.AppendUint32(nil, regMin)},
		{Type: unix.NFTA_MASQ_REG_PROTO_MAX, Data: binary.BigEndian.AppendUint32(nil, regMax)},
	})
	elem, _ := netlink.MarshalAttributes([]netlink.Attribute{
		{Type: unix.NFTA_EXPR_NAME, Data: []byte("masq\x00")},
		{Type: unix.NLA_F_NESTED | unix.NFTA_EXPR_DATA, Data: data},
	})
	return elem
}

var errBadRuleMessage = errors.New("malformed rule message")

// newRuleType is the netlink message type of a new rule.
const newRuleType = netlink.HeaderType(unix.NFNL_SUBSYS_NFTABLES<<8 | unix.NFT_MSG_NEWRULE)

// applySplices puts the recorded splices into the batch. reqs is the batch as google/nftables
// built it (reqs[0] is the batch begin marker, so message i of the batch is reqs[i]).
func applySplices(reqs []netlink.Message, splices map[int][]splice) error {
	for i, ss := range splices {
		if i <= 0 || i >= len(reqs) || reqs[i].Header.Type != newRuleType {
			return fmt.Errorf("message %d of the batch is not the rule its splice was made for", i)
		}
		data, err := spliceRule(reqs[i].Data, ss)
		if err != nil {
			return fmt.Errorf("message %d: %w", i, err)
		}
		reqs[i].Data = data
	}
	return nil
}

// spliceRule rewrites a NEWRULE message body (nfgenmsg header, then attributes), replacing the
// list elements of NFTA_RULE_EXPRESSIONS at the splices' indexes.
func spliceRule(msg []byte, splices []splice) ([]byte, error) {
	const nfgenmsgLen = 4
	if len(msg) < nfgenmsgLen {
		return nil, errBadRuleMessage
	}
	out := append(make([]byte, 0, len(msg)+64*len(splices)), msg[:nfgenmsgLen]...)
	done := false
	err := walkAttrs(msg[nfgenmsgLen:], func(typ uint16, payload []byte) error {
		if typ&^(unix.NLA_F_NESTED|unix.NLA_F_NET_BYTEORDER) == unix.NFTA_RULE_EXPRESSIONS {
			var err error
			payload, err = spliceList(payload, splices)
			if err != nil {
				return err
			}
			done = true
		}
		out = appendAttr(out, typ, payload)
		return nil
	})
	if err == nil && !done {
		err = errors.New("rule message without expressions")
	}
	return out, err
}

// spliceList rewrites a list of expressions.
func spliceList(list []byte, splices []splice) ([]byte, error) {
	out := make([]byte, 0, len(list)+64*len(splices))
	i, used := 0, 0
	err := walkAttrs(list, func(typ uint16, payload []byte) error {
		for _, s := range splices {
			if s.index == i {
				payload = s.elem
				used++
			}
		}
		out = appendAttr(out, typ, payload)
		i++
		return nil
	})
	if err == nil && used != len(splices) {
		err = fmt.Errorf("rule has %d expressions; a splice is out of range", i)
	}
	return out, err
}

// walkAttrs calls fn with the type (flags included) and payload of each attribute in b.
func walkAttrs(b []byte, fn func(typ uint16, payload []byte) error) error {
	for len(b) > 0 {
		if len(b) < unix.SizeofNlAttr {
			return errBadRuleMessage
		}
		n := int(binary.NativeEndian.Uint16(b[0:2]))
		if n < unix.SizeofNlAttr || n > len(b) {
			return errBadRuleMessage
		}
		if err := fn(binary.NativeEndian.Uint16(b[2:4]), b[unix.SizeofNlAttr:n]); err != nil {
			return err
		}
		b = b[min(nlaAlign(n), len(b)):]
	}
	return nil
}

// appendAttr appends one attribute, padded to 4 bytes.
func appendAttr(dst []byte, typ uint16, payload []byte) []byte {
	n := unix.SizeofNlAttr + len(payload)
	dst = binary.NativeEndian.AppendUint16(dst, uint16(n))
	dst = binary.NativeEndian.AppendUint16(dst, typ)
	dst = append(dst, payload...)
	return append(dst, make([]byte, nlaAlign(n)-n)...)
}

func nlaAlign(n int) int { return (n + unix.NLA_ALIGNTO - 1) &^ (unix.NLA_ALIGNTO - 1) }
