package nfttest

import (
	"fmt"
	"net/netip"

	"github.com/calico-host/calico-host/pkg/nft"
)

// Scale sizes a felix-shaped ruleset.
type Scale struct {
	Chains        int // regular chains of RulesPerChain rules each
	RulesPerChain int
	Sets          int // interval sets of 10 to MaxSetSize addresses
	MaxSetSize    int
	MapKeys       int // interface names in the dispatch verdict map
}

// FelixScale is the benchmark's size: 2,000 chains of 10 rules, 1,000 sets
// of 10 to 1,000 elements, a map of 1,000 keys.
var FelixScale = Scale{Chains: 2000, RulesPerChain: 10, Sets: 1000, MaxSetSize: 1000, MapKeys: 1000}

const (
	markAccept = 0x10000
	markPass   = 0x20000
)

// Felix builds an ip table shaped like felix's: policy chains looking up
// sets, per-interface chains reached through a verdict map, base chains.
func Felix(s Scale) *nft.Table {
	t := nft.NewTable(nft.FamilyIP, "calico")
	for i := range s.Sets {
		must(t.PutSet(felixSet(i, s)))
	}
	m := &nft.Map{Name: "cali-from-wl-dispatch", Type: nft.TypeIfname, Elements: map[nft.Key]nft.Verdict{}}
	for i := range s.Chains {
		must(t.PutChain(felixChain(i, s)))
	}
	for i := range s.MapKeys {
		m.Elements[nft.IfnameKey(fmt.Sprintf("cali%011d", i))] = nft.Goto(chainName(i % s.Chains))
	}
	must(t.PutMap(m))
	must(t.PutChain(&nft.Chain{Name: "filter-FORWARD", Base: base(nft.ChainFilter, nft.HookForward, nft.PriorityFilter), Rules: []nft.Rule{
		nft.NewRule(nft.CTStateIn(nft.CTStateEstablished|nft.CTStateRelated), nft.Accept()),
		nft.NewRule(nft.CTStateIn(nft.CTStateInvalid), nft.Drop()),
		nft.NewRule(nft.IIFName("cali*"), nft.IIFNameVmap(m.Name)),
		nft.NewRule(nft.MarkMasked(markAccept, markAccept), nft.Accept()),
	}}))
	return t
}

func chainName(i int) string { return fmt.Sprintf("cali-pi-policy-%04d", i) }
func setName(i int) string   { return fmt.Sprintf("cali40s-%04d", i) }

func felixSet(i int, s Scale) *nft.Set {
	n := 10
	if s.Sets > 1 {
		n += i * (s.MaxSetSize - 10) / (s.Sets - 1)
	}
	set := &nft.Set{Name: setName(i), Type: nft.TypeIPv4Addr, Interval: true, Elements: make([]nft.Element, 0, n)}
	for j := range n {
		v := uint32(10<<24 | i<<12 | 2*j) // no two adjacent: no merging
		set.Elements = append(set.Elements, nft.AddrElem(netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})))
	}
	return set
}

// felixChain builds a policy chain: rules matching sets, ports and
// protocols that set a mark and return, as felix renders policies.
func felixChain(i int, s Scale) *nft.Chain {
	c := &nft.Chain{Name: chainName(i)}
	for j := range s.RulesPerChain {
		set := setName((i + j) % max(s.Sets, 1))
		var r nft.Rule
		switch j % 5 {
		case 0:
			r = nft.NewRule(nft.L4Proto(nft.ProtoTCP), nft.SAddrInSet(nft.IPv4, set), nft.DPort(nft.ProtoTCP, nft.Port(80), nft.Port(443)), nft.OrMark(markAccept))
		case 1:
			r = nft.NewRule(nft.MarkMasked(markAccept, markAccept), nft.Return())
		case 2:
			r = nft.NewRule(nft.L4Proto(nft.ProtoUDP), nft.SAddr(netip.MustParsePrefix("10.65.0.0/16")), nft.DPort(nft.ProtoUDP, nft.Port(53)), nft.OrMark(markAccept))
		case 3:
			r = nft.NewRule(nft.Not(nft.DAddrInSet(nft.IPv4, set)), nft.Counter(), nft.AndMark(^uint32(markPass)))
		default:
			r = nft.NewRule(nft.ICMPType(nft.IPv4, 8), nft.Log("calico-packet: "), nft.Drop())
		}
		c.Rules = append(c.Rules, r.WithComment(fmt.Sprintf("policy %d rule %d", i, j)))
	}
	return c
}
