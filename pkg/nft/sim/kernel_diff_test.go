package sim_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mdlayher/netlink"
	"github.com/ti-mo/conntrack"
	"golang.org/x/sys/unix"

	"github.com/calico-host/calico-host/internal/logtest"
	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/apply"
	"github.com/calico-host/calico-host/pkg/nft/internal/nftrace"
	"github.com/calico-host/calico-host/pkg/nft/internal/nstest"
	"github.com/calico-host/calico-host/pkg/nft/kernel"
	"github.com/calico-host/calico-host/pkg/nft/sim"
	"github.com/calico-host/calico-host/pkg/nft/sim/hostfib"
)

// TestKernelDifferential loads random rulesets into a namespace, sends
// random probes through the real kernel with nftrace on, and requires the
// simulator's path (every rule event, return and policy, with rule
// indexes, verdicts and the packet's mark) to equal the kernel's trace,
// probe by probe, and the counters it predicts to equal the kernel's.
//
//	SIM_SEED=7 SIM_RULESETS=200 go test -run TestKernelDifferential ./pkg/nft/sim
func TestKernelDifferential(t *testing.T) {
	nstest.Require(t)
	if testing.Short() {
		t.Skip("kernel differential test")
	}
	seed, rulesets := envInt(t, "SIM_SEED", 1), envInt(t, "SIM_RULESETS", 20)
	h := newHarness(t)
	g := newGen(rand.New(rand.NewPCG(uint64(seed), 2)))
	var st diffStats
	for i := range rulesets {
		g.prios, g.nat = newGen(g.rng).prios, newGen(g.rng).nat
		tables := g.ruleset()
		if err := h.load(tables); err != nil {
			t.Fatalf("ruleset %d: the kernel refused it: %v\n%s", i, err, dumpTables(tables))
		}
		rs, err := sim.Compile(tables...)
		if err != nil {
			t.Fatalf("ruleset %d: %v", i, err)
		}
		h.flushConntrack(t)
		st.rulesets++
		st.rules += countRules(tables)
		h.round(t, g, rs, &st, fmt.Sprintf("seed %d ruleset %d", seed, i))
		if t.Failed() {
			t.Logf("ruleset:\n%s", h.dut.Exec(t, "nft", "list", "ruleset"))
			return
		}
	}
	t.Logf("seed %d: %d rulesets (%d rules), %d probes compared with the kernel's trace (%d received, %d sent by the host, %d replies, %d ARP; %d dropped, %d delivered, %d sent, %d without a route), %d trace events, %d rule counters; %d probes read a port the NAT chose (refused by the simulator)",
		seed, st.rulesets, st.rules, st.probes, st.received, st.local, st.replies, st.arp, st.fates[sim.FateDropped], st.fates[sim.FateDelivered],
		st.fates[sim.FateSent], st.fates[sim.FateNoRoute], st.steps, st.counters, st.refused)
	if st.probes < rulesets*20 || st.steps < st.probes {
		t.Errorf("too little was compared: %+v", st)
	}
}

type diffStats struct {
	rulesets, rules, probes, steps, counters, refused int
	received, local, replies, arp                     int
	fates                                             [8]int
}

func envInt(t *testing.T, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return n
}

func countRules(tables []*nft.Table) int {
	n := 0
	for _, tb := range tables {
		_, r, _, _, _, _ := tb.Counts()
		n += r
	}
	return n
}

// harness is the namespaces, the kernel backend and the trace reader.
type harness struct {
	*topo
	applier *apply.Applier
	trace   *nftrace.Reader
	fib     *hostfib.FIB
	nextID  uint16
}

func newHarness(t *testing.T) *harness {
	tp := newTopo(t)
	k, err := kernel.New(kernel.Config{NetNS: tp.dut.FD})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	ids := []nft.TableID{{Family: nft.FamilyIP, Name: "t4"}, {Family: nft.FamilyIP6, Name: "t6"}, {Family: nft.FamilyInet, Name: "ti"}, {Family: nft.FamilyARP, Name: "ta"}}
	a := apply.New(k, apply.Options{Tables: ids, Log: logtest.Logger(t)})
	fib, err := hostfib.New(tp.dut.FD)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fib.Close)
	return &harness{topo: tp, applier: a, trace: startTrace(t, tp.dut), fib: fib}
}

func (h *harness) load(tables []*nft.Table) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := h.applier.Apply(ctx, tables...)
	return err
}

func (h *harness) flushConntrack(t *testing.T) {
	c, err := conntrack.Dial(&netlink.Config{NetNS: h.dut.FD})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
}

// conntrackTable lists the dut's connections, for failure reports.
func (h *harness) conntrackTable(t *testing.T) string {
	c, err := conntrack.Dial(&netlink.Config{NetNS: h.dut.FD})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	flows, err := c.Dump(nil)
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, f := range flows {
		fmt.Fprintf(&b, "  %v %v status %#x\n", f.TupleOrig, f.TupleReply, uint32(f.Status))
	}
	return b.String()
}

// probe is one packet the test sends.
type probe struct {
	key   packetKey
	pk    sim.Packet // Link set for a received packet
	side  string     // the dut's interface it arrives on; "" for one the dut sends
	mark  uint32
	reply bool
	noRt  bool // the kernel refused to send it: no route
	spec  sim.IPSpec
}

// round sends a batch of probes, then replies to those forwarded without
// NAT, and compares each with the simulator; then the counters.
func (h *harness) round(t *testing.T, g *gen, rs *sim.Ruleset, st *diffStats, what string) {
	probes := h.probes(g, rs, tuples{})
	results := h.exchange(t, rs, probes, st, what)
	var replies []*probe
	for i, p := range probes {
		if r := results[i]; r != nil && p.side == "a0" && r.Fate == sim.FateSent && r.OIF == "b0" && unNATed(p, r) {
			if rp := h.reply(p); rp != nil {
				replies = append(replies, rp)
			}
		}
	}
	results = append(results, h.exchange(t, rs, replies, st, what+" replies")...)
	h.compareCounters(t, results, st, what)
}

// exchange sends the probes, collects the kernel's trace and compares;
// it returns the simulator's results (nil where it refused).
func (h *harness) exchange(t *testing.T, rs *sim.Ruleset, probes []*probe, st *diffStats, what string) []*sim.Result {
	for _, p := range probes {
		if p.side != "" {
			h.inject(t, p.side, p.pk)
		} else {
			p.noRt = !h.send(t, p.pk, p.mark)
		}
	}
	evs, err := h.trace.Drain(300 * time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	groups := groupEvents(evs)
	handles, _ := listRuleset(t, h.dut)
	out := make([]*sim.Result, len(probes))
	for i, p := range probes {
		out[i] = h.compare(t, rs, p, groups[p.key], handles, st, what)
		if t.Failed() {
			return out
		}
	}
	return out
}

func (h *harness) compare(t *testing.T, rs *sim.Ruleset, p *probe, evs []nftrace.Event, handles handleMap, st *diffStats, what string) *sim.Result {
	ks, ct, err := kernelSteps(evs, handles)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	in := sim.Input{Packet: p.pk, Mark: p.mark, CT: ctInput(ct), FIB: h.fib}
	if p.side != "" {
		in.IIF = h.iface(p.side)
	}
	res, err := rs.Run(in)
	if err != nil {
		if strings.Contains(err.Error(), "not known") {
			st.refused++
			return nil
		}
		t.Errorf("%s: probe %s: the simulator failed: %v", what, p.describe(), err)
		return nil
	}
	ss := simSteps(res)
	if p.noRt && res.Fate != sim.FateNoRoute {
		t.Errorf("%s: probe %s: the kernel had no route, the simulator's fate is %s", what, p.describe(), res.Fate)
	}
	if !slices.Equal(ks, ss) {
		t.Errorf("%s: probe %s (ct %+v):\nkernel:\n%s\nsimulator:\n%s\n%s\nconntrack:\n%s", what, p.describe(), in.CT,
			joinSteps(ks), joinSteps(ss), res, h.conntrackTable(t))
		return nil
	}
	st.count(p, res, len(ss))
	return res
}

func (st *diffStats) count(p *probe, res *sim.Result, steps int) {
	st.probes++
	st.steps += steps
	st.fates[res.Fate]++
	switch {
	case p.reply:
		st.replies++
	case p.pk.Proto == unix.ETH_P_ARP:
		st.arp++
	case p.side == "":
		st.local++
	default:
		st.received++
	}
}

func joinSteps(ss []step) string {
	var b strings.Builder
	for _, s := range ss {
		b.WriteString("  " + s.String() + "\n")
	}
	return b.String()
}

func (p *probe) describe() string {
	from := "sent by the host"
	if p.side != "" {
		from = "received on " + p.side
	}
	if p.pk.Proto == unix.ETH_P_ARP {
		return fmt.Sprintf("ARP %x %s", p.pk.Network, from)
	}
	s := p.spec
	return fmt.Sprintf("%s -> %s proto %d ports %d>%d icmp %d id %d mark %#x %s", s.Src, s.Dst, s.Proto, s.SPort, s.DPort, s.ICMPType, p.key.id, p.mark, from)
}

// compareCounters requires the kernel's rule counters to equal the sum
// of the counters the simulator says each probe bumped (skipped when a
// probe was refused: its counts are unknown).
func (h *harness) compareCounters(t *testing.T, results []*sim.Result, st *diffStats, what string) {
	want := map[ruleLoc]uint64{}
	for _, r := range results {
		if r == nil {
			return
		}
		for _, c := range r.Counters {
			want[ruleLoc{c.Table.String(), c.Chain, c.Rule}] += uint64(c.N)
		}
	}
	_, got := listRuleset(t, h.dut)
	for loc, n := range got {
		if strings.Contains(loc.table, "simtrace") {
			continue
		}
		if want[loc] != n {
			t.Errorf("%s: counters of %s %s rule %d: kernel %d, simulator %d", what, loc.table, loc.chain, loc.rule, n, want[loc])
		}
		st.counters++
	}
}

// unNATed reports whether the probe left with its addresses and ports.
func unNATed(p *probe, r *sim.Result) bool {
	s0, d0 := addrsOf(p.pk)
	s1, d1 := addrsOf(r.Packet)
	return s0 == s1 && d0 == d1 && portsOf(p.pk) == portsOf(r.Packet)
}

func portsOf(pk sim.Packet) string {
	off := 20
	if pk.Proto == unix.ETH_P_IPV6 {
		off = 40
	}
	return string(pk.Network[off : off+4])
}

func dumpTables(tables []*nft.Table) string {
	var b strings.Builder
	for _, tb := range tables {
		b.WriteString(tb.Dump())
	}
	return b.String()
}

// iface is the dut's interface called name.
func (h *harness) iface(name string) *sim.Iface {
	i, ok := h.fib.Iface(name)
	if !ok {
		panic("no interface " + name)
	}
	return &i
}
