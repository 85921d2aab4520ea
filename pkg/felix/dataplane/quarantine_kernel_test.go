package dataplane

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/netnstest"
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

func nsKernel(t *testing.T, ns *netnstest.NS) *kernel.Backend {
	t.Helper()
	f, err := os.Open(ns.Path())
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

// refusingAllKernel is the netlink backend refusing, as the kernel does, every rule whose text
// contains marker: the kernel goes on through a refused batch and reports every operation it
// refuses, each with its own error. It counts the commits it is asked for.
type refusingAllKernel struct {
	*kernel.Backend
	marker  string
	commits *int
}

func (r refusingAllKernel) Commit(ctx context.Context, b *nft.Batch) (nft.CommitInfo, error) {
	*r.commits++
	var errs []nft.ObjectError
	for i := range b.Ops {
		op := &b.Ops[i]
		if op.Kind == nft.OpAddRule && strings.Contains(op.Rule.String(), r.marker) {
			errs = append(errs, nft.ObjectError{Object: op.Object(), Op: op.Kind, Err: unix.ERANGE})
		}
	}
	if len(errs) > 0 {
		return nft.CommitInfo{}, &nft.CommitError{Objects: errs, Kernel: true}
	}
	return r.Backend.Commit(ctx, b)
}

// TestKernelQuarantineConverges: however many objects the kernel refuses in one batch (1, 40,
// 1,000 policies), one apply quarantines them all and programs the rest, in two commits (the
// refused one and the one that goes through). The wall time of that apply is logged.
func TestKernelQuarantineConverges(t *testing.T) {
	for _, n := range []int{1, 40, 1000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			netnstest.Require(t, "nft", "sysctl")
			ns := netnstest.New(t, "host")
			commits := 0
			dp, err := New(FelixDefaults(Config{Hostname: "host1", NetNS: ns.Path()}), testLogger(t),
				WithNFTBackend(refusingAllKernel{nsKernel(t, ns), "6666", &commits}), WithRoutes(nullRoutes{}),
				WithInterfaces(nullInterfaces{}), WithVXLAN(nullVXLAN{}), WithIPIP(nullIPIP{}))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(dp.close)
			dp.model.inSync, dp.model.ifacesInSync = true, true
			dp.model.applyIface(iface(ifB, true))
			var tierIDs []calc.PolicyID
			for i := range n {
				id := gnpID(fmt.Sprint("bad-", i))
				rs := []calc.Rule{{Action: calc.RuleDeny, Protocol: 6, DstPorts: ports(6666)}, {Action: calc.RuleAllow, Protocol: 6, DstPorts: ports(uint16(1000 + i))}}
				dp.model.apply(policySel(id, fmt.Sprintf("i == '%d'", i), rs, nil)) // a group each
				tierIDs = append(tierIDs, id)
			}
			good := gnpID("good")
			dp.model.apply(policySel(good, "good == 'yes'", []calc.Rule{{Action: calc.RuleAllow, Protocol: 6, DstPorts: ports(7777)}}, nil))
			dp.model.apply(egressAll())
			dp.model.apply(kwep("b", ifB, ipB, tier("default", append(tierIDs, good), nil)))
			start, applies := time.Now(), 1
			for ; ; applies++ {
				_, err := dp.apply(t.Context())
				if err == nil {
					break
				}
				if applies == 100 {
					t.Fatalf("100 applies failed; the last: %v", err)
				}
			}
			t.Logf("%d refused policies: %d applies, %d commits, %v", n, applies, commits, time.Since(start))
			if applies != 1 || commits != 2 {
				t.Errorf("%d applies and %d commits, want 1 apply of 2 commits (the refused batch, then the rest)", applies, commits)
			}
			if got := dp.Quarantined(); got != n {
				t.Errorf("%d objects quarantined, want %d", got, n)
			}
			if rs := ns.Exec(t, "nft", "list", "ruleset"); !strings.Contains(rs, "7777") || strings.Contains(rs, "6666") {
				t.Errorf("the good policy is not programmed, or a refused one is")
			}
		})
	}
}

// TestKernelQuarantineSpoofingEndpoint: with real packets, when the kernel refuses the
// anti-spoofing chain because of one endpoint's spoofing exception, that endpoint's traffic is
// dropped, another endpoint still sends from its allowed spoofed source, and a workload added
// later passes traffic.
func TestKernelQuarantineSpoofingEndpoint(t *testing.T) {
	tp := newTopology(t)
	a := tp.addWorkload(t, "a", ifA, ipA)
	b := tp.addWorkload(t, "b", ifB, ipB)
	a.Exec(t, "ip", "addr", "add", "10.65.8.8/32", "dev", "eth0")
	c := tp.addWorkload(t, "c", "cali0000000000c", "10.65.0.3")
	srv := listenUDP(t, c, "10.65.0.3", 5353)
	listenTCP(t, c, "10.65.0.3", 8080)
	refuse := elementRefuser{nsKernel(t, tp.host), keyHasPrefix(nft.IfnameKey(ifB))}
	open := profile("open", []calc.Rule{allow()}, []calc.Rule{allow()})
	spoofer := func(name, iface, ip, prefix string) calc.WorkloadEndpointUpdate {
		w := wep(name, iface, []string{ip + "/32"}, withProfiles("open"))
		w.Endpoint.AllowSpoofedSourcePrefixes = []netip.Prefix{pfx(prefix)}
		return w
	}
	k := startDataplaneWith(t, tp, Config{WorkloadSourceSpoofing: true}, []Option{WithNFTBackend(refuse)},
		open, spoofer("a", ifA, ipA, "10.65.8.0/24"), spoofer("b", ifB, ipB, "10.65.9.0/24"))
	k.send(wep("c", "cali0000000000c", []string{"10.65.0.3/32"}, withProfiles("open")))
	canUDP(t, a, "10.65.8.8", "10.65.0.3", 5353)
	if !srv.received("10.65.8.8") {
		t.Error("a's packet from its allowed spoofed source did not reach C")
	}
	check(t, "one endpoint's spoofing exception refused",
		expectation{"b to c (b quarantined)", func() bool { return canTCP(t, b, "10.65.0.3", 8080) }, false},
		expectation{"a to c (c added later)", func() bool { return canTCP(t, a, "10.65.0.3", 8080) }, true})
	if n := k.dp.Quarantined(); n != 1 {
		t.Errorf("%d quarantined, want 1 (endpoint b)", n)
	}
}
