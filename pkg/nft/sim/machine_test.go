package sim

import (
	"strings"
	"testing"

	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/vm"
)

// An instruction the simulator does not model stops the run with an error
// naming it, whatever the rule around it.
func TestUnmodeledInstructionIsAnError(t *testing.T) {
	for _, x := range []vm.Expr{
		vm.Unknown{Kind: "quota"},
		vm.Meta{Key: 2 /* priority */, Reg: vm.Reg1},
		vm.Meta{Key: 12 /* nftrace */, Reg: vm.Reg1, Set: true},
		vm.Ct{Key: 3 /* mark */, DReg: vm.Reg1},
		vm.Byteorder{SReg: vm.Reg1, DReg: vm.Reg1, Len: 4, Size: 4},
	} {
		c := &chain{t: &table{id: nft.TableID{Family: nft.FamilyIP, Name: "t"}}, name: "c"}
		c.rules = []rule{{exprs: []vm.Expr{x}}}
		st := &state{pkt: Packet{Proto: 0x800, Network: make([]byte, 20)}, inf: info{nfproto: 2}}
		_, _, err := st.runRules(c, 0, new([]Step))
		if err == nil || !strings.Contains(err.Error(), "chain c rule 0") || !strings.Contains(err.Error(), "not simulated") {
			t.Errorf("%s: err %v, want an error naming chain c rule 0", x, err)
		}
	}
}
