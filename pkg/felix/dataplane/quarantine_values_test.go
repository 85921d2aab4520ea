package dataplane

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/rules"
	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/fake"
)

// elementRefuser is a backend that refuses, as the kernel refuses an element (EEXIST, naming
// it), every rule whose anonymous set holds a key for which refuse is true; the other batches
// go to the backend below.
type elementRefuser struct {
	nft.Backend
	refuse func(k nft.Key) bool
}

func (r elementRefuser) Commit(ctx context.Context, b *nft.Batch) (nft.CommitInfo, error) {
	var errs []nft.ObjectError
	for i := range b.Ops {
		op := &b.Ops[i]
		if op.Kind != nft.OpAddRule {
			continue
		}
		lw, err := nft.LowerRule(op.Table.Family, *op.Rule)
		if err != nil {
			continue
		}
		for _, s := range lw.Anon {
			for _, e := range s.Elements {
				if lo, _ := e.Bounds(); r.refuse(lo) {
					errs = append(errs, nft.ObjectError{Object: op.Object(), Op: op.Kind, Err: unix.EEXIST, Key: lo})
				}
			}
		}
	}
	if len(errs) > 0 {
		return nft.CommitInfo{}, &nft.CommitError{Objects: errs, Kernel: true}
	}
	return r.Backend.Commit(ctx, b)
}

// newRefusingHarness is a harness whose fake is behind an elementRefuser.
func newRefusingHarness(t *testing.T, cfg Config, refuse func(nft.Key) bool) *harness {
	h := &harness{t: t, fake: fake.New(), routes: &fakeRoutes{}, ifaces: newFakeIfaces(), vxlan: &fakeVXLAN{}}
	dp, err := New(FelixDefaults(cfg), testLogger(t), WithNFTBackend(elementRefuser{h.fake, refuse}), WithRoutes(h.routes),
		WithInterfaces(h.ifaces), WithVXLAN(h.vxlan), h.ipipOption())
	if err != nil {
		t.Fatal(err)
	}
	h.dp = dp
	h.dp.model.inSync, h.dp.model.ifacesInSync = true, true
	return h
}

// keyHasPrefix is true for keys that start with the bytes of k.
func keyHasPrefix(k nft.Key) func(nft.Key) bool {
	return func(x nft.Key) bool { return strings.HasPrefix(x.Raw(), k.Raw()) }
}

// TestQuarantineSpoofingEndpoint: when the kernel refuses the anti-spoofing chain because of one
// endpoint's spoofing exception, that endpoint fails closed (its exception left out, its traffic
// dropped), another endpoint keeps its exception and a workload added later is programmed; when
// the endpoint changes, it is tried again and programmed.
func TestQuarantineSpoofingEndpoint(t *testing.T) {
	refusing := true
	h := newRefusingHarness(t, Config{WorkloadSourceSpoofing: true}, func(k nft.Key) bool {
		return refusing && keyHasPrefix(nft.IfnameKey(ifB))(k)
	})
	h.up(ifA, ifB, "cali0000000000c")
	spoofer := func(name, iface, ip, prefix string) calc.WorkloadEndpointUpdate {
		w := wep(name, iface, []string{ip + "/32"}, withProfiles("open"))
		w.Endpoint.AllowSpoofedSourcePrefixes = []netip.Prefix{pfx(prefix)}
		return w
	}
	h.send(profile("open", []calc.Rule{allow()}, []calc.Rule{allow()}),
		spoofer("a", ifA, ipA, "10.65.8.0/24"), spoofer("b", ifB, ipB, "10.65.9.0/24"))
	rpf := h.chainRules("raw-cali-wl-rpf")
	if !strings.Contains(rpf, `"`+ifA+`" . 10.65.8.0/24`) || strings.Contains(rpf, ifB) {
		t.Fatalf("the anti-spoofing chain should keep a's exception and leave b's out:\n%s", rpf)
	}
	from, to := dispatchVerdict(h, ifB, true), dispatchVerdict(h, ifB, false)
	if from.Kind != nft.VerdictDrop || to.Kind != nft.VerdictDrop {
		t.Errorf("b's dispatch verdicts are %v and %v, want drops", from, to)
	}
	if v := dispatchVerdict(h, ifA, true); v.Kind != nft.VerdictGoto {
		t.Errorf("a's dispatch verdict is %v, want its chain", v)
	}
	if quarantined(h, "endpoint") != 1 || h.dp.Quarantined() != 1 {
		t.Errorf("quarantined endpoints %v (total %d), want 1", quarantined(h, "endpoint"), h.dp.Quarantined())
	}
	h.send(wep("c", "cali0000000000c", []string{"10.65.0.3/32"}, withProfiles("open")))
	if v := dispatchVerdict(h, "cali0000000000c", true); v.Kind != nft.VerdictGoto {
		t.Errorf("a workload added later is not programmed: %v", v)
	}
	if !strings.Contains(h.fake.Dump(), `"`+ifA+`" . 10.65.8.0/24`) {
		t.Error("the kernel does not hold a's exception")
	}
	// b changes: it is tried again and, accepted now, programmed.
	refusing = false
	h.send(spoofer("b", ifB, ipB, "10.65.10.0/24"))
	if rpf := h.chainRules("raw-cali-wl-rpf"); !strings.Contains(rpf, `"`+ifB+`" . 10.65.10.0/24`) {
		t.Errorf("b's new exception is not programmed:\n%s", rpf)
	}
	if v := dispatchVerdict(h, ifB, true); v.Kind != nft.VerdictGoto || h.dp.Quarantined() != 0 {
		t.Errorf("b is not released: verdict %v, %d quarantined", v, h.dp.Quarantined())
	}
}

// TestQuarantineFailsafeEntry: when the kernel refuses a failsafe chain because of one failsafe
// entry, that entry is left out (its port is no longer opened: fail closed) and logged, the
// others stay, and the host endpoint is programmed.
func TestQuarantineFailsafeEntry(t *testing.T) {
	bad := nft.ConcatKey(nft.AddrKey(netip.MustParseAddr("198.18.0.0")), nft.ProtoKey(6), nft.PortKey(2222))
	h := newRefusingHarness(t, Config{FailsafeInbound: []rules.ProtoPort{
		{Protocol: nft.ProtoTCP, Port: 22}, {Protocol: nft.ProtoTCP, Port: 2222, Net: pfx("198.18.0.0/16")}, {Protocol: nft.ProtoUDP, Port: 53, Net: pfx("198.18.0.0/16")},
	}, FailsafeOutbound: []rules.ProtoPort{}}, func(k nft.Key) bool { return k == bad })
	in := gnpID("host-in")
	h.send(policy(in, []calc.Rule{{Action: calc.RuleAllow, Protocol: 6, DstPorts: ports(7001)}}, nil),
		calc.HostEndpointUpdate{Endpoint: &calc.HostEndpoint{Name: "host1-eth0", InterfaceName: "eth0",
			Tiers: []calc.TierInfo{tier("default", ids(in), nil)}}})
	fs := h.chainRules("filter-cali-failsafe-in")
	if strings.Contains(fs, "2222") || !strings.Contains(fs, "tcp . 22") || !strings.Contains(fs, "udp . 53") {
		t.Errorf("the failsafe chain should have left out tcp:198.18.0.0/16:2222 only:\n%s", fs)
	}
	if quarantined(h, "failsafe") != 1 || h.dp.Quarantined() != 1 {
		t.Errorf("quarantined failsafe entries %v (total %d), want 1", quarantined(h, "failsafe"), h.dp.Quarantined())
	}
	if s := strings.Join(h.dp.quar.summary(), "\n"); !strings.Contains(s, "FailsafeInboundHostPorts tcp:198.18.0.0/16:2222") {
		t.Errorf("the quarantine does not name the entry: %s", s)
	}
	if !strings.Contains(h.fake.Dump(), "7001") {
		t.Error("the host endpoint's policy is not programmed")
	}
}

// dispatchVerdict is the verdict of the ip table's workload dispatch map for iface.
func dispatchVerdict(h *harness, iface string, egress bool) nft.Verdict {
	from, to := rules.DispatchMaps()
	name := to
	if egress {
		name = from
	}
	return h.dp.ruleset.Tables()[0].Map(name).Elements[nft.IfnameKey(iface)]
}
