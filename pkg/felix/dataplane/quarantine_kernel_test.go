package dataplane

import (
	"context"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/kernel"
)

// refusingKernel is the netlink backend refusing, as the kernel does, every batch holding a
// rule whose text contains marker (the refusal attributed to that rule).
type refusingKernel struct {
	*kernel.Backend
	marker string
}

func (r refusingKernel) Commit(ctx context.Context, b *nft.Batch) (nft.CommitInfo, error) {
	for i := range b.Ops {
		op := &b.Ops[i]
		if op.Kind == nft.OpAddRule && strings.Contains(op.Rule.String(), r.marker) {
			oe := nft.ObjectError{Object: op.Object(), Op: op.Kind, Err: unix.ERANGE}
			return nft.CommitInfo{}, &nft.CommitError{Objects: []nft.ObjectError{oe}, Kernel: true}
		}
	}
	return r.Backend.Commit(ctx, b)
}

func nsKernel(t *testing.T, ns *testNS) *kernel.Backend {
	t.Helper()
	f, err := os.Open(ns.path())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	kb, err := kernel.New(kernel.Config{NetNS: int(f.Fd())})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kb.Close() })
	return kb
}

// TestKernelQuarantine: with real packets, a policy that cannot be programmed makes its
// endpoint fail closed (its allow-all is not in force: traffic to it is dropped) while another
// endpoint and a workload added afterwards pass traffic.
func TestKernelQuarantine(t *testing.T) {
	tp := newTopology(t)
	a := tp.addWorkload(t, "a", ifA, ipA)
	b := tp.addWorkload(t, "b", ifB, ipB)
	listenTCP(t, a, ipA, 8080)
	listenTCP(t, b, ipB, 8080)
	bad, open := gnpID("bad"), gnpID("open")
	k := startDataplaneWith(t, tp, Config{}, []Option{WithNFTBackend(refusingKernel{nsKernel(t, tp.host), "6666"})},
		egressAll(),
		policy(bad, []calc.Rule{{Action: calc.RuleDeny, Protocol: 6, DstPorts: ports(6666)}, allow()}, nil),
		policy(open, []calc.Rule{allow()}, nil),
		kwep("a", ifA, ipA, tier("default", ids(open), nil)),
		kwep("b", ifB, ipB, tier("default", ids(bad), nil)))
	check(t, "quarantined policy",
		expectation{"a to b (quarantined policy)", func() bool { return canTCP(t, a, ipB, 8080) }, false},
		expectation{"b to a", func() bool { return canTCP(t, b, ipA, 8080) }, true})
	c := tp.addWorkload(t, "c", "cali0000000000c", "10.65.0.3")
	listenTCP(t, c, "10.65.0.3", 8080)
	k.send(wep("c", "cali0000000000c", []string{"10.65.0.3/32"}, withProfiles("egress"), withTiers(tier("default", ids(open), nil))))
	check(t, "workload added later",
		expectation{"a to c", func() bool { return canTCP(t, a, "10.65.0.3", 8080) }, true})
	if k.dp.Quarantined() != 1 {
		t.Fatalf("Quarantined() = %d, want 1", k.dp.Quarantined())
	}
}
