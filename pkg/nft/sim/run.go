package sim

import (
	"encoding/binary"
	"fmt"
	"net"

	"golang.org/x/sys/unix"

	"github.com/calico-host/calico-host/pkg/nft"
)

// Run sends one packet through the hooks the kernel would take it
// through, and returns its path and fate:
//
//   - a packet received on IIF: prerouting; then the routing decision
//     (FIB.Route with IIF): input for a local destination, forward and
//     postrouting to the route's interface otherwise;
//   - a packet the host sends: routed, output (routed again when the
//     output hook changed its destination or, in a route chain, its
//     mark), postrouting; to one of the host's own addresses it then comes
//     back in on the loopback interface: prerouting and input;
//   - an ARP packet received: the input hook of the arp tables.
//
// The packet is not changed; Result.Packet is the packet after NAT.
func (rs *Ruleset) Run(in Input) (*Result, error) {
	if err := in.validate(); err != nil {
		return nil, err
	}
	inf, err := in.Packet.parse()
	if err != nil {
		return nil, err
	}
	st := &state{pkt: in.Packet.clone(), inf: inf, mark: in.Mark, iif: in.IIF, fib: in.FIB}
	p := path{rs: rs, st: st, ct: in.CT, res: &Result{}}
	switch {
	case inf.nfproto == unix.NFPROTO_ARP && in.IIF != nil:
		err = p.deliver() // the arp tables' input hook
	case inf.nfproto == unix.NFPROTO_ARP:
		err = fmt.Errorf("ARP packets the host sends are not simulated")
	case in.IIF != nil:
		err = p.received()
	default:
		err = p.sent()
	}
	if err != nil {
		return nil, err
	}
	p.res.Packet, p.res.Mark, p.res.Counters = st.pkt, st.mark, st.counted
	return p.res, nil
}

// path is one Run.
type path struct {
	rs  *Ruleset
	st  *state
	ct  Conntrack
	res *Result
}

// hook runs the packet through a hook and reports whether it passed.
func (p *path) hook(h nft.Hook) (bool, error) {
	st := p.st
	st.hook = h
	run := HookRun{Hook: h, IIF: st.iif.name(), OIF: st.oif.name()}
	ok, err := p.stages(h, &run.Steps)
	run.Dropped = !ok
	p.res.Hooks = append(p.res.Hooks, run)
	if err != nil {
		return false, fmt.Errorf("hook %s: %w", h, err)
	}
	if !ok {
		p.res.Fate = FateDropped
	}
	return ok, nil
}

func (p *path) stages(h nft.Hook, steps *[]Step) (bool, error) {
	st := p.st
	for _, sg := range p.rs.hooks[hookKey{st.inf.nfproto, h}] {
		var ok bool
		var err error
		switch sg.kind {
		case stageConntrack:
			st.conntrack(p.ct)
			continue
		case stageNAT:
			ok, err = st.natCore(sg.chains, steps)
		default:
			ok, err = st.baseChain(sg.chains[0], steps)
		}
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// baseChain runs a filter or route base chain.
func (st *state) baseChain(c *chain, steps *[]Step) (bool, error) {
	st.chainType = c.base.Type
	if c.base.Type != nft.ChainRoute || st.hook != nft.HookOutput {
		return st.doChain(c, steps)
	}
	src, dst := st.pkt.addrs()
	mark := st.mark
	ok, err := st.doChain(c, steps)
	if nsrc, ndst := st.pkt.addrs(); nsrc != src || ndst != dst || st.mark != mark {
		st.reroute = true
	}
	return ok, err
}

// natCore is nf_nat_inet_fn: for a new connection whose NAT of this
// hook's kind is not set up yet, it runs the nat chains in order until one
// drops the packet or sets a NAT up, then applies it. An established
// connection with a NAT is refused (the simulator does not know the
// translation); a related packet is taken for an ICMP error of a
// connection whose NAT is set up (no chain runs).
func (st *state) natCore(chains []*chain, steps *[]Step) (bool, error) {
	c := &st.conn
	manip := manipOf(st.hook)
	if !c.tracked {
		return true, nil
	}
	if c.state != nft.CTStateNew || c.natDone[manip] {
		if c.status&(ipsSrcNAT|ipsDstNAT) != 0 && !c.natDone[manip] {
			return false, fmt.Errorf("the NAT of an established or related connection (status %#x) is not simulated", c.status)
		}
		return true, nil
	}
	st.chainType, st.pending = nft.ChainNAT, nil
	for _, ch := range chains {
		ok, err := st.doChain(ch, steps)
		if err != nil || !ok {
			return false, err
		}
		if st.pending != nil {
			break
		}
	}
	c.natDone[manip] = true
	done := uint32(ipsSrcNATDone)
	if manip == manipDst {
		done = ipsDstNATDone
	}
	c.status |= done
	if st.pending != nil {
		_, dst := st.pkt.addrs()
		st.applyNAT(st.pending)
		if _, now := st.pkt.addrs(); st.hook == nft.HookOutput && now != dst {
			st.reroute = true
		}
		st.pending = nil
	}
	return true, nil
}

// received is the path of a packet that came in on an interface.
func (p *path) received() error {
	if ok, err := p.hook(nft.HookPrerouting); err != nil || !ok {
		return err
	}
	st := p.st
	src, dst := st.pkt.addrs()
	r, ok := st.fib.Route(RouteQuery{Dst: dst, Src: src, Mark: st.mark, Input: true, IIF: st.iif})
	switch {
	case !ok || len(r.OIFs) == 0 && r.Type == nft.AddrTypeUnicast:
		p.res.Fate = FateNoRoute
		return nil
	case r.Type == nft.AddrTypeLocal || r.Type == nft.AddrTypeBroadcast:
		return p.deliver()
	case r.Type != nft.AddrTypeUnicast:
		return fmt.Errorf("route of type %s to %s is not simulated", r.Type, dst)
	}
	if !st.decreaseTTL() {
		p.res.Fate = FateTTLExceeded
		return nil
	}
	st.oif = &r.OIFs[0]
	if ok, err := p.hook(nft.HookForward); err != nil || !ok {
		return err
	}
	return p.postrouting()
}

// decreaseTTL is what ip_forward and ip6_forward do before the forward
// hook: a packet whose TTL (hop limit) is 1 or less is not forwarded; the
// others lose one (and the IPv4 header its checksum updated).
func (st *state) decreaseTTL() bool {
	b, v6 := st.pkt.Network, st.pkt.Proto == unix.ETH_P_IPV6
	ttl := 8 // IPv4's TTL; IPv6's hop limit is at 7
	if v6 {
		ttl = 7
	}
	if b[ttl] <= 1 {
		return false
	}
	b[ttl]--
	if !v6 {
		st.ipv4Checksum()
	}
	return true
}

// ipv4Checksum recomputes the IPv4 header checksum.
func (st *state) ipv4Checksum() {
	b := st.pkt.Network
	ihl := int(b[0]&0x0f) * 4
	b[10], b[11] = 0, 0
	binary.BigEndian.PutUint16(b[10:], checksum(b[:ihl], 0))
}

// deliver runs the input hook.
func (p *path) deliver() error {
	p.st.oif = nil
	ok, err := p.hook(nft.HookInput)
	if err == nil && ok {
		p.res.Fate = FateDelivered
	}
	return err
}

// postrouting runs the postrouting hook: its input interface is the one
// a forwarded packet came in on (ip_output passes skb->dev), none for a
// packet the host sends.
func (p *path) postrouting() error {
	st := p.st
	ok, err := p.hook(nft.HookPostrouting)
	if ok && st.conn.tracked { // conntrack's confirm hook, the last of postrouting
		st.conn.status |= uint32(nft.CTStatusConfirmed)
	}
	if err == nil && ok {
		p.res.Fate, p.res.OIF = FateSent, st.oif.name()
	}
	return err
}

// sent is the path of a packet the host sends.
func (p *path) sent() error {
	st := p.st
	r, ok := p.route()
	if !ok {
		p.res.Fate = FateNoRoute
		return nil
	}
	st.oif = &r.OIFs[0]
	if ok, err := p.hook(nft.HookOutput); err != nil || !ok {
		return err
	}
	if st.reroute {
		if r, ok = p.route(); !ok {
			p.res.Fate = FateNoRoute
			return nil
		}
		st.oif = &r.OIFs[0]
	}
	if err := p.postrouting(); err != nil || p.res.Fate != FateSent || r.Type != nft.AddrTypeLocal {
		return err
	}
	return p.loopback()
}

// route looks up the route of a packet the host sends.
func (p *path) route() (Route, bool) {
	src, dst := p.st.pkt.addrs()
	r, ok := p.st.fib.Route(RouteQuery{Dst: dst, Src: src, Mark: p.st.mark})
	return r, ok && len(r.OIFs) > 0
}

// loopback is a packet to the host's own address coming back in on the
// loopback interface: prerouting and input, with its connection attached.
func (p *path) loopback() error {
	st := p.st
	if !st.oif.Loopback() {
		return fmt.Errorf("a route to a local address through %s, not a loopback interface", st.oif.name())
	}
	st.iif, st.oif = st.oif, nil
	// The loopback device's header: zero addresses (eth_header).
	st.pkt.Link = EthernetHeader(make(net.HardwareAddr, 6), make(net.HardwareAddr, 6), st.pkt.Proto)
	if ok, err := p.hook(nft.HookPrerouting); err != nil || !ok {
		return err
	}
	return p.deliver()
}
