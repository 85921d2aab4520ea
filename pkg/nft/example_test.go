package nft_test

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/apply"
	"github.com/calico-host/calico-host/pkg/nft/fake"
)

// Example builds two tables (one per IP version), each with a set, a
// verdict map and chains, and applies them to the in-memory fake in one
// batch. With kernel.New instead of fake.New the same code programs the
// kernel.
func Example() {
	ip := nft.NewTable(nft.FamilyIP, "calico")
	ip6 := nft.NewTable(nft.FamilyIP6, "calico")
	for _, t := range []*nft.Table{ip, ip6} {
		v := nft.IPv4
		allowed := netip.MustParsePrefix("10.65.0.0/16")
		if t.Family == nft.FamilyIP6 {
			v, allowed = nft.IPv6, netip.MustParsePrefix("fd5c::/16")
		}
		must(t.PutSet(&nft.Set{
			Name: "allowed", Type: addrType(v), Interval: true,
			Elements: []nft.Element{nft.PrefixElem(allowed)},
		}))
		must(t.PutChain(&nft.Chain{Name: "from-cali1", Rules: []nft.Rule{
			nft.NewRule(nft.SAddrInSet(v, "allowed"), nft.DPort(nft.ProtoTCP, nft.Port(80), nft.Port(443)), nft.Counter(), nft.Accept()),
			nft.NewRule(nft.Drop()).WithComment("default deny"),
		}}))
		must(t.PutMap(&nft.Map{Name: "from-wl", Type: nft.TypeIfname, Elements: map[nft.Key]nft.Verdict{
			nft.IfnameKey("cali1"): nft.Goto("from-cali1"),
		}}))
		must(t.PutChain(&nft.Chain{
			Name: "forward",
			Base: &nft.BaseChain{Type: nft.ChainFilter, Hook: nft.HookForward, Priority: nft.PriorityFilter},
			Rules: []nft.Rule{
				nft.NewRule(nft.CTStateIn(nft.CTStateEstablished|nft.CTStateRelated), nft.Accept()),
				nft.NewRule(nft.IIFName("cali*"), nft.IIFNameVmap("from-wl")),
			},
		}))
	}

	backend := fake.New()
	a := apply.New(backend, apply.Options{
		Tables: []nft.TableID{ip.ID(), ip6.ID()},
		Log:    zerolog.Nop(),
	})
	st, err := a.Apply(context.Background(), ip, ip6)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("full sync %v: %d chains, %d rules, %d operations in one batch\n", st.FullSync, st.ChainsAdded, st.RulesWritten, st.Ops)

	// A partial sync: only the changed set is planned.
	must(ip.UpdateSet("allowed", []nft.Element{nft.AddrElem(netip.MustParseAddr("198.18.0.1"))}, nil))
	st, _ = a.Apply(context.Background(), ip, ip6)
	fmt.Printf("partial sync: %d element added, %d operation\n", st.ElementsAdded, st.Ops)

	fmt.Print(backend.Dump())
	// Output:
	// full sync true: 4 chains, 8 rules, 22 operations in one batch
	// partial sync: 1 element added, 1 operation
	// table ip calico {
	// 	set allowed {
	// 		type ipv4_addr
	// 		flags interval
	// 		elements = { 10.65.0.0/16, 198.18.0.1 }
	// 	}
	//
	// 	map from-wl {
	// 		type ifname : verdict
	// 		elements = { "cali1" : goto from-cali1 }
	// 	}
	//
	// 	chain forward {
	// 		type filter hook forward priority filter; policy accept;
	// 		ct state established,related accept
	// 		iifname "cali*" iifname vmap @from-wl
	// 	}
	//
	// 	chain from-cali1 {
	// 		ip saddr @allowed tcp dport { 80, 443 } counter accept
	// 		drop comment "default deny"
	// 	}
	// }
	// table ip6 calico {
	// 	set allowed {
	// 		type ipv6_addr
	// 		flags interval
	// 		elements = { fd5c::/16 }
	// 	}
	//
	// 	map from-wl {
	// 		type ifname : verdict
	// 		elements = { "cali1" : goto from-cali1 }
	// 	}
	//
	// 	chain forward {
	// 		type filter hook forward priority filter; policy accept;
	// 		ct state established,related accept
	// 		iifname "cali*" iifname vmap @from-wl
	// 	}
	//
	// 	chain from-cali1 {
	// 		ip6 saddr @allowed tcp dport { 80, 443 } counter accept
	// 		drop comment "default deny"
	// 	}
	// }
}

func addrType(v nft.IPVersion) nft.DataType {
	if v == nft.IPv6 {
		return nft.TypeIPv6Addr
	}
	return nft.TypeIPv4Addr
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}
