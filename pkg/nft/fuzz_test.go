package nft_test

import (
	"testing"

	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/internal/nfttest"
	"github.com/calico-host/calico-host/pkg/nft/internal/nla"
	"github.com/calico-host/calico-host/pkg/nft/vm"
)

// FuzzRaise feeds arbitrary rule expression lists (seeded with every
// golden rule's encoding) to the decoder: whatever a foreign or damaged
// rule holds, decoding returns an error or expressions, never panics, and
// what it returns prints.
func FuzzRaise(f *testing.F) {
	for _, tb := range nfttest.Golden() {
		for _, name := range tb.ChainNames() {
			for _, r := range tb.Chain(name).Rules {
				lw, err := nft.LowerRule(tb.Family, r)
				if err != nil {
					f.Fatal(err)
				}
				var b nla.Builder
				vm.Marshal(&b, lw.Exprs)
				f.Add(uint8(tb.Family), b.Buf)
			}
		}
	}
	anon := func(string) (nft.AnonSet, bool) {
		return nft.AnonSet{Type: nft.TypeInetService, Elements: []nft.Element{nft.PortElem(1)}}, true
	}
	f.Fuzz(func(t *testing.T, fam uint8, data []byte) {
		exprs, err := vm.Unmarshal(data)
		if err != nil {
			return
		}
		out, _ := nft.RaiseRule(nft.Family(fam), exprs, anon)
		_ = nft.Rule{Exprs: out}.Text(nft.Family(fam))
	})
}
