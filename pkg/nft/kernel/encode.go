package kernel

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/internal/nla"
	"github.com/calico-host/calico-host/pkg/nft/vm"
)

// Netlink numbers golang.org/x/sys lacks.
const (
	msgBatchBegin       = 0x10 // NFNL_MSG_BATCH_BEGIN
	msgBatchEnd         = 0x11 // NFNL_MSG_BATCH_END
	setFlagConcat       = 0x80 // NFT_SET_CONCAT
	attrSetDescConcat   = 2    // NFTA_SET_DESC_CONCAT
	attrSetFieldLen     = 1    // NFTA_SET_FIELD_LEN
	attrSetElemKeyEnd   = 10   // NFTA_SET_ELEM_KEY_END
	attrSetHandle       = 16   // NFTA_SET_HANDLE
	attrTableHandle     = 4    // NFTA_TABLE_HANDLE
	dataVerdict         = 0xffffff00
	udataSetKeyByteord  = 0 // NFTNL_UDATA_SET_KEYBYTEORDER
	udataRuleComment    = 0 // NFTNL_UDATA_RULE_COMMENT
	byteorderHost       = 1
	byteorderBig        = 2
	flagsCreate         = unix.NLM_F_REQUEST | unix.NLM_F_CREATE
	anonSetName         = "__set%d"
	maxElementsAttrSize = nla.MaxLen
	nfDrop              = 0 // NF_DROP
	nfAccept            = 1 // NF_ACCEPT
)

// message is one message of the batch: the operation it came from and
// where it starts in the buffer.
type message struct {
	op    int32 // index in the batch's operations; -1 for the begin and end markers
	off   int32
	first int32 // element messages: index of the first element in the operation
}

// encoder writes a batch into one buffer, one netlink message after the
// other, each with its own sequence number (base + its index).
type encoder struct {
	b     nla.Builder
	base  uint32
	msgs  []message
	ops   []nft.Op
	opIdx int
	setID uint32
	errs  []nft.ObjectError
	// scratch holds an interval end key while it is written.
	scratch []byte
}

func newEncoder(base uint32, batch *nft.Batch, sizeHint int) *encoder {
	e := &encoder{base: base, ops: batch.Ops}
	e.b.Buf = make([]byte, 0, sizeHint)
	return e
}

// begin starts a message.
func (e *encoder) begin(typ uint16, flags uint16, family nft.Family) int {
	off := len(e.b.Buf)
	seq := e.base + uint32(len(e.msgs))
	var h [unix.SizeofNlMsghdr + 4]byte
	binary.NativeEndian.PutUint16(h[4:], typ)
	binary.NativeEndian.PutUint16(h[6:], flags|unix.NLM_F_REQUEST)
	binary.NativeEndian.PutUint32(h[8:], seq)
	h[16] = byte(family) // nfgenmsg: family, version 0, resource id
	if typ == msgBatchBegin || typ == msgBatchEnd {
		binary.BigEndian.PutUint16(h[18:], unix.NFNL_SUBSYS_NFTABLES)
	}
	e.b.Buf = append(e.b.Buf, h[:]...)
	e.msgs = append(e.msgs, message{op: int32(e.opIdx), off: int32(off)})
	return off
}

// end closes the message started at off.
func (e *encoder) end(off int) {
	binary.NativeEndian.PutUint32(e.b.Buf[off:], uint32(len(e.b.Buf)-off))
}

func nftMsg(m int) uint16 { return uint16(unix.NFNL_SUBSYS_NFTABLES<<8 | m) }

// encode writes the whole batch. Operations that cannot be encoded are
// recorded in e.errs and left out.
func (e *encoder) encode() {
	e.opIdx = -1
	e.end(e.begin(msgBatchBegin, 0, 0))
	for i := range e.ops {
		e.opIdx = i
		mark, nmsgs := len(e.b.Buf), len(e.msgs)
		err := e.op(&e.ops[i])
		if err == nil {
			err = e.b.TakeErr()
		}
		if err != nil {
			e.b.Buf, e.msgs = e.b.Buf[:mark], e.msgs[:nmsgs]
			op := &e.ops[i]
			e.errs = append(e.errs, nft.ObjectError{Object: op.Object(), Op: op.Kind, Err: err})
		}
	}
	e.opIdx = -1
	e.end(e.begin(msgBatchEnd, 0, 0))
	// Only the last operation's message asks for an acknowledgement: errors
	// come back anyway, and it marks the end of the replies.
	if last := e.msgs[len(e.msgs)-2]; last.op >= 0 {
		flags := binary.NativeEndian.Uint16(e.b.Buf[last.off+6:])
		binary.NativeEndian.PutUint16(e.b.Buf[last.off+6:], flags|unix.NLM_F_ACK)
	}
}

func (e *encoder) op(op *nft.Op) error {
	fam := op.Table.Family
	switch op.Kind {
	case nft.OpAddTable:
		off := e.begin(nftMsg(unix.NFT_MSG_NEWTABLE), flagsCreate, fam)
		e.b.String(unix.NFTA_TABLE_NAME, op.Table.Name)
		e.b.U32(unix.NFTA_TABLE_FLAGS, 0)
		e.end(off)
	case nft.OpDeleteTable:
		e.named(unix.NFT_MSG_DELTABLE, fam, unix.NFTA_TABLE_NAME, op.Table.Name, 0, "")
	case nft.OpAddChain:
		return e.chain(op)
	case nft.OpFlushChain:
		e.named(unix.NFT_MSG_DELRULE, fam, unix.NFTA_RULE_TABLE, op.Table.Name, unix.NFTA_RULE_CHAIN, op.Name)
	case nft.OpDeleteChain:
		e.named(unix.NFT_MSG_DELCHAIN, fam, unix.NFTA_CHAIN_TABLE, op.Table.Name, unix.NFTA_CHAIN_NAME, op.Name)
	case nft.OpAddRule:
		return e.rule(op)
	case nft.OpAddSet, nft.OpAddMap:
		e.set(op.Table, op.Name, op.Type, setFlags(op.Type, op.Interval, op.Kind == nft.OpAddMap), 0)
	case nft.OpDeleteSet, nft.OpDeleteMap:
		e.named(unix.NFT_MSG_DELSET, fam, unix.NFTA_SET_TABLE, op.Table.Name, unix.NFTA_SET_NAME, op.Name)
	case nft.OpAddElements, nft.OpDeleteElements, nft.OpAddMapElements, nft.OpDeleteMapElements:
		return e.elementOp(op)
	case nft.OpFlushSet:
		e.named(unix.NFT_MSG_DELSETELEM, fam, unix.NFTA_SET_ELEM_LIST_TABLE, op.Table.Name, unix.NFTA_SET_ELEM_LIST_SET, op.Name)
	default:
		return fmt.Errorf("unknown operation %d", op.Kind)
	}
	return nil
}

// named writes a message of one or two name attributes.
func (e *encoder) named(m int, fam nft.Family, t1 uint16, v1 string, t2 uint16, v2 string) {
	off := e.begin(nftMsg(m), 0, fam)
	e.b.String(t1, v1)
	if t2 != 0 {
		e.b.String(t2, v2)
	}
	e.end(off)
}

func (e *encoder) chain(op *nft.Op) error {
	off := e.begin(nftMsg(unix.NFT_MSG_NEWCHAIN), flagsCreate, op.Table.Family)
	e.b.String(unix.NFTA_CHAIN_TABLE, op.Table.Name)
	e.b.String(unix.NFTA_CHAIN_NAME, op.Name)
	if bc := op.Base; bc != nil {
		hook, ok := nft.HookNumber(op.Table.Family, bc.Hook)
		if !ok {
			return fmt.Errorf("hook %s does not exist in family %s", bc.Hook, op.Table.Family)
		}
		n := e.b.Begin(unix.NFTA_CHAIN_HOOK)
		e.b.U32(unix.NFTA_HOOK_HOOKNUM, hook)
		e.b.U32(unix.NFTA_HOOK_PRIORITY, uint32(bc.Priority))
		if bc.Device != "" {
			e.b.String(unix.NFTA_HOOK_DEV, bc.Device)
		}
		e.b.End(n)
		policy := uint32(nfAccept)
		if bc.EffectivePolicy() == nft.PolicyDrop {
			policy = nfDrop
		}
		e.b.U32(unix.NFTA_CHAIN_POLICY, policy)
		e.b.String(unix.NFTA_CHAIN_TYPE, string(bc.Type))
	}
	e.end(off)
	return nil
}

// rule writes a rule and, before it, the anonymous sets it looks up.
func (e *encoder) rule(op *nft.Op) error {
	fam := op.Table.Family
	lw, err := nft.LowerRule(fam, *op.Rule)
	if err != nil {
		return err
	}
	ids := make([]uint32, len(lw.Anon))
	for i, s := range lw.Anon {
		ids[i] = e.set(op.Table, anonSetName, s.Type, setFlags(s.Type, s.Interval, false)|unix.NFT_SET_ANONYMOUS|unix.NFT_SET_CONSTANT, kernelElemCount(s))
		if err := e.elements(op, unix.NFT_MSG_NEWSETELEM, anonSetName, ids[i], len(s.Elements), func(j int) {
			e.setElement(s.Type, s.Interval, s.Elements[j])
		}); err != nil {
			return err
		}
	}
	for j, x := range lw.Exprs {
		if lk, ok := x.(vm.Lookup); ok && lk.Set == "" {
			lk.Set, lk.SetID = anonSetName, ids[lk.SetID-1]
			lw.Exprs[j] = lk
		}
	}
	off := e.begin(nftMsg(unix.NFT_MSG_NEWRULE), flagsCreate|unix.NLM_F_APPEND, fam)
	e.b.String(unix.NFTA_RULE_TABLE, op.Table.Name)
	e.b.String(unix.NFTA_RULE_CHAIN, op.Name)
	n := e.b.Begin(unix.NFTA_RULE_EXPRESSIONS)
	vm.Marshal(&e.b, lw.Exprs)
	e.b.End(n)
	if c := op.Rule.Comment; c != "" {
		e.b.Bytes(unix.NFTA_RULE_USERDATA, append([]byte{udataRuleComment, byte(len(c) + 1)}, append([]byte(c), 0)...))
	}
	e.end(off)
	return nil
}

// setDesc writes the set's description: its expected size, and for a
// concatenated interval set the field lengths, which select the pipapo
// backend.
func (e *encoder) setDesc(t nft.DataType, flags uint32, size int) {
	concat := flags&setFlagConcat != 0
	if size == 0 && !concat {
		return
	}
	d := e.b.Begin(unix.NFTA_SET_DESC)
	if size > 0 {
		e.b.U32(unix.NFTA_SET_DESC_SIZE, uint32(size))
	}
	if concat {
		c := e.b.Begin(attrSetDescConcat)
		for _, n := range t.FieldLens() {
			f := e.b.Begin(unix.NFTA_LIST_ELEM)
			e.b.U32(attrSetFieldLen, uint32(n))
			e.b.End(f)
		}
		e.b.End(c)
	}
	e.b.End(d)
}

// setFlags are the kernel flags of a set of type t.
func setFlags(t nft.DataType, interval, isMap bool) uint32 {
	var f uint32
	if interval {
		f |= unix.NFT_SET_INTERVAL
		if t.IsConcat() {
			f |= setFlagConcat
		}
	}
	if isMap {
		f |= unix.NFT_SET_MAP
	}
	return f
}

// kernelElemCount is how many kernel elements a set's elements make: an
// rbtree interval is a start and an end element.
func kernelElemCount(s nft.AnonSet) int {
	if s.Interval && !s.Type.IsConcat() {
		return 2 * len(s.Elements)
	}
	return len(s.Elements)
}

// set writes a NEWSET message and returns the set's batch id.
func (e *encoder) set(table nft.TableID, name string, t nft.DataType, flags uint32, size int) uint32 {
	e.setID++
	off := e.begin(nftMsg(unix.NFT_MSG_NEWSET), flagsCreate, table.Family)
	e.b.String(unix.NFTA_SET_TABLE, table.Name)
	e.b.String(unix.NFTA_SET_NAME, name)
	e.b.U32(unix.NFTA_SET_FLAGS, flags)
	e.b.U32(unix.NFTA_SET_KEY_TYPE, t.Magic())
	e.b.U32(unix.NFTA_SET_KEY_LEN, uint32(t.KeyLen()))
	if flags&unix.NFT_SET_MAP != 0 {
		e.b.U32(unix.NFTA_SET_DATA_TYPE, dataVerdict)
	}
	e.b.U32(unix.NFTA_SET_ID, e.setID)
	e.setDesc(t, flags, size)
	// The key byte order nft records (and reads to print elements): host
	// for marks and names, none for concatenations, else big endian.
	order := uint32(byteorderBig)
	switch {
	case t.IsConcat():
		order = 0
	case t.HostOrder():
		order = byteorderHost
	}
	ud := []byte{udataSetKeyByteord, 4}
	e.b.Bytes(unix.NFTA_SET_USERDATA, binary.NativeEndian.AppendUint32(ud, order))
	e.end(off)
	return e.setID
}
