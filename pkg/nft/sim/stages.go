package sim

import (
	"cmp"
	"fmt"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/calico-host/calico-host/pkg/nft"
)

// stageKind is what runs at one priority of a hook.
type stageKind uint8

const (
	// stageChain is a base chain of type filter or route.
	stageChain stageKind = iota + 1
	// stageNAT is the NAT core's hook: it runs the hook's nat chains in
	// their own priority order (nf_nat_inet_fn), for new connections only.
	stageNAT
	// stageConntrack is conntrack's hook (nf_conntrack_in), which attaches
	// the connection in prerouting and output.
	stageConntrack
)

// Priorities of the kernel's own hooks (NF_IP_PRI_*, the same for IPv6).
const (
	prioConntrack int32 = -200
	prioNATDst    int32 = -100
	prioNATSrc    int32 = 100
)

// stage is one entry of a hook: a base chain, the NAT core with the nat
// chains it runs, or conntrack.
type stage struct {
	kind   stageKind
	prio   int32
	order  int // the position of the chain's table among Compile's arguments
	chains []*chain
}

// natPriority is the priority the NAT core runs the nat chains of a hook
// at, whatever their own priorities (nf_nat_ipv4_ops, nf_nat_ipv6_ops).
func natPriority(h nft.Hook) int32 {
	if h == nft.HookPrerouting || h == nft.HookOutput {
		return prioNATDst
	}
	return prioNATSrc
}

// sortStages orders a hook's entries as the kernel does: nat chains are
// gathered into the NAT core's stage (present when the family has nat
// chains, in any hook but forward), conntrack joins prerouting and output
// of the IP families, and equal priorities are refused unless they
// are chains of different tables (then the argument order decides).
func sortStages(k hookKey, in []stage, natCore bool) ([]stage, error) {
	var out []stage
	nat := stage{kind: stageNAT, prio: natPriority(k.hook)}
	var natOrders []int
	for _, s := range in {
		if s.chains[0].base.Type == nft.ChainNAT {
			nat.chains = append(nat.chains, s.chains[0])
			natOrders = append(natOrders, s.order)
			continue
		}
		out = append(out, s)
	}
	if natCore && k.hook != nft.HookForward {
		if err := sortNAT(k, &nat, natOrders); err != nil {
			return nil, err
		}
		out = append(out, nat)
	}
	if k.nfproto != unix.NFPROTO_ARP && (k.hook == nft.HookPrerouting || k.hook == nft.HookOutput) {
		out = append(out, stage{kind: stageConntrack, prio: prioConntrack})
	}
	slices.SortStableFunc(out, func(a, b stage) int {
		return cmp.Or(cmp.Compare(a.prio, b.prio), cmp.Compare(a.order, b.order))
	})
	for i := 1; i < len(out); i++ {
		a, b := out[i-1], out[i]
		if a.prio == b.prio && (a.kind != stageChain || b.kind != stageChain || a.order == b.order) {
			return nil, fmt.Errorf("hook %s: %s and %s have the same priority %d: their order is not known",
				k.hook, a.name(), b.name(), a.prio)
		}
	}
	return out, nil
}

// sortNAT orders the nat chains of a hook by priority, then table order.
func sortNAT(k hookKey, nat *stage, orders []int) error {
	idx := make([]int, len(nat.chains))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(i, j int) int {
		return cmp.Or(cmp.Compare(nat.chains[i].base.Priority, nat.chains[j].base.Priority), cmp.Compare(orders[i], orders[j]))
	})
	sorted := make([]*chain, len(idx))
	for n, i := range idx {
		sorted[n] = nat.chains[i]
		if n > 0 {
			p := idx[n-1]
			if nat.chains[p].base.Priority == nat.chains[i].base.Priority && orders[p] == orders[i] {
				return fmt.Errorf("hook %s: nat chains %s and %s have the same priority: their order is not known",
					k.hook, nat.chains[p].name, nat.chains[i].name)
			}
		}
	}
	nat.chains = sorted
	return nil
}

func (s stage) name() string {
	switch s.kind {
	case stageNAT:
		return "the NAT core"
	case stageConntrack:
		return "conntrack"
	}
	return fmt.Sprintf("chain %s of table %s", s.chains[0].name, s.chains[0].t.id)
}
