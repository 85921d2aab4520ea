package collector

import (
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/calico-host/calico-host/pkg/flowlog"
	"github.com/calico-host/calico-host/pkg/flowlog/conntrack"
	"github.com/calico-host/calico-host/pkg/flowlog/nflog"
	"github.com/calico-host/calico-host/pkg/flowlog/ruleid"
)

var (
	t0        = time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	clientIP  = netip.MustParseAddr("10.65.0.1")
	serverIP  = netip.MustParseAddr("10.65.0.2")
	serverHEP = flowlog.Endpoint{Type: flowlog.HostEndpoint, Name: "server-host", Namespace: flowlog.NoNamespace,
		Labels: map[string]string{"role": "db"}}
)

// fakeEndpoints: the server is a local host endpoint; the tiers' last policies are fixed.
type fakeEndpoints struct {
	local map[netip.Addr]flowlog.Endpoint
}

func (f fakeEndpoints) Lookup(a netip.Addr) (flowlog.Endpoint, bool, bool) {
	ep, ok := f.local[a]
	return ep, ok, ok
}

func (f fakeEndpoints) Trigger(a netip.Addr, _ ruleid.Direction, tier string) (ruleid.Policy, bool) {
	if _, ok := f.local[a]; !ok {
		return ruleid.Policy{}, false
	}
	last := map[string]string{"platform": "platform-pass", "default": "allow-web"}[tier]
	return ruleid.Policy{Kind: flowlog.KindGlobalNetworkPolicy, Name: last}, last != ""
}

// The rules of the tests: tier platform passes UDP 5353 and TCP 8080 (rule 0 of
// platform-pass) and denies the rest; tier default allows TCP 8080 (rule 1 of allow-web)
// and denies the rest.
type rules struct {
	pass, allow, eotPlatform, eotDefault ruleid.RuleID
	table                                *ruleid.Table
}

func newRules(t testing.TB) rules {
	must := func(r ruleid.RuleID, err error) ruleid.RuleID {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	gnp := func(n string) ruleid.Policy { return ruleid.Policy{Kind: flowlog.KindGlobalNetworkPolicy, Name: n} }
	r := rules{
		pass:        must(ruleid.Rule(gnp("platform-pass"), "platform", ruleid.Ingress, 0, flowlog.Pass)),
		allow:       must(ruleid.Rule(gnp("allow-web"), "default", ruleid.Ingress, 1, flowlog.Allow)),
		eotPlatform: must(ruleid.EndOfTier("platform", ruleid.Ingress, flowlog.Deny)),
		eotDefault:  must(ruleid.EndOfTier("default", ruleid.Ingress, flowlog.Deny)),
		table:       ruleid.NewTable(),
	}
	for _, id := range []ruleid.RuleID{r.pass, r.allow, r.eotPlatform, r.eotDefault} {
		if _, err := r.table.Add(id); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

func hit(kind flowlog.PolicyKind, tier, name string, a flowlog.Action, pi, ri int64, trigger string) flowlog.PolicyHit {
	h := flowlog.PolicyHit{Kind: kind, Tier: tier, Name: name, Action: a, PolicyIndex: pi, RuleIndex: ri}
	if trigger != "" {
		h.Name = ""
		h.Trigger = &flowlog.PolicyHit{Kind: flowlog.KindGlobalNetworkPolicy, Name: trigger, Tier: tier}
	}
	return h
}

func newCollector(r rules) *Collector {
	c := New(Config{Endpoints: fakeEndpoints{local: map[netip.Addr]flowlog.Endpoint{serverIP: serverHEP}}}, t0)
	c.SetTable(r.table)
	return c
}

func pkt(prefix string, tu flowlog.Tuple, n int) nflog.Packet {
	return nflog.Packet{Group: 1, Prefix: prefix, Length: n, Tuple: tu}
}

// An allowed connection: its path from NFLOG, its counters from conntrack (in = original
// direction for the destination's report); it completes when conntrack drops it.
func TestAllowedConnection(t *testing.T) {
	r := newRules(t)
	c := newCollector(r)
	tu := flowlog.Tuple{Src: clientIP, Dst: serverIP, Proto: flowlog.ProtoTCP, SrcPort: 40000, DstPort: 8080}
	c.OnPacket(pkt(r.pass.Prefix(), tu, 60), t0)
	c.OnPacket(pkt(r.allow.Prefix(), tu, 60), t0)
	c.OnDump([]conntrack.Entry{{Orig: tu, OrigPackets: 5, OrigBytes: 1300, ReplyPackets: 4, ReplyBytes: 700}})
	flows := c.Flush(t0.Add(time.Minute))
	want := flowlog.Flow{
		StartTime: t0, EndTime: t0.Add(time.Minute),
		Key: flowlog.Key{
			SourceName: "pvt", SourceNamespace: "-", SourceType: flowlog.Network,
			DestName: "server-host", DestNamespace: "-", DestType: flowlog.HostEndpoint,
			DestPort: 8080, Proto: "tcp", Reporter: flowlog.Dst, Action: flowlog.Allow,
			Policies: flowlog.Trace{Enforced: []flowlog.PolicyHit{
				hit(flowlog.KindGlobalNetworkPolicy, "platform", "platform-pass", flowlog.Pass, 0, 0, ""),
				hit(flowlog.KindGlobalNetworkPolicy, "default", "allow-web", flowlog.Allow, 1, 1, ""),
			}, Pending: []flowlog.PolicyHit{}},
		},
		SourceLabels: []string{}, DestLabels: []string{"role=db"},
		PacketsIn: 5, BytesIn: 1300, PacketsOut: 4, BytesOut: 700,
		NumConnectionsStarted: 1, NumConnectionsLive: 1,
	}
	if len(flows) != 1 {
		t.Fatalf("flows %+v", flows)
	}
	if d := cmp.Diff(want, flows[0]); d != "" {
		t.Errorf("first interval (-want +got):\n%s", d)
	}
	// Next interval: more traffic, then the entry goes.
	c.OnDump([]conntrack.Entry{{Orig: tu, OrigPackets: 7, OrigBytes: 1400, ReplyPackets: 6, ReplyBytes: 800}})
	c.OnDump(nil)
	flows = c.Flush(t0.Add(2 * time.Minute))
	if len(flows) != 1 || flows[0].PacketsIn != 2 || flows[0].BytesOut != 100 || flows[0].NumConnectionsCompleted != 1 ||
		flows[0].NumConnectionsStarted != 0 {
		t.Errorf("second interval %+v", flows)
	}
	if c.Connections() != 0 {
		t.Errorf("%d connections kept", c.Connections())
	}
}

// An allowed connection that conntrack does not show yet is reported without counters (the
// first dump that has it counts from its first packet).
func TestAllowedBeforeDump(t *testing.T) {
	r := newRules(t)
	c := newCollector(r)
	tu := flowlog.Tuple{Src: clientIP, Dst: serverIP, Proto: flowlog.ProtoTCP, SrcPort: 40003, DstPort: 8080}
	c.OnPacket(pkt(r.pass.Prefix(), tu, 60), t0)
	c.OnPacket(pkt(r.allow.Prefix(), tu, 60), t0)
	f := c.Flush(t0.Add(time.Second))
	if len(f) != 1 || f[0].PacketsIn != 0 || f[0].BytesIn != 0 || f[0].NumConnectionsStarted != 1 {
		t.Fatalf("before the dump: %+v", f)
	}
	c.OnDump([]conntrack.Entry{{Orig: tu, OrigPackets: 3, OrigBytes: 180}})
	if f = c.Flush(t0.Add(2 * time.Second)); len(f) != 1 || f[0].PacketsIn != 3 || f[0].NumConnectionsStarted != 0 {
		t.Fatalf("after the dump: %+v", f)
	}
}

// Denied packets: every one is logged; the counters are the logged packets; the end of
// tier names its trigger; the connection ages out after AgeTimeout.
func TestDeniedPackets(t *testing.T) {
	r := newRules(t)
	c := newCollector(r)
	tu := flowlog.Tuple{Src: clientIP, Dst: serverIP, Proto: flowlog.ProtoUDP, SrcPort: 40001, DstPort: 5353}
	for range 3 {
		c.OnPacket(pkt(r.pass.Prefix(), tu, 128), t0)
		c.OnPacket(pkt(r.eotDefault.Prefix(), tu, 128), t0)
	}
	c.OnDump(nil)
	flows := c.Flush(t0.Add(time.Second))
	if len(flows) != 1 {
		t.Fatalf("flows %+v", flows)
	}
	f := flows[0]
	wantHits := []flowlog.PolicyHit{
		hit(flowlog.KindGlobalNetworkPolicy, "platform", "platform-pass", flowlog.Pass, 0, 0, ""),
		hit(flowlog.KindEndOfTier, "default", "", flowlog.Deny, 1, -1, "allow-web"),
	}
	if d := cmp.Diff(wantHits, f.Policies.Enforced); d != "" || f.Action != flowlog.Deny || f.PacketsIn != 3 ||
		f.BytesIn != 384 || f.PacketsOut != 0 || f.NumConnectionsStarted != 1 || f.NumConnectionsCompleted != 0 {
		t.Errorf("denied flow %+v\nhits (-want +got):\n%s", f, d)
	}
	if flows = c.Flush(t0.Add(DefaultAgeTimeout + 2*time.Second)); len(flows) != 1 || flows[0].NumConnectionsCompleted != 1 {
		t.Errorf("aged out: %+v", flows)
	}
	if c.Connections() != 0 {
		t.Errorf("%d connections kept", c.Connections())
	}
}

// Prefixes of the previous ruleset still resolve; unknown ones are counted; a remote
// destination gets no Dst report.
func TestTablesAndLocality(t *testing.T) {
	r := newRules(t)
	c := newCollector(r)
	c.SetTable(ruleid.NewTable()) // a new ruleset without those rules
	tu := flowlog.Tuple{Src: clientIP, Dst: serverIP, Proto: flowlog.ProtoICMP, SrcPort: 7, DstPort: 2048}
	c.OnPacket(pkt(r.eotPlatform.Prefix(), tu, 84), t0)
	c.OnPacket(pkt("API9|gnp/unknown", tu, 84), t0)
	remote := flowlog.Tuple{Src: serverIP, Dst: clientIP, Proto: flowlog.ProtoICMP, SrcPort: 8, DstPort: 2048}
	c.OnPacket(pkt(r.eotPlatform.Prefix(), remote, 84), t0)
	flows := c.Flush(t0.Add(time.Second))
	if len(flows) != 1 || flows[0].Policies.Enforced[0].Trigger.Name != "platform-pass" || flows[0].DestPort != 2048 {
		t.Errorf("flows %+v", flows)
	}
	if st := c.Stats(); st.UnknownPrefixes != 1 {
		t.Errorf("stats %+v", st)
	}
}

// With destination NAT, the filter hooks (and NFLOG) see the translated destination, which
// conntrack's reply tuple holds.
func TestDNATJoinsOnReplyTuple(t *testing.T) {
	r := newRules(t)
	c := newCollector(r)
	tu := flowlog.Tuple{Src: clientIP, Dst: serverIP, Proto: flowlog.ProtoTCP, SrcPort: 40002, DstPort: 8080}
	c.OnPacket(pkt(r.pass.Prefix(), tu, 60), t0)
	c.OnPacket(pkt(r.allow.Prefix(), tu, 60), t0)
	vip := netip.MustParseAddr("198.18.0.10")
	c.OnDump([]conntrack.Entry{{
		Orig:   flowlog.Tuple{Src: clientIP, Dst: vip, Proto: flowlog.ProtoTCP, SrcPort: 40002, DstPort: 80},
		Reply:  flowlog.Tuple{Src: serverIP, Dst: clientIP, Proto: flowlog.ProtoTCP, SrcPort: 8080, DstPort: 40002},
		DstNAT: true, OrigPackets: 3, OrigBytes: 200,
	}})
	if flows := c.Flush(t0.Add(time.Second)); len(flows) != 1 || flows[0].PacketsIn != 3 {
		t.Errorf("flows %+v", flows)
	}
}

// Between two local workloads both ends report: Src from the egress path (with "out" the
// original direction), Dst from the ingress path; the pending trace comes from Pending.
func TestBothReporters(t *testing.T) {
	must := func(r ruleid.RuleID, err error) ruleid.RuleID {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	egressAllow := must(ruleid.Rule(ruleid.Policy{Kind: flowlog.KindCalicoNetworkPolicy, Namespace: "prod", Name: "out"},
		"default", ruleid.Egress, 0, flowlog.Allow))
	profileAllow := must(ruleid.ProfileRule("openstack-sg-web", ruleid.Ingress, 2, flowlog.Allow))
	table := ruleid.NewTable()
	for _, r := range []ruleid.RuleID{egressAllow, profileAllow} {
		if _, err := table.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	a := flowlog.Endpoint{Type: flowlog.WorkloadEndpoint, Name: "client", Namespace: "prod"}
	b := flowlog.Endpoint{Type: flowlog.WorkloadEndpoint, Name: "web", Namespace: "prod"}
	staged := flowlog.PolicyHit{Kind: flowlog.KindStagedNetworkPolicy, Namespace: "prod", Name: "lockdown",
		Tier: "default", Action: flowlog.Deny}
	c := New(Config{
		Endpoints: fakeEndpoints{local: map[netip.Addr]flowlog.Endpoint{clientIP: a, serverIP: b}},
		Pending: func(_ flowlog.Tuple, d ruleid.Direction) ([]flowlog.PolicyHit, bool) {
			return []flowlog.PolicyHit{staged}, d == ruleid.Ingress
		},
	}, t0)
	c.SetTable(table)
	tu := flowlog.Tuple{Src: clientIP, Dst: serverIP, Proto: flowlog.ProtoTCP, SrcPort: 40000, DstPort: 443}
	c.OnPacket(nflog.Packet{Group: 2, Prefix: egressAllow.Prefix(), Length: 60, Tuple: tu}, t0)
	c.OnPacket(nflog.Packet{Group: 1, Prefix: profileAllow.Prefix(), Length: 60, Tuple: tu}, t0)
	c.OnDump([]conntrack.Entry{{Orig: tu, OrigPackets: 10, OrigBytes: 1000, ReplyPackets: 8, ReplyBytes: 5000}})
	flows := c.Flush(t0.Add(time.Minute))
	if len(flows) != 2 {
		t.Fatalf("flows %+v", flows)
	}
	src, dst := flows[0], flows[1]
	if src.Reporter != flowlog.Src {
		src, dst = dst, src
	}
	if src.PacketsOut != 10 || src.BytesIn != 5000 || src.Policies.Enforced[0].Name != "out" || len(src.Policies.Pending) != 0 {
		t.Errorf("source's report %+v", src)
	}
	if dst.PacketsIn != 10 || dst.BytesOut != 5000 || dst.Policies.Enforced[0].Kind != flowlog.KindProfile ||
		dst.Policies.Enforced[0].RuleIndex != 2 || len(dst.Policies.Pending) != 1 || dst.Policies.Pending[0].Name != "lockdown" {
		t.Errorf("destination's report %+v", dst)
	}
}
