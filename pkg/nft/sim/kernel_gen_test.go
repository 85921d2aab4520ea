package sim_test

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"

	"github.com/calico-host/calico-host/pkg/nft"
)

// gen builds random rulesets from pkg/nft's constructors: the match and
// set kinds felix's rules use (pkg/felix/dataplane/rules), in tables of
// family ip, ip6 and inet (and arp), with the statements and verdicts the
// kernel allows where they are placed.
type gen struct {
	rng   *rand.Rand
	prios map[nft.Hook][]int32 // filter priorities still free, per hook
	nat   map[nft.Hook][]int32 // nat chain priorities still free
}

// Priorities of the test's own trace chains (-1000, -199) and of the
// kernel's conntrack and NAT core are never used, so that the order of a
// hook's chains is known.
var (
	filterPrios = []int32{-350, -300, -250, -180, -150, -120, -50, 0, 10, 50, 150, 200, 250}
	natPrios    = []int32{-190, -150, -110, -60, 0, 60, 110, 150, 300}
	filterHooks = []nft.Hook{nft.HookPrerouting, nft.HookInput, nft.HookForward, nft.HookOutput, nft.HookPostrouting}
	natHooks    = []nft.Hook{nft.HookPrerouting, nft.HookInput, nft.HookOutput, nft.HookPostrouting}
)

func newGen(rng *rand.Rand) *gen {
	g := &gen{rng: rng, prios: map[nft.Hook][]int32{}, nat: map[nft.Hook][]int32{}}
	for _, h := range filterHooks {
		g.prios[h] = slices.Clone(filterPrios)
		g.nat[h] = slices.Clone(natPrios)
	}
	return g
}

func (g *gen) n(k int) int           { return g.rng.IntN(k) }
func (g *gen) chance(p float64) bool { return g.rng.Float64() < p }
func pick[T any](g *gen, xs []T) T   { return xs[g.rng.IntN(len(xs))] }

// takePrio takes a free priority from pool.
func (g *gen) takePrio(pool map[nft.Hook][]int32, h nft.Hook) (int32, bool) {
	ps := pool[h]
	if len(ps) == 0 {
		return 0, false
	}
	i := g.n(len(ps))
	p := ps[i]
	pool[h] = slices.Delete(ps, i, i+1)
	return p, true
}

// ruleset is one random ruleset: an ip, an ip6 and an inet table, and
// sometimes an arp table.
func (g *gen) ruleset() []*nft.Table {
	out := []*nft.Table{g.table(nft.FamilyIP, "t4"), g.table(nft.FamilyIP6, "t6"), g.table(nft.FamilyInet, "ti")}
	if g.chance(0.3) {
		out = append(out, g.arpTable())
	}
	return out
}

// tgen builds one table.
type tgen struct {
	*gen
	t        *nft.Table
	versions []nft.IPVersion
}

// cgen builds the rules of one base chain and of the regular chains it
// owns (children), which only it and earlier children reach.
type cgen struct {
	*tgen
	hook     nft.Hook
	typ      nft.ChainType
	prio     int32
	children []string
	vmap     string
}

func (g *gen) table(f nft.Family, name string) *nft.Table {
	tg := &tgen{gen: g, t: nft.NewTable(f, name)}
	switch f {
	case nft.FamilyIP:
		tg.versions = []nft.IPVersion{nft.IPv4}
	case nft.FamilyIP6:
		tg.versions = []nft.IPVersion{nft.IPv6}
	default:
		tg.versions = []nft.IPVersion{nft.IPv4, nft.IPv6}
	}
	tg.sets()
	for range 1 + g.n(4) {
		tg.baseChain(false)
	}
	if g.chance(0.6) {
		tg.baseChain(true)
	}
	return tg.t
}

func setName(prefix string, v nft.IPVersion) string { return fmt.Sprintf("%s%d", prefix, v) }

// sets puts an interval set of prefixes and a named-port set (address .
// protocol . port) per IP version.
func (tg *tgen) sets() {
	for _, v := range tg.versions {
		s := &nft.Set{Name: setName("s", v), Type: addrType(v), Interval: true}
		for range 1 + tg.n(5) {
			s.Elements = append(s.Elements, nft.PrefixElem(tg.prefix(v)))
		}
		mustPut(tg.t.PutSet(s))
		np := &nft.Set{Name: setName("np", v), Type: nft.Concat(addrType(v), nft.TypeInetProto, nft.TypeInetService)}
		for range 1 + tg.n(4) {
			np.Elements = append(np.Elements, nft.ConcatElem(nft.AddrElem(tg.addr(v)),
				nft.ProtoKey(pick(tg.gen, []uint8{nft.ProtoTCP, nft.ProtoUDP, nft.ProtoSCTP})).Elem(), nft.PortElem(tg.port())))
		}
		mustPut(tg.t.PutSet(np))
	}
}

func mustPut(err error) {
	if err != nil {
		panic(err)
	}
}

func addrType(v nft.IPVersion) nft.DataType {
	if v == nft.IPv6 {
		return nft.TypeIPv6Addr
	}
	return nft.TypeIPv4Addr
}

// baseChain adds a base chain (of type nat when nat) with its children
// and verdict map.
func (tg *tgen) baseChain(nat bool) {
	c := &cgen{tgen: tg, typ: nft.ChainFilter}
	pool, hooks := tg.prios, filterHooks
	if nat {
		c.typ, pool, hooks = nft.ChainNAT, tg.nat, natHooks
	}
	c.hook = pick(tg.gen, hooks)
	if !nat && c.hook == nft.HookOutput && tg.chance(0.3) {
		c.typ = nft.ChainRoute // reroutes when it changes the mark
	}
	prio, ok := tg.takePrio(pool, c.hook)
	if !ok {
		return
	}
	c.prio = prio
	name := fmt.Sprintf("%s_%s_%d", c.typ, c.hook, len(tg.t.ChainNames()))
	for i := range tg.n(4) {
		c.children = append(c.children, fmt.Sprintf("%s_c%d", name, i))
	}
	if tg.chance(0.5) {
		c.vmap = name + "_vm"
	}
	pol := nft.PolicyAccept
	if tg.chance(0.2) {
		pol = nft.PolicyDrop
	}
	base := &nft.Chain{Name: name, Base: &nft.BaseChain{Type: c.typ, Hook: c.hook, Priority: prio, Policy: pol}, Rules: c.rules(-1)}
	mustPut(tg.t.PutChain(base))
	for i, child := range c.children {
		mustPut(tg.t.PutChain(&nft.Chain{Name: child, Rules: c.rules(i)}))
	}
	if c.vmap != "" {
		mustPut(tg.t.PutMap(c.verdictMap()))
	}
}

// later are the children chain i (-1: the base chain) may jump or go to.
func (c *cgen) later(i int) []string { return c.children[i+1:] }

func (c *cgen) verdictMap() *nft.Map {
	m := &nft.Map{Name: c.vmap, Type: nft.TypeIfname, Elements: map[nft.Key]nft.Verdict{}}
	for _, ifname := range []string{"a0", "b0", "lo"} {
		if !c.chance(0.7) {
			continue
		}
		vs := []nft.Verdict{nft.Accept(), nft.Drop(), nft.Continue(), nft.Return()}
		for _, ch := range c.children {
			vs = append(vs, nft.Jump(ch), nft.Goto(ch))
		}
		m.Elements[nft.IfnameKey(ifname)] = pick(c.gen, vs)
	}
	return m
}

// rules makes the rules of chain i (-1: the base chain).
func (c *cgen) rules(i int) []nft.Rule {
	var rs []nft.Rule
	for range 1 + c.n(6) {
		rs = append(rs, c.rule(i))
	}
	return rs
}

// rule is a random rule of chain i that lowers (a draw mixing two
// transport protocols is drawn again).
func (c *cgen) rule(i int) nft.Rule {
	for {
		r := c.draw(i)
		if _, err := nft.LowerRule(c.t.Family, r); err == nil {
			return r
		}
	}
}

func (c *cgen) draw(i int) nft.Rule {
	v := pick(c.gen, c.versions)
	var x []nft.Expr
	for range c.n(4) {
		x = append(x, c.match(v))
	}
	x = append(x, c.statements(v)...)
	if vd := c.verdict(i); vd != nil {
		x = append(x, vd)
	}
	if len(x) == 0 {
		x = []nft.Expr{nft.Counter()}
	}
	r := nft.NewRule(x...)
	if c.chance(0.5) {
		r = r.WithComment(fmt.Sprintf("rule %d of %d", len(x), i))
	}
	return r
}

func (c *cgen) hasIIF() bool {
	return c.hook == nft.HookPrerouting || c.hook == nft.HookInput || c.hook == nft.HookForward
}

func (c *cgen) hasOIF() bool {
	return c.hook == nft.HookOutput || c.hook == nft.HookPostrouting || c.hook == nft.HookForward
}

// match is one random match of IP version v.
func (c *cgen) match(v nft.IPVersion) nft.Expr {
	m := c.positiveMatch(v)
	if c.chance(0.25) {
		return nft.Not(m)
	}
	return m
}

func (c *cgen) positiveMatch(v nft.IPVersion) nft.Match {
	dst := c.chance(0.5)
	switch c.n(16) {
	case 0:
		return nft.L4Proto(pick(c.gen, []uint8{nft.ProtoTCP, nft.ProtoUDP, icmpProto(v), nft.ProtoSCTP, 253}))
	case 1:
		return addrMatch(dst, c.prefix(v))
	case 2:
		return addrList(dst, c.prefix(v), c.prefix(v), c.prefix(v))
	case 3:
		return nft.InSet(setName("s", v), addrField(dst, v))
	case 4:
		return nft.InSet(setName("np", v), addrField(dst, v), nft.FieldL4Proto, nft.FieldDPort(0))
	case 5:
		return c.ports(dst)
	case 6:
		if c.chance(0.5) {
			return nft.ICMPType(v, pick(c.gen, echoTypes(v)))
		}
		return nft.ICMPCode(v, uint8(c.n(2)))
	case 7:
		return c.ifname(dst)
	case 8:
		return nft.InList([]nft.Field{ifField(dst)}, nft.IfnamePrefixElem(pick(c.gen, []string{"a", "b", "l"})), nft.IfnameElem(pick(c.gen, []string{"a0", "b0", "lo"})))
	case 9: // felix's allowSpoofedSourcePrefixes: elements that do not overlap (the kernel refuses that)
		return nft.InList([]nft.Field{nft.FieldIIFName, nft.FieldSAddr(v)},
			nft.ConcatElem(nft.IfnameElem(pick(c.gen, []string{"a0", "lo"})), nft.PrefixElem(c.prefix(v))),
			nft.ConcatElem(nft.IfnamePrefixElem("b"), nft.PrefixElem(c.prefix(v))))
	case 10:
		return nft.MarkMasked(pick(c.gen, []uint32{0xff, 0x10000, 0xffffffff}), pick(c.gen, []uint32{0, 0x10, 0x10000, 0x10010}))
	case 11:
		return nft.CTStateIn(nft.CTState(pick(c.gen, []uint32{1, 2, 4, 8, 64, 2 | 4, 1 | 8})))
	case 12:
		return nft.CTStatusIn(nft.CTStatus(pick(c.gen, []uint32{32, 16, 2, 8, 2 | 32})))
	case 13:
		return c.fib()
	case 14:
		if c.versions[0] != c.versions[len(c.versions)-1] { // inet
			return nft.NFProto(v)
		}
		return nft.L4Proto(nft.ProtoUDP)
	}
	if c.hook == nft.HookPostrouting {
		return nft.L4Proto(nft.ProtoTCP)
	}
	return nft.EtherSAddr(pick(c.gen, []net.HardwareAddr{{2, 0, 0, 0, 0, 1}, {0, 0, 0, 0, 0, 0}}))
}

func icmpProto(v nft.IPVersion) uint8 {
	if v == nft.IPv6 {
		return nft.ProtoICMPv6
	}
	return nft.ProtoICMP
}

func echoTypes(v nft.IPVersion) []uint8 {
	if v == nft.IPv6 {
		return []uint8{128, 129}
	}
	return []uint8{8, 0}
}

func addrMatch(dst bool, p netip.Prefix) nft.Match {
	if dst {
		return nft.DAddr(p)
	}
	return nft.SAddr(p)
}

func addrList(dst bool, ps ...netip.Prefix) nft.Match {
	if dst {
		return nft.DAddrIn(ps...)
	}
	return nft.SAddrIn(ps...)
}

func addrField(dst bool, v nft.IPVersion) nft.Field {
	if dst {
		return nft.FieldDAddr(v)
	}
	return nft.FieldSAddr(v)
}

func ifField(out bool) nft.Field {
	if out {
		return nft.FieldOIFName
	}
	return nft.FieldIIFName
}

func (c *cgen) ports(dst bool) nft.Match {
	proto := pick(c.gen, []uint8{nft.ProtoTCP, nft.ProtoUDP, nft.ProtoSCTP})
	var rs []nft.PortRange
	for range 1 + c.n(3) {
		if c.chance(0.3) {
			rs = append(rs, nft.Ports(1000, 1010+uint16(c.n(20))))
		} else {
			rs = append(rs, nft.Port(c.port()))
		}
	}
	if dst {
		return nft.DPort(proto, rs...)
	}
	return nft.SPort(proto, rs...)
}

func (c *cgen) ifname(out bool) nft.Match {
	name := pick(c.gen, []string{"a0", "b0", "lo", "a*", "b*", "x0"})
	if out {
		return nft.OIFName(name)
	}
	return nft.IIFName(name)
}

// fib is a fib match the kernel allows in the chain's hook.
func (c *cgen) fib() nft.Match {
	var opts []nft.Match
	opts = append(opts, nft.FibAddrType(nft.FibDAddr, nft.AddrTypeLocal), nft.FibAddrType(nft.FibSAddr, nft.AddrTypeLocal),
		nft.FibAddrType(nft.FibDAddr, nft.AddrTypeUnicast))
	if c.hasIIF() {
		opts = append(opts, nft.FibNoRoute(nft.FibSAddr|nft.FibMark|nft.FibIIF), nft.FibAddrType(nft.FibDAddr|nft.FibIIF, nft.AddrTypeLocal))
	}
	if c.hasOIF() {
		opts = append(opts, nft.FibAddrType(nft.FibSAddr|nft.FibOIF, nft.AddrTypeLocal))
	}
	if c.hasIIF() || c.hook == nft.HookInput {
		opts = append(opts, nft.FibNoRoute(nft.FibDAddr))
	}
	return pick(c.gen, opts)
}

// statements are the rule's statements before its verdict.
func (c *cgen) statements(v nft.IPVersion) []nft.Expr {
	var x []nft.Expr
	if c.chance(0.4) {
		x = append(x, nft.Counter())
	}
	if c.chance(0.15) {
		x = append(x, nft.LogAt("sim: ", nft.LogLevel(c.n(8))))
	}
	if c.chance(0.25) {
		x = append(x, pick(c.gen, []nft.Expr{nft.OrMark(0x10), nft.AndMark(0xffff00ff), nft.SetMark(0x10000), nft.SetMarkBits(0xff, 0x10010)}))
	}
	if c.typ != nft.ChainNAT && c.prio < -200 && (c.hook == nft.HookPrerouting || c.hook == nft.HookOutput) && c.chance(0.2) {
		x = append(x, nft.Notrack())
	}
	if c.typ == nft.ChainNAT && c.chance(0.5) {
		x = append(x, c.nat(v)...)
	}
	return x
}

// nat is a NAT statement for the chain's hook, with the protocol match a
// port needs.
func (c *cgen) nat(v nft.IPVersion) []nft.Expr {
	proto := nft.L4Proto(pick(c.gen, []uint8{nft.ProtoTCP, nft.ProtoUDP}))
	switch c.hook {
	case nft.HookPrerouting, nft.HookOutput:
		if c.chance(0.5) {
			return []nft.Expr{nft.DNAT(c.natTarget(v))}
		}
		return []nft.Expr{proto, nft.DNATToPort(c.natTarget(v), c.port())}
	case nft.HookPostrouting:
		switch c.n(6) {
		case 0:
			return []nft.Expr{nft.Masquerade()}
		case 1:
			return []nft.Expr{proto, nft.MasqueradeToPorts(nft.Ports(1000, 1020), c.chance(0.3))}
		case 2:
			return []nft.Expr{proto, nft.SNATToPorts(c.natTarget(v), nft.Ports(2000, 2000))}
		case 3:
			return []nft.Expr{nft.MasqueradeFullyRandom()}
		}
	}
	return []nft.Expr{nft.SNAT(c.natTarget(v))}
}

func (c *cgen) natTarget(v nft.IPVersion) netip.Addr {
	if v == nft.IPv6 {
		return pick(c.gen, []netip.Addr{a("fd5c:b::3"), a("fd5c:1::1"), a("fd5c:a::4"), a("fd5c:2::1")})
	}
	return pick(c.gen, []netip.Addr{a("10.65.2.3"), a("198.18.1.1"), a("10.65.1.4"), a("198.18.2.1")})
}

// verdict ends a rule of chain i (-1: the base chain), or nil.
func (c *cgen) verdict(i int) nft.Expr {
	switch c.n(10) {
	case 0, 1:
		return nft.Accept()
	case 2:
		return nft.Drop()
	case 3:
		return nft.Return()
	case 4, 5:
		if later := c.later(i); len(later) > 0 {
			if c.chance(0.5) {
				return nft.Jump(pick(c.gen, later))
			}
			return nft.Goto(pick(c.gen, later))
		}
	case 6:
		if c.vmap != "" && i == -1 {
			if c.hasOIF() && c.chance(0.5) {
				return nft.OIFNameVmap(c.vmap)
			}
			return nft.IIFNameVmap(c.vmap)
		}
	case 7:
		if c.typ != nft.ChainNAT && (c.hook == nft.HookInput || c.hook == nft.HookForward || c.hook == nft.HookOutput) {
			return nft.Reject()
		}
	}
	return nil
}

// Addresses: the hosts the probes use, and prefixes around them.
var (
	hosts4 = []string{"10.65.1.1", "10.65.1.4", "10.65.1.7", "10.65.2.3", "10.65.2.5", "10.66.0.1", "198.18.1.1", "198.18.1.2", "198.18.2.1", "198.18.2.2"}
	hosts6 = []string{"fd5c:a::1", "fd5c:a::4", "fd5c:a::7", "fd5c:b::3", "fd5c:b::5", "fd5c:ff::1", "fd5c:1::1", "fd5c:1::2", "fd5c:2::1", "fd5c:2::2"}
	ports  = []uint16{22, 53, 80, 443, 1000, 1005, 8080}
)

func (g *gen) addr(v nft.IPVersion) netip.Addr {
	if v == nft.IPv6 {
		return a(pick(g, hosts6))
	}
	return a(pick(g, hosts4))
}

// prefix is a prefix around a test host: the host, or a /29, /24, /20 or
// /16 (v4; /125, /120, /64, /60, /48 for v6).
func (g *gen) prefix(v nft.IPVersion) netip.Prefix {
	bits := pick(g, []int{32, 29, 24, 20, 16})
	if v == nft.IPv6 {
		bits = pick(g, []int{128, 125, 120, 64, 60, 48})
	}
	return netip.PrefixFrom(g.addr(v), bits).Masked()
}

func (g *gen) port() uint16 { return pick(g, ports) }

// arpTable is an arp table with an input chain.
func (g *gen) arpTable() *nft.Table {
	t := nft.NewTable(nft.FamilyARP, "ta")
	pol := nft.PolicyAccept
	if g.chance(0.2) {
		pol = nft.PolicyDrop
	}
	c := &nft.Chain{Name: "in", Base: &nft.BaseChain{Type: nft.ChainFilter, Hook: nft.HookInput, Priority: pick(g, filterPrios), Policy: pol}}
	for range 1 + g.n(5) {
		var x []nft.Expr
		for range g.n(3) {
			m := pick(g, []nft.Match{
				nft.ARPOp(uint16(1 + g.n(2))), nft.ARPSAddrIP(g.addr(nft.IPv4)), nft.ARPDAddrIP(g.addr(nft.IPv4)),
				nft.IIFName(pick(g, []string{"a0", "b*"})), nft.ARPSAddrEther(arpMAC(uint16(g.n(4)))),
			})
			if g.chance(0.25) {
				m = nft.Not(m)
			}
			x = append(x, m)
		}
		if g.chance(0.4) {
			x = append(x, nft.Counter())
		}
		x = append(x, pick(g, []nft.Expr{nft.Accept(), nft.Drop(), nft.Counter(), nft.OrMark(0x20)}))
		c.Rules = append(c.Rules, nft.NewRule(x...))
	}
	mustPut(t.PutChain(c))
	return t
}

// arpMAC is the sender MAC address of the test's ARP probe id.
func arpMAC(id uint16) net.HardwareAddr {
	return net.HardwareAddr{2, 0x5e, 0, 0, byte(id >> 8), byte(id)}
}
