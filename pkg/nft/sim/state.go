package sim

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/vm"
)

// state is the packet and its metadata on their way through the hooks:
// what the kernel keeps in the skb (mark, conntrack) and in the hook state
// (hook, input and output interfaces).
type state struct {
	pkt Packet
	inf info
	// unknown are byte ranges of pkt.Network whose value the simulator
	// cannot know (a port the NAT picks at random, checksums after NAT);
	// reading them is an error.
	unknown  [][2]int
	mark     uint32
	hook     nft.Hook
	iif, oif *Iface
	conn     conn
	fib      FIB
	// The type of the base chain running, and the NAT a statement of a
	// nat chain set up.
	chainType nft.ChainType
	pending   *natSetup
	// counted are the rules whose counters ran.
	counted []Count
	// reroute is set when the output hook changed what the route depends
	// on (a NAT of the destination, a route chain changing the mark or
	// addresses).
	reroute bool
}

// conn is the packet's conntrack attachment (skb->_nfct).
type conn struct {
	seen      bool // conntrack's hook has run
	tracked   bool // a connection is attached
	untracked bool // IP_CT_UNTRACKED
	state     nft.CTState
	status    uint32
	natDone   [2]bool // NAT set up for the source (0) and destination (1)
}

// ctState is what `ct state` reads (nft_ct_get_eval).
func (c *conn) ctState() uint32 {
	switch {
	case c.tracked:
		return uint32(c.state)
	case c.untracked:
		return uint32(nft.CTStateUntracked)
	}
	return uint32(nft.CTStateInvalid)
}

// conntrack is conntrack's hook: it attaches what the caller said
// conntrack makes of the packet, unless a notrack statement ran before.
func (st *state) conntrack(in Conntrack) {
	c := &st.conn
	if c.seen || c.untracked {
		c.seen = true
		return
	}
	c.seen = true
	switch in.State {
	case nft.CTStateUntracked:
		c.untracked = true
	case nft.CTStateInvalid:
	default:
		c.tracked, c.state, c.status = true, in.State, uint32(in.Status)
	}
}

// notrack is nft_notrack_eval: a packet without a connection (not yet
// seen by conntrack, or invalid) becomes untracked.
func (st *state) notrack() {
	if !st.conn.tracked {
		st.conn.untracked = true
	}
}

// payloadBytes reads n bytes at off from a header base (nft_payload_eval).
// ok is false where the kernel's load fails (no such header, beyond the
// packet): the match fails.
func (st *state) payloadBytes(base vm.PayloadBase, off, n int) ([]byte, bool, error) {
	switch base {
	case vm.BaseLL:
		if len(st.pkt.Link) == 0 {
			return nil, false, nil // no MAC header (a packet the host sends)
		}
		if st.hook == nft.HookPostrouting {
			return nil, false, fmt.Errorf("the link-layer header in %s is not simulated", st.hook)
		}
		b := append(append([]byte(nil), st.pkt.Link...), st.pkt.Network...)
		if off+n > len(b) {
			return nil, false, nil
		}
		return b[off : off+n], true, st.checkKnown(off-len(st.pkt.Link), n)
	case vm.BaseNetwork:
	case vm.BaseTransport:
		if !st.inf.l4 || st.inf.fragoff != 0 {
			return nil, false, nil
		}
		off += st.inf.thoff
	default:
		return nil, false, fmt.Errorf("payload base %d", base)
	}
	if off+n > len(st.pkt.Network) {
		return nil, false, nil
	}
	return st.pkt.Network[off : off+n], true, st.checkKnown(off, n)
}

func (st *state) checkKnown(off, n int) error {
	for _, u := range st.unknown {
		if off < u[1] && u[0] < off+n {
			return fmt.Errorf("bytes %d-%d of the network header were chosen by the NAT and are not known", u[0], u[1]-1)
		}
	}
	return nil
}

// meta is nft_meta_get_eval for the keys the simulator models.
func (m *machine) meta(x vm.Meta) error {
	st := m.st
	var v []byte
	switch x.Key {
	case vm.MetaProtocol:
		v = binary.BigEndian.AppendUint16(nil, st.pkt.Proto)
	case vm.MetaNFProto:
		v = []byte{st.inf.nfproto}
	case vm.MetaL4Proto:
		if !st.inf.l4 {
			m.fail()
			return nil
		}
		v = []byte{st.inf.tprot}
	case vm.MetaMark:
		v = binary.NativeEndian.AppendUint32(nil, st.mark)
	case unix.NFT_META_LEN:
		v = binary.NativeEndian.AppendUint32(nil, uint32(len(st.pkt.Network)))
	case vm.MetaIIFName, vm.MetaOIFName:
		v = make([]byte, unix.IFNAMSIZ)
		copy(v, st.dev(x.Key == vm.MetaIIFName).name())
	case unix.NFT_META_IIF, unix.NFT_META_OIF:
		var idx uint32
		if d := st.dev(x.Key == unix.NFT_META_IIF); d != nil {
			idx = d.Index
		}
		v = binary.NativeEndian.AppendUint32(nil, idx)
	case vm.MetaIIFType, unix.NFT_META_OIFTYPE:
		d := st.dev(x.Key == vm.MetaIIFType)
		if d == nil {
			m.fail()
			return nil
		}
		v = binary.NativeEndian.AppendUint16(nil, d.Type)
	default:
		return fmt.Errorf("meta key %d is not simulated", x.Key)
	}
	return m.rg.store(x.Reg, v)
}

// dev is the input (in) or output interface of the hook.
func (st *state) dev(in bool) *Iface {
	if in {
		return st.iif
	}
	return st.oif
}

// metaSet is nft_meta_set_eval for the mark.
func (m *machine) metaSet(x vm.Meta) error {
	if x.Key != vm.MetaMark {
		return fmt.Errorf("setting meta key %d is not simulated", x.Key)
	}
	v, err := m.rg.slot(x.Reg, 4)
	if err != nil {
		return err
	}
	old := m.st.mark
	m.st.mark = binary.NativeEndian.Uint32(v)
	m.step.Effects = append(m.step.Effects, fmt.Sprintf("mark 0x%08x -> 0x%08x", old, m.st.mark))
	return nil
}

// ct is nft_ct_get_eval for state and status: the state of a packet
// without a connection is invalid or untracked; its status does not exist
// and the match fails.
func (m *machine) ct(x vm.Ct) error {
	var v uint32
	switch x.Key {
	case vm.CtState:
		v = m.st.conn.ctState()
	case vm.CtStatus:
		if !m.st.conn.tracked {
			m.fail()
			return nil
		}
		v = m.st.conn.status
	default:
		return fmt.Errorf("ct key %d is not simulated", x.Key)
	}
	return m.rg.store(x.DReg, binary.NativeEndian.AppendUint32(nil, v))
}
