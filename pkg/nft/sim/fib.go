package sim

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"golang.org/x/sys/unix"

	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/vm"
)

// fib is the fib expression (nft_fib4_eval, nft_fib6_eval and their
// _type variants) over the caller's FIB.
func (m *machine) fib(x vm.Fib) error {
	st := m.st
	if st.inf.nfproto != unix.NFPROTO_IPV4 && st.inf.nfproto != unix.NFPROTO_IPV6 {
		return fmt.Errorf("fib on a packet of netfilter family %d", st.inf.nfproto)
	}
	dev, err := st.fibDev(x.Flags)
	if err != nil {
		return err
	}
	src, dst := st.pkt.addrs()
	switch x.Result {
	case vm.FibResultAddrType:
		a := src
		if x.Flags&vm.FibDAddr != 0 {
			a = dst
		}
		return m.rg.store(x.DReg, binary.NativeEndian.AppendUint32(nil, uint32(st.fib.AddrType(a, dev))))
	case vm.FibResultOIF, unix.NFT_FIB_RESULT_OIFNAME:
		if err := st.checkFibOIF(x.Flags); err != nil {
			return err
		}
		found := st.fibOIF(x.Flags, dev, src, dst)
		if x.Result == vm.FibResultOIF {
			var idx uint32
			if found != nil {
				idx = found.Index
			}
			return m.rg.store(x.DReg, binary.NativeEndian.AppendUint32(nil, idx))
		}
		name := make([]byte, unix.IFNAMSIZ)
		copy(name, found.name())
		return m.rg.store(x.DReg, name)
	}
	return fmt.Errorf("fib result %d is not simulated", x.Result)
}

// checkFibOIF refuses what the kernel refuses to load: an output
// interface lookup outside prerouting, input and forward, or flagged oif
// (nft_fib_validate, nft_fib_init).
func (st *state) checkFibOIF(flags uint32) error {
	switch {
	case flags&vm.FibOIF != 0:
		return fmt.Errorf("fib oif lookup flagged oif")
	case st.hook != nft.HookPrerouting && st.hook != nft.HookInput && st.hook != nft.HookForward:
		return fmt.Errorf("fib oif lookup in hook %s", st.hook)
	}
	return nil
}

// fibDev is the interface the iif or oif flag names. The kernel refuses
// those flags in hooks without that interface (nft_fib_validate).
func (st *state) fibDev(flags uint32) (*Iface, error) {
	switch {
	case flags&vm.FibIIF != 0:
		if st.iif == nil {
			return nil, fmt.Errorf("fib iif in hook %s, which has no input interface", st.hook)
		}
		return st.iif, nil
	case flags&vm.FibOIF != 0:
		if st.oif == nil {
			return nil, fmt.Errorf("fib oif in hook %s, which has no output interface", st.hook)
		}
		return st.oif, nil
	}
	return nil, nil
}

// fibOIF is the output interface a fib lookup finds, nil for none.
func (st *state) fibOIF(flags uint32, dev *Iface, src, dst netip.Addr) *Iface {
	// nft_fib_can_skip: a packet that came in on a loopback interface.
	if (st.hook == nft.HookPrerouting || st.hook == nft.HookInput) && st.iif.Loopback() {
		return st.iif
	}
	if skip, iface := st.fibSpecial(src, dst); skip {
		return iface
	}
	q := RouteQuery{Dst: dst, Src: fibSource(src), Mark: 0}
	if flags&vm.FibDAddr == 0 {
		q.Dst, q.Src = src, fibSource(dst)
		if st.hook == nft.HookForward && flags&vm.FibIIF != 0 {
			q.IIF = st.oif
		}
	}
	if flags&vm.FibMark != 0 {
		q.Mark = st.mark
	}
	if q.Dst.Is6() && (q.Dst.IsLinkLocalUnicast() || q.Dst.IsLinkLocalMulticast()) {
		q.OIF = dev
		if dev == nil {
			q.OIF = st.skbDev()
		}
	}
	r, ok := st.fib.Route(q)
	if !ok || len(r.OIFs) == 0 || r.Type == nft.AddrTypeLocal || r.Type == nft.AddrTypeAnycast {
		return nil
	}
	if dev == nil {
		return &r.OIFs[0]
	}
	for _, o := range r.OIFs {
		if o.Index == dev.Index {
			return dev
		}
	}
	return nil
}

// fibSpecial answers the lookups the kernel answers without the FIB: an
// IPv4 packet from 0.0.0.0 to a broadcast or local multicast address, an
// ICMPv6 packet from :: to a link-local address.
func (st *state) fibSpecial(src, dst netip.Addr) (bool, *Iface) {
	if src.Is4() && src.IsUnspecified() && (dst == netip.AddrFrom4([4]byte{255, 255, 255, 255}) || dst.IsLinkLocalMulticast()) {
		return true, st.skbDev()
	}
	if src.Is6() && src.IsUnspecified() && st.inf.tprot == unix.IPPROTO_ICMPV6 && (dst.IsLinkLocalUnicast() || dst.IsLinkLocalMulticast()) {
		return true, st.iif
	}
	return false, nil
}

// skbDev is skb->dev: the input interface until the packet is routed out.
func (st *state) skbDev() *Iface {
	if st.iif != nil && st.hook != nft.HookPostrouting {
		return st.iif
	}
	return st.oif
}

// fibSource is the source address a fib lookup uses: none for an IPv4
// multicast, broadcast or zero address (get_saddr).
func fibSource(a netip.Addr) netip.Addr {
	if a.Is4() && (a.IsMulticast() || a.IsUnspecified() || a == netip.AddrFrom4([4]byte{255, 255, 255, 255})) {
		return netip.Addr{}
	}
	return a
}
