package nft

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/nftables"
)

// bigHost builds a ruleset shaped like a big felix host: `workloads`
// workloads (two endpoint chains of 12 rules each), 1,000 policy chains of
// 5 rules, 1,000 interval sets of 10 members, one set of 11,000 host
// addresses and two dispatch verdict maps with one element per workload.
func bigHost(workloads int) *Ruleset {
	rs := NewRuleset()
	addBigSets(rs)
	from := rs.AddMap(&Map{Name: "cali-from-wl-dispatch", KeyType: TypeIfname, Elements: map[string]Verdict{}})
	to := rs.AddMap(&Map{Name: "cali-to-wl-dispatch", KeyType: TypeIfname, Elements: map[string]Verdict{}})
	rs.AddChain(&Chain{Name: "filter-FORWARD", Base: &BaseChain{Type: TypeFilter, Hook: HookForward},
		Rules: []Rule{NewRule(Jump("cali-FORWARD")), NewRule(MarkMatch(markAccept, markAccept), Accept())}})
	rs.AddChain(&Chain{Name: "cali-FORWARD", Rules: []Rule{
		NewRule(IIFName("cali*"), IIFNameVmap(from.Name)),
		NewRule(OIFName("cali*"), OIFNameVmap(to.Name)),
		NewRule(NFProto(IPv4), SAddrInSet(IPv4, "cali40all-hosts-net"), Accept()),
	}})
	for i := range 1000 {
		rs.AddChain(policyChain(i))
	}
	for i := range workloads {
		addWorkload(rs, i)
	}
	return rs
}

func addBigSets(rs *Ruleset) {
	for i := range 1000 {
		s := &Set{Name: fmt.Sprintf("cali40s-%04d", i), Type: TypeIPv4Addr, Interval: true}
		for j := range 10 {
			s.Elements = append(s.Elements, fmt.Sprintf("10.65.%d.%d", i%256, 10*(i/256)+j+1))
		}
		rs.AddSet(s)
	}
	hosts := &Set{Name: "cali40all-hosts-net", Type: TypeIPv4Addr, Interval: true}
	for i := range 11000 {
		hosts.Elements = append(hosts.Elements, fmt.Sprintf("198.18.%d.%d", i/200, 1+i%200))
	}
	rs.AddSet(hosts)
}

func policyChain(i int) *Chain {
	set := fmt.Sprintf("cali40s-%04d", i)
	return &Chain{Name: fmt.Sprintf("cali-pi-gnp/policy-%04d", i), Rules: []Rule{
		NewRule(L4Proto(ProtoTCP), SAddrInSet(IPv4, set), DPort(ProtoTCP, Port(80), Port(443)), OrMark(markAccept)).WithComment("Policy ingress"),
		NewRule(MarkMatch(markAccept, markAccept), Return()),
		NewRule(L4Proto(ProtoUDP), SAddr(netip.MustParsePrefix("10.65.0.0/16")), DPort(ProtoUDP, Port(53)), OrMark(markAccept)),
		NewRule(MarkMatch(markAccept, markAccept), Return()),
		NewRule(L4Proto(ProtoICMP), ICMPType(IPv4, 8), Log("calico-packet: "), Drop()),
	}}
}

func addWorkload(rs *Ruleset, i int) {
	iface := fmt.Sprintf("cali%011d", i)
	for _, dir := range []string{"fw", "tw"} {
		rules := []Rule{
			NewRule(CTStateIn(CTStateEstablished|CTStateRelated), Accept()),
			NewRule(CTStateIn(CTStateInvalid), Drop()),
			NewRule(AndMark(^uint32(markAccept | markPass))),
			NewRule(AndMark(^uint32(markPass))).WithComment("Start of tier default"),
		}
		for p := range 3 {
			rules = append(rules,
				NewRule(MarkMatch(markPass, 0), Jump(fmt.Sprintf("cali-pi-gnp/policy-%04d", (i*3+p)%1000))),
				NewRule(MarkMatch(markAccept, markAccept), Return()))
		}
		rules = append(rules,
			NewRule(MarkMatch(markPass, 0), Counter(), Drop()).WithComment("End of tier default"),
			NewRule(Counter(), Drop()).WithComment("Drop if no profiles matched"))
		rs.AddChain(&Chain{Name: "cali-" + dir + "-" + iface, Rules: rules})
	}
	rs.Maps["cali-from-wl-dispatch"].Elements[iface] = Goto("cali-fw-" + iface)
	rs.Maps["cali-to-wl-dispatch"].Elements[iface] = Goto("cali-tw-" + iface)
	rs.TouchMap("cali-from-wl-dispatch")
	rs.TouchMap("cali-to-wl-dispatch")
}

// removeWorkload undoes addWorkload.
func removeWorkload(rs *Ruleset, i int) {
	iface := fmt.Sprintf("cali%011d", i)
	rs.DeleteChain("cali-fw-" + iface)
	rs.DeleteChain("cali-tw-" + iface)
	delete(rs.Maps["cali-from-wl-dispatch"].Elements, iface)
	delete(rs.Maps["cali-to-wl-dispatch"].Elements, iface)
	rs.TouchMap("cali-from-wl-dispatch")
	rs.TouchMap("cali-to-wl-dispatch")
}

// BenchmarkPlan: time to diff the big ruleset against an empty table and
// build the transaction (the Applier's part).
func BenchmarkPlan(b *testing.B) {
	rs := bigHost(1000)
	for b.Loop() {
		if _, _, _, err := plan(newMirror(), rs, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncode: time to turn that transaction into netlink messages
// (google/nftables expressions and marshalling), without sending.
func BenchmarkEncode(b *testing.B) {
	tx, _, _, err := plan(newMirror(), bigHost(1000), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(tx.Len()), "ops")
	for b.Loop() {
		conn, _ := nftables.New()
		bt := &batch{conn: conn, table: &nftables.Table{Name: DefaultTable, Family: nftables.TableFamilyINet}}
		for _, op := range tx.Ops {
			if err := bt.queue(op); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(bt.messages), "msgs")
	}
}

// BenchmarkLoad compares loading the big ruleset into a fresh namespace
// through our netlink Commit (both send modes) and through `nft -f` of the
// same ruleset (the fake's dump, with the same hash comments). The three are
// interleaved in every iteration so that a busy machine affects them alike.
// The Commit includes encoding the transaction; `nft -f` includes parsing
// the file. Reported: milliseconds per load for each, and lean/nft-f.
func BenchmarkLoad(b *testing.B) {
	requireRoot(b)
	rs := bigHost(1000)
	tx, _, _, err := plan(newMirror(), rs, nil)
	if err != nil {
		b.Fatal(err)
	}
	f := NewFake()
	if _, err := NewApplier(f, zerologNop()).Apply(context.Background(), rs); err != nil {
		b.Fatal(err)
	}
	file := filepath.Join(b.TempDir(), "ruleset.nft")
	if err := os.WriteFile(file, []byte(f.DumpWithHashes()), 0o600); err != nil {
		b.Fatal(err)
	}
	var lean, acks, nftf time.Duration
	var info CommitInfo
	n := 0
	for b.Loop() {
		lean += timeCommit(b, tx, NetlinkConfig{}, &info)
		acks += timeCommit(b, tx, NetlinkConfig{PerMessageAcks: true}, nil)
		ns := newNetNS(b)
		start := time.Now()
		ns.exec(b, "nft", "-f", file)
		nftf += time.Since(start)
		n++
	}
	ms := func(d time.Duration) float64 { return float64(d.Milliseconds()) / float64(n) }
	b.ReportMetric(ms(lean), "lean-ms")
	b.ReportMetric(ms(acks), "acks-ms")
	b.ReportMetric(ms(nftf), "nft-f-ms")
	b.ReportMetric(float64(lean)/float64(nftf), "lean/nft-f")
	b.ReportMetric(float64(info.Messages), "msgs")
	b.ReportMetric(float64(info.Bytes)/1e6, "MB")
}

// timeCommit commits tx into a fresh namespace and returns how long it took.
func timeCommit(b *testing.B, tx *Transaction, cfg NetlinkConfig, info *CommitInfo) time.Duration {
	ns := newNetNS(b)
	cfg.NetNS = ns.fd
	k := NewNetlink(cfg)
	defer k.Close()
	start := time.Now()
	got, err := k.Commit(context.Background(), tx)
	d := time.Since(start)
	if err != nil {
		b.Fatal(err)
	}
	if info != nil {
		*info = got
	}
	return d
}

// BenchmarkPartialAddEndpoint: on the loaded big ruleset, add one workload
// (two chains, two map elements) and apply: plan plus commit. Every other
// iteration removes it again; both are reported. "tracked" edits one
// tracked Ruleset in place (as felix's dataplane does); "compare-all"
// alternates two untracked rulesets, which the Applier compares whole.
func BenchmarkPartialAddEndpoint(b *testing.B) {
	requireRoot(b)
	for _, mode := range sendModes {
		for _, tracked := range []bool{true, false} {
			name := mode.name + "/" + map[bool]string{true: "tracked", false: "compare-all"}[tracked]
			b.Run(name, func(b *testing.B) { benchPartial(b, mode.cfg, tracked) })
		}
	}
}

// workloadSwitch adds and removes workload 1000 of a big ruleset.
type workloadSwitch struct {
	add, del func() *Ruleset
}

func newWorkloadSwitch(tracked bool) (*Ruleset, workloadSwitch) {
	base := bigHost(1000)
	if !tracked {
		grown := bigHost(1000)
		addWorkload(grown, 1000)
		return base, workloadSwitch{add: func() *Ruleset { return grown }, del: func() *Ruleset { return base }}
	}
	base.Track()
	return base, workloadSwitch{
		add: func() *Ruleset { addWorkload(base, 1000); return base },
		del: func() *Ruleset { removeWorkload(base, 1000); return base },
	}
}

func benchPartial(b *testing.B, cfg NetlinkConfig, tracked bool) {
	ns := newNetNS(b)
	a, _ := ns.applierWith(b, cfg)
	base, sw := newWorkloadSwitch(tracked)
	ns.apply(b, a, base)
	var add, del Stats
	var addCommit, delCommit, addPlan, delPlan time.Duration
	n := 0
	for b.Loop() {
		add = ns.apply(b, a, sw.add())
		del = ns.apply(b, a, sw.del())
		if add.FullSync || add.Ops == 0 || del.Ops == 0 {
			b.Fatalf("unexpected stats %+v / %+v", add, del)
		}
		addCommit += add.CommitTime
		delCommit += del.CommitTime
		addPlan += add.PlanTime
		delPlan += del.PlanTime
		n++
	}
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(n) }
	b.ReportMetric(float64(add.Ops), "add-ops")
	b.ReportMetric(float64(add.Messages), "add-msgs")
	b.ReportMetric(float64(add.Bytes), "add-bytes")
	b.ReportMetric(per(addPlan), "add-plan-µs")
	b.ReportMetric(per(addCommit), "add-commit-µs")
	b.ReportMetric(float64(del.Ops), "del-ops")
	b.ReportMetric(per(delPlan), "del-plan-µs")
	b.ReportMetric(per(delCommit), "del-commit-µs")
}

// BenchmarkFullSyncNoChange: a full sync (read + compare) of the loaded big
// ruleset when nothing drifted.
func BenchmarkFullSyncNoChange(b *testing.B) {
	requireRoot(b)
	ns := newNetNS(b)
	a, _ := ns.applier(b)
	rs := bigHost(1000)
	ns.apply(b, a, rs)
	var st Stats
	for b.Loop() {
		a.RequestFullSync()
		st = ns.apply(b, a, rs)
		if st.Ops != 0 {
			b.Fatalf("full sync found drift: %+v", st)
		}
	}
	b.ReportMetric(float64(st.ReadTime.Milliseconds()), "read-ms")
	b.ReportMetric(float64(st.PlanTime.Milliseconds()), "plan-ms")
}

// TestBigHostRuleset checks the benchmark ruleset's shape.
func TestBigHostRuleset(t *testing.T) {
	rs := bigHost(1000)
	if err := rs.Validate(); err != nil {
		t.Fatal(err)
	}
	rules := 0
	for _, c := range rs.Chains {
		rules += len(c.Rules)
	}
	if len(rs.Chains) != 3002 || rules != 2000*12+1000*5+5 || len(rs.Sets) != 1001 {
		t.Errorf("%d chains, %d rules, %d sets", len(rs.Chains), rules, len(rs.Sets))
	}
}
