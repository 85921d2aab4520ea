package dataplane

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/rules"
	"github.com/calico-host/calico-host/pkg/netnstest"
	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/kernel"
	"github.com/calico-host/calico-host/pkg/nft/sim"
	"github.com/calico-host/calico-host/pkg/nft/sim/hostfib"
)

// TestSimulatorAgreesWithPackets runs the packet simulator (pkg/nft/sim) on a real felix
// ruleset: random tiers, policies and profiles on three workloads, programmed by the dataplane
// into a host namespace and read back from the kernel. For each probe (TCP, UDP, ICMP between
// the workloads, the host and the fabric) the simulator predicts whether the connection's first
// packet reaches its destination, and a real connection between the namespaces must agree.
//
//	SIM_SEED=7 SIM_SCENARIOS=20 go test -run TestSimulatorAgreesWithPackets ./pkg/felix/dataplane
func TestSimulatorAgreesWithPackets(t *testing.T) { simulatorAgreesWithPackets(t, false) }

// TestSimulatorAgreesWithPacketsFlowLogs is TestSimulatorAgreesWithPackets with flow logs on:
// the kernel takes every ruleset with its NFLOG statements, and they change no verdict.
func TestSimulatorAgreesWithPacketsFlowLogs(t *testing.T) { simulatorAgreesWithPackets(t, true) }

func simulatorAgreesWithPackets(t *testing.T, flowLogs bool) {
	if testing.Short() {
		t.Skip("kernel test")
	}
	seed, scenarios := simEnv(t, "SIM_SEED", 1), simEnv(t, "SIM_SCENARIOS", 3)
	rng := rand.New(rand.NewPCG(uint64(seed), 3))
	tp := newTopology(t)
	tp.fabric.Exec(t, "ip", "route", "add", "10.65.0.0/16", "via", "198.18.0.1")
	ends := simEnds(t, tp)
	i := rng.IntN(3)
	action := []string{"Drop", "Return", "Accept"}[i]
	k := startDataplane(t, tp, Config{DefaultEndpointToHostAction: []rules.Action{rules.ActionDrop, rules.ActionReturn, rules.ActionAccept}[i],
		FlowLogs: flowLogs}, randomScenario(rng)...)
	for _, w := range simWorkloads {
		k.waitUp(w.name)
	}
	fib, err := hostfib.New(tp.host.FD)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fib.Close)
	probes, passed := 0, 0
	for s := range scenarios {
		if s > 0 {
			k.send(randomScenario(rng)...)
		}
		k.requireProgrammed()
		rs := compileHostTables(t, tp)
		if logs := strings.Count(tp.host.Exec(t, "nft", "list", "ruleset"), " snaplen 80 "); (logs > 0) != flowLogs {
			t.Fatalf("flow logs %v: %d NFLOG statements in the ruleset", flowLogs, logs)
		}
		for range 24 {
			p := randomProbe(rng, ends)
			want := p.simulate(t, rs, fib, ends)
			if got := p.real(t, ends, want); got != want {
				t.Errorf("seed %d scenario %d (DefaultEndpointToHostAction %s): %s: real packets %v, simulator %v\n%s",
					seed, s, action, p, got, want, p.path(t, rs, fib, ends))
			}
			probes++
			if want {
				passed++
			}
		}
		if t.Failed() {
			t.Logf("ruleset:\n%s", tp.host.Exec(t, "nft", "list", "ruleset"))
			return
		}
	}
	t.Logf("seed %d: %d felix rulesets, %d probes (%d through, %d blocked): the simulator agreed with real packets on all",
		seed, scenarios, probes, passed, probes-passed)
}

func simEnv(t *testing.T, name string, def int) int {
	if s := os.Getenv(name); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return n
	}
	return def
}

// The simulator test's workloads.
var simWorkloads = []struct{ name, iface, ip string }{
	{"a", ifA, ipA}, {"b", ifB, ipB}, {"c", "cali0000000000c", "10.65.0.3"},
}

// simEnd is a place probes go from and to: a workload, the host or the fabric.
type simEnd struct {
	name  string
	ns    *netnstest.NS
	addr  netip.Addr
	iface string // the host's interface towards it ("" for the host itself)
	mac   net.HardwareAddr
}

// simEnds plumbs the workloads and starts servers everywhere: TCP 80 and 8080, UDP 5353.
func simEnds(t *testing.T, tp *topology) map[string]*simEnd {
	ends := map[string]*simEnd{
		"host":   {name: "host", ns: tp.host, addr: addr("198.18.0.1")},
		"fabric": {name: "fabric", ns: tp.fabric, addr: addr("198.18.0.2"), iface: "eth0"},
	}
	for _, w := range simWorkloads {
		ends[w.name] = &simEnd{name: w.name, ns: tp.addWorkload(t, w.name, w.iface, w.ip), addr: addr(w.ip), iface: w.iface}
	}
	for _, e := range ends {
		for _, port := range []int{80, 8080} {
			listenTCP(t, e.ns, e.addr.String(), port)
		}
		listenUDP(t, e.ns, e.addr.String(), 5353)
		if e.iface != "" {
			e.mac = linkMAC(t, e.ns, "eth0")
		}
	}
	return ends
}

func linkMAC(t *testing.T, ns *netnstest.NS, name string) net.HardwareAddr {
	var hw net.HardwareAddr
	ns.Do(t, func() {
		ifc, err := net.InterfaceByName(name)
		if err != nil {
			t.Fatal(err)
		}
		hw = ifc.HardwareAddr
	})
	return hw
}

// compileHostTables reads the dataplane's tables back from the host namespace and compiles them.
func compileHostTables(t *testing.T, tp *topology) *sim.Ruleset {
	k, err := kernel.New(kernel.Config{NetNS: tp.host.FD})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tables, err := k.Read(ctx, ownedTables(Config{TableName: DefaultTable}), nft.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := sim.Compile(tables...)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// simProbe is one connection attempt.
type simProbe struct {
	from, to string
	proto    uint8
	port     uint16
}

func (p simProbe) String() string {
	return fmt.Sprintf("%s -> %s proto %d port %d", p.from, p.to, p.proto, p.port)
}

func randomProbe(rng *rand.Rand, ends map[string]*simEnd) simProbe {
	names := []string{"a", "b", "c", "host", "fabric"}
	p := simProbe{from: names[rng.IntN(len(names))]}
	for p.to = p.from; p.to == p.from; {
		p.to = names[rng.IntN(len(names))]
	}
	switch rng.IntN(4) {
	case 0:
		p.proto, p.port = nft.ProtoTCP, 80
	case 1:
		p.proto, p.port = nft.ProtoTCP, 8080
	case 2:
		p.proto, p.port = nft.ProtoUDP, 5353
	default:
		p.proto = nft.ProtoICMP
	}
	return p
}

// input is the probe's first packet as the host's kernel sees it first: received on the
// interface towards its source, or sent by the host from the address its route picks.
func (p simProbe) input(t *testing.T, fib *hostfib.FIB, ends map[string]*simEnd) sim.Input {
	src, dst := ends[p.from], ends[p.to]
	spec := sim.IPSpec{Src: src.addr, Dst: dst.addr, Proto: p.proto, SPort: 40000, DPort: p.port, ID: 1}
	in := sim.Input{CT: sim.Conntrack{State: nft.CTStateNew}, FIB: fib}
	if src.iface == "" {
		r, ok := fib.Route(sim.RouteQuery{Dst: dst.addr})
		if ok && r.Src.IsValid() {
			spec.Src = r.Src
		}
	}
	pk, err := sim.IPPacket(spec)
	if err != nil {
		t.Fatal(err)
	}
	if src.iface != "" {
		iif, ok := fib.Iface(src.iface)
		if !ok {
			t.Fatalf("no interface %s", src.iface)
		}
		in.IIF = &iif
		pk.Link = sim.EthernetHeader(net.HardwareAddr{0xee, 0xee, 0xee, 0xee, 0xee, 0xee}, src.mac, unix.ETH_P_IP)
	}
	in.Packet = pk
	return in
}

// simulate reports whether the simulator takes the probe's first packet to its destination.
func (p simProbe) simulate(t *testing.T, rs *sim.Ruleset, fib *hostfib.FIB, ends map[string]*simEnd) bool {
	res, err := rs.Run(p.input(t, fib, ends))
	if err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	dst := ends[p.to]
	if dst.iface == "" {
		return res.Fate == sim.FateDelivered
	}
	return res.Fate == sim.FateSent && res.OIF == dst.iface
}

func (p simProbe) path(t *testing.T, rs *sim.Ruleset, fib *hostfib.FIB, ends map[string]*simEnd) string {
	res, err := rs.Run(p.input(t, fib, ends))
	if err != nil {
		return err.Error()
	}
	return res.String()
}

// real tries the probe with real sockets; a connection the simulator expects is tried three
// times (the machine may be busy).
func (p simProbe) real(t *testing.T, ends map[string]*simEnd, want bool) bool {
	src, dst := ends[p.from], ends[p.to]
	try := func() bool {
		switch p.proto {
		case nft.ProtoTCP:
			return canTCP(t, src.ns, dst.addr.String(), int(p.port))
		case nft.ProtoUDP:
			return canUDP(t, src.ns, "", dst.addr.String(), int(p.port))
		}
		return canPing(t, src.ns, dst.addr.String())
	}
	got := try()
	for i := 0; want && !got && i < 2; i++ {
		got = try()
	}
	return got
}

// randomScenario is random policies in two tiers and profiles on the three workloads.
func randomScenario(rng *rand.Rand) []calc.Update {
	ups := []calc.Update{
		ipset("s:ab", ipA+"/32", ipB+"/32"),
		ipset("s:fabric", "198.18.0.0/24"),
		namedPortSet("n:http", 6, 80, ipB+"/32", "10.65.0.3/32"),
		profile("open", []calc.Rule{allow()}, []calc.Rule{allow()}),
		profile("egress", nil, []calc.Rule{allow()}),
	}
	var pols []calc.PolicyID
	for i := range 6 {
		id := tierPolicyID([]string{"t1", "default"}[i%2], fmt.Sprintf("p%d", i))
		pols = append(pols, id)
		ups = append(ups, policy(id, simRules(rng), simRules(rng)))
	}
	for _, w := range simWorkloads {
		var tiers []calc.TierInfo
		for ti, name := range []string{"t1", "default"} {
			in, out := pickPolicies(rng, pols, ti), pickPolicies(rng, pols, ti)
			if len(in)+len(out) > 0 {
				t := tier(name, in, out)
				if rng.IntN(3) == 0 {
					t.DefaultAction = "Pass"
				}
				tiers = append(tiers, t)
			}
		}
		prof := []string{"open", "egress", "open"}[rng.IntN(3)]
		ups = append(ups, wep(w.name, w.iface, []string{w.ip + "/32"}, withTiers(tiers...), withProfiles(prof)))
	}
	return ups
}

func pickPolicies(rng *rand.Rand, pols []calc.PolicyID, tierIdx int) []calc.PolicyID {
	var out []calc.PolicyID
	for i, p := range pols {
		if i%2 == tierIdx && rng.IntN(2) == 0 {
			out = append(out, p)
		}
	}
	return out
}

func simRules(rng *rand.Rand) []calc.Rule {
	var out []calc.Rule
	for range rng.IntN(3) {
		out = append(out, simRule(rng))
	}
	return out
}

func simRule(rng *rand.Rand) calc.Rule {
	r := calc.Rule{Action: []string{calc.RuleAllow, calc.RuleAllow, calc.RuleDeny, calc.RulePass}[rng.IntN(4)]}
	r.Protocol = []uint8{0, nft.ProtoTCP, nft.ProtoUDP, nft.ProtoICMP}[rng.IntN(4)]
	switch {
	case r.Protocol == nft.ProtoTCP && rng.IntN(2) == 0:
		r.DstPorts = ports([]uint16{80, 8080}[rng.IntN(2)])
	case r.Protocol == nft.ProtoTCP && rng.IntN(2) == 0:
		r.DstNamedPortIPSetIDs = []string{"n:http"}
	case r.Protocol == nft.ProtoUDP && rng.IntN(2) == 0:
		r.NotDstPorts = ports(53)
	case r.Protocol == nft.ProtoICMP && rng.IntN(2) == 0:
		r.ICMP = &calc.ICMPMatch{Type: 8}
	}
	switch rng.IntN(5) {
	case 0:
		r.SrcNets = []netip.Prefix{pfx([]string{"10.65.0.0/30", ipA + "/32", "198.18.0.0/24"}[rng.IntN(3)])}
	case 1:
		r.SrcIPSetIDs = []string{[]string{"s:ab", "s:fabric"}[rng.IntN(2)]}
	case 2:
		r.NotDstNets = []netip.Prefix{pfx([]string{ipB + "/32", "198.18.0.2/32"}[rng.IntN(2)])}
	case 3:
		r.NotSrcIPSetIDs = []string{"s:ab"}
	}
	return r
}
