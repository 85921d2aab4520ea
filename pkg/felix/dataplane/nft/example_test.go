package nft_test

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/calico-host/calico-host/pkg/felix/dataplane/nft"
	"github.com/rs/zerolog"
)

// A renderer builds the whole desired table and applies it; the Applier
// works out what to change.
func Example() {
	rs := nft.NewRuleset()
	rs.AddSet(&nft.Set{Name: "cali40s-fe", Type: nft.TypeIPv4Addr, Interval: true,
		Elements: []string{"10.65.0.0/24", "10.65.1.7"}})
	rs.AddMap(&nft.Map{Name: "cali-to-wl-dispatch", KeyType: nft.TypeIfname,
		Elements: map[string]nft.Verdict{"cali1a2b": nft.Goto("cali-tw-cali1a2b")}})
	rs.AddChain(&nft.Chain{Name: "filter-FORWARD",
		Base:  &nft.BaseChain{Type: nft.TypeFilter, Hook: nft.HookForward, Priority: nft.PriorityFilter},
		Rules: []nft.Rule{nft.NewRule(nft.OIFName("cali*"), nft.OIFNameVmap("cali-to-wl-dispatch"))}})
	rs.AddChain(&nft.Chain{Name: "cali-tw-cali1a2b", Rules: []nft.Rule{
		nft.NewRule(nft.CTStateIn(nft.CTStateEstablished|nft.CTStateRelated), nft.Accept()),
		nft.NewRule(nft.L4Proto(nft.ProtoTCP), nft.SAddrInSet(nft.IPv4, "cali40s-fe"),
			nft.DPort(nft.ProtoTCP, nft.Port(80), nft.Port(443)), nft.Counter(), nft.Accept()),
		nft.NewRule(nft.Not(nft.DAddr(netip.MustParsePrefix("10.65.0.0/16"))), nft.Drop()).WithComment("not ours"),
	}})

	kernel := nft.NewFake() // nft.NewNetlink(nft.NetlinkConfig{}) on a real host
	applier := nft.NewApplier(kernel, zerolog.Nop())
	stats, err := applier.Apply(context.Background(), rs)
	if err != nil {
		panic(err)
	}
	fmt.Printf("full sync %v, %d chains added\n", stats.FullSync, stats.ChainsAdded)
	fmt.Print(kernel.Dump())
	// Output:
	// full sync true, 2 chains added
	// table inet calico {
	// 	set cali40s-fe {
	// 		type ipv4_addr
	// 		flags interval
	// 		elements = { 10.65.0.0/24, 10.65.1.7 }
	// 	}
	// 	map cali-to-wl-dispatch {
	// 		type ifname : verdict
	// 		elements = { "cali1a2b" : goto cali-tw-cali1a2b }
	// 	}
	// 	chain cali-tw-cali1a2b {
	// 		ct state established,related accept
	// 		meta l4proto tcp ip saddr @cali40s-fe tcp dport { 80, 443 } counter accept
	// 		ip daddr != 10.65.0.0/16 drop comment "not ours"
	// 	}
	// 	chain filter-FORWARD {
	// 		type filter hook forward priority filter; policy accept;
	// 		oifname "cali*" oifname vmap @cali-to-wl-dispatch
	// 	}
	// }
}
