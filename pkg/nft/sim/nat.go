package sim

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"golang.org/x/sys/unix"

	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/vm"
)

// Conntrack status bits the NAT sets (enum ip_conntrack_status).
const (
	ipsSrcNAT     = 1 << 4
	ipsDstNAT     = 1 << 5
	ipsSrcNATDone = 1 << 7
	ipsDstNATDone = 1 << 8
)

// Manipulations: the NAT of the source or of the destination.
const (
	manipSrc = 0
	manipDst = 1
)

// manipOf is the manipulation the NAT core does in hook h.
func manipOf(h nft.Hook) int {
	if h == nft.HookPrerouting || h == nft.HookOutput {
		return manipDst
	}
	return manipSrc
}

// natSetup is a NAT a statement set up (nf_nat_setup_info): applied to the
// packet when the NAT core's chains are done.
type natSetup struct {
	manip   int
	addr    netip.Addr
	ports   bool // a port range was given
	lo, hi  uint16
	random  bool // NF_NAT_RANGE_PROTO_RANDOM_FULLY
	summary string
}

// nat is nft_nat_eval: it sets the NAT up and accepts. In an inet table a
// statement of the other IP version does nothing.
func (m *machine) nat(x vm.NAT) error {
	st := m.st
	if x.Family != uint32(st.inf.nfproto) {
		if m.c.t.id.Family == nft.FamilyInet {
			return nil
		}
		return fmt.Errorf("NAT of family %d on a packet of family %d", x.Family, st.inf.nfproto)
	}
	manip := manipSrc
	if x.Type == vm.NATDestination {
		manip = manipDst
	}
	if err := m.checkNAT(manip); err != nil {
		return err
	}
	addr, err := m.natAddr(x)
	if err != nil {
		return err
	}
	n := &natSetup{manip: manip, addr: addr, random: x.Flags&vm.NATRandomFully != 0}
	if err := m.natPorts(n, x.Flags, x.RegProtoMin, x.RegProtoMax); err != nil {
		return err
	}
	return m.setNAT(n)
}

// checkNAT refuses what the kernel refuses to load: NAT outside a nat
// chain, or in a hook that does not do that NAT (nft_nat_validate).
func (m *machine) checkNAT(manip int) error {
	if m.st.chainType != nft.ChainNAT {
		return fmt.Errorf("NAT in a %s chain", m.st.chainType)
	}
	if manipOf(m.st.hook) != manip {
		return fmt.Errorf("this NAT cannot be done in hook %s", m.st.hook)
	}
	return nil
}

func (m *machine) natAddr(x vm.NAT) (netip.Addr, error) {
	n := 4
	if x.Family == unix.NFPROTO_IPV6 {
		n = 16
	}
	lo, err := m.rg.slot(x.RegAddrMin, n)
	if err != nil {
		return netip.Addr{}, err
	}
	if x.RegAddrMax != 0 {
		hi, err := m.rg.slot(x.RegAddrMax, n)
		if err != nil {
			return netip.Addr{}, err
		}
		if string(hi) != string(lo) {
			return netip.Addr{}, fmt.Errorf("NAT to an address range is not simulated")
		}
	}
	a, _ := netip.AddrFromSlice(lo)
	return a, nil
}

// natPorts reads the port range of a NAT.
func (m *machine) natPorts(n *natSetup, flags uint32, rmin, rmax vm.Register) error {
	if flags&vm.NATProtoSpecified == 0 {
		return nil
	}
	lo, err := m.rg.slot(rmin, 2)
	if err != nil {
		return err
	}
	n.ports, n.lo, n.hi = true, binary.BigEndian.Uint16(lo), binary.BigEndian.Uint16(lo)
	if rmax != 0 {
		hi, err := m.rg.slot(rmax, 2)
		if err != nil {
			return err
		}
		n.hi = binary.BigEndian.Uint16(hi)
	}
	if n.lo > n.hi {
		return fmt.Errorf("NAT port range %d-%d", n.lo, n.hi)
	}
	return nil
}

// masq is nft_masq_eval: source NAT to the address the host would pick
// for the packet's route (postrouting only); the packet is dropped when
// the route has none.
func (m *machine) masq(x vm.Masq) error {
	if err := m.checkNAT(manipSrc); err != nil {
		return err
	}
	if m.st.hook != nft.HookPostrouting {
		return fmt.Errorf("masquerade in hook %s", m.st.hook)
	}
	_, dst := m.st.pkt.addrs()
	r, ok := m.st.fib.Route(RouteQuery{Dst: dst, Mark: m.st.mark})
	if !ok || !r.Src.IsValid() {
		m.step.Effects = append(m.step.Effects, "masquerade: no source address")
		m.rg.verdict = vm.Verdict{Code: vm.VerdictDrop}
		return nil
	}
	n := &natSetup{manip: manipSrc, addr: r.Src, random: x.Flags&vm.NATRandomFully != 0}
	if err := m.natPorts(n, x.Flags, x.RegProtoMin, x.RegProtoMax); err != nil {
		return err
	}
	return m.setNAT(n)
}

func (m *machine) setNAT(n *natSetup) error {
	kind := "snat"
	if n.manip == manipDst {
		kind = "dnat"
	}
	n.summary = fmt.Sprintf("%s to %s", kind, n.addr)
	if n.ports {
		n.summary += fmt.Sprintf(" ports %d-%d", n.lo, n.hi)
	}
	if n.random {
		n.summary += " fully-random"
	}
	m.step.Effects = append(m.step.Effects, n.summary)
	m.st.pending = n
	m.rg.verdict = vm.Verdict{Code: vm.VerdictAccept}
	return nil
}

// applyNAT rewrites the packet as nf_nat_packet does for the NAT set up,
// and sets the connection's status bits. A port the kernel would choose
// (a range the port is not in, fully-random) becomes unknown; so do the
// checksums of a changed packet. It assumes no other connection holds the
// new tuple.
func (st *state) applyNAT(n *natSetup) {
	srcOff, dstOff, alen := st.pkt.addrOffsets()
	addrOff, portOff := srcOff, 0
	if n.manip == manipDst {
		addrOff, portOff = dstOff, 2
	}
	changed := string(st.pkt.Network[addrOff:addrOff+alen]) != string(n.addr.AsSlice())
	copy(st.pkt.Network[addrOff:], n.addr.AsSlice())
	if po, ok := st.portOffset(portOff); ok {
		changed = st.natPort(n, po) || changed
	}
	if changed {
		bit := uint32(ipsSrcNAT)
		if n.manip == manipDst {
			bit = ipsDstNAT
		}
		st.conn.status |= bit
		st.unknownChecksums()
	}
}

// portOffset is the offset in the network header of the source (0) or
// destination (2) port of the packet's protocol, or of an ICMP echo's
// identifier (which the NAT treats as the source port).
func (st *state) portOffset(off int) (int, bool) {
	if !st.inf.l4 || st.inf.fragoff != 0 {
		return 0, false
	}
	switch st.inf.tprot {
	case unix.IPPROTO_TCP, unix.IPPROTO_UDP, unix.IPPROTO_UDPLITE, unix.IPPROTO_SCTP, unix.IPPROTO_DCCP:
		return st.inf.thoff + off, true
	case unix.IPPROTO_ICMP, unix.IPPROTO_ICMPV6:
		if off == 0 {
			return st.inf.thoff + 4, true
		}
	}
	return 0, false
}

// natPort applies the port part of a NAT to the port at off; it reports
// whether the port changed (or may have).
func (st *state) natPort(n *natSetup, off int) bool {
	if off+2 > len(st.pkt.Network) {
		return false
	}
	cur := binary.BigEndian.Uint16(st.pkt.Network[off:])
	switch {
	case !n.ports && !n.random:
		return false
	case n.ports && n.lo == n.hi:
		binary.BigEndian.PutUint16(st.pkt.Network[off:], n.lo)
		return cur != n.lo
	case !n.random && n.ports && cur >= n.lo && cur <= n.hi:
		return false
	}
	st.unknown = append(st.unknown, [2]int{off, off + 2})
	return true
}

// unknownChecksums updates the IPv4 header checksum after a NAT (the
// kernel keeps it right) and marks the transport checksum unknown (the
// kernel updates it from what it held, which for a packet with checksum
// offload is not the full checksum).
func (st *state) unknownChecksums() {
	if st.pkt.Proto == unix.ETH_P_IP {
		st.ipv4Checksum()
	}
	if !st.inf.l4 || st.inf.fragoff != 0 {
		return
	}
	off := map[uint8][2]int{
		unix.IPPROTO_TCP: {16, 18}, unix.IPPROTO_UDP: {6, 8}, unix.IPPROTO_UDPLITE: {6, 8},
		unix.IPPROTO_ICMP: {2, 4}, unix.IPPROTO_ICMPV6: {2, 4}, unix.IPPROTO_SCTP: {8, 12}, unix.IPPROTO_DCCP: {6, 8},
	}
	if o, ok := off[st.inf.tprot]; ok {
		st.unknown = append(st.unknown, [2]int{st.inf.thoff + o[0], st.inf.thoff + o[1]})
	}
}
