package flowlog

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)

func tcp(src string, sport uint16, dst string, dport uint16) Tuple {
	return Tuple{Src: netip.MustParseAddr(src), Dst: netip.MustParseAddr(dst), Proto: ProtoTCP, SrcPort: sport, DstPort: dport}
}

func allowHit() PolicyHit {
	return PolicyHit{Kind: KindGlobalNetworkPolicy, Name: "allow-web", Tier: "default", Action: Allow, RuleIndex: 1}
}

func web(labels map[string]string) Endpoint {
	return Endpoint{Type: WorkloadEndpoint, Name: "web-*", Namespace: "prod", Labels: labels}
}

func update(tu Tuple, src Endpoint) Update {
	return Update{
		Tuple: tu, Source: src, Dest: web(map[string]string{"app": "web"}),
		Reporter: Dst, Action: Allow,
		Policies: Trace{Enforced: []PolicyHit{allowHit()}},
	}
}

// Connections from two client ports of two workloads of one set aggregate into one flow
// (addresses and source ports are not part of the key); labels are the intersection.
func TestAggregateByKey(t *testing.T) {
	a := NewAggregator(t0, 0)
	u1 := update(tcp("10.65.0.2", 40000, "10.65.0.3", 80), web(map[string]string{"app": "client", "v": "1"}))
	u1.PacketsIn, u1.BytesIn, u1.PacketsOut, u1.BytesOut = 3, 180, 2, 120
	u2 := update(tcp("10.65.0.4", 40001, "10.65.0.3", 80), web(map[string]string{"app": "client", "v": "2"}))
	u2.PacketsIn, u2.BytesIn = 1, 60
	for _, u := range []Update{u1, u2} {
		if err := a.Feed(u); err != nil {
			t.Fatal(err)
		}
	}
	flows := a.Flush(t0.Add(time.Minute))
	if len(flows) != 1 {
		t.Fatalf("got %d flows, want 1: %+v", len(flows), flows)
	}
	f := flows[0]
	want := Flow{
		StartTime: t0, EndTime: t0.Add(time.Minute),
		Key: Key{
			SourceName: "web-*", SourceNamespace: "prod", SourceType: WorkloadEndpoint,
			DestName: "web-*", DestNamespace: "prod", DestType: WorkloadEndpoint,
			DestPort: 80, Proto: "tcp", Reporter: Dst, Action: Allow,
			Policies: Trace{Enforced: []PolicyHit{allowHit()}, Pending: []PolicyHit{}},
		},
		SourceLabels: []string{"app=client"}, DestLabels: []string{"app=web"},
		PacketsIn: 4, PacketsOut: 2, BytesIn: 240, BytesOut: 120,
		NumConnectionsStarted: 2, NumConnectionsLive: 2,
	}
	if d := cmp.Diff(want, f); d != "" {
		t.Errorf("flow (-want +got):\n%s", d)
	}
}

// A different enforced trace, action or reporter makes a different flow.
func TestAggregateSplitsOnTraceActionReporter(t *testing.T) {
	a := NewAggregator(t0, 0)
	base := update(tcp("10.65.0.2", 40000, "10.65.0.3", 80), web(nil))
	deny := base
	deny.Action = Deny
	deny.Policies = Trace{Enforced: []PolicyHit{{Kind: KindEndOfTier, Tier: "default", Action: Deny, RuleIndex: -1,
		Trigger: &PolicyHit{Kind: KindGlobalNetworkPolicy, Name: "allow-web", Tier: "default"}}}}
	src := base
	src.Reporter = Src
	for _, u := range []Update{base, deny, src} {
		if err := a.Feed(u); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(a.Flush(t0.Add(time.Second))); got != 3 {
		t.Errorf("got %d flows, want 3", got)
	}
}

// A flow with an open connection is reported again in the next interval (idle: zero
// counters, live 1); once its connection completed it is reported once more and forgotten.
func TestAggregateLifecycle(t *testing.T) {
	a := NewAggregator(t0, 0)
	tu := tcp("10.65.0.2", 40000, "10.65.0.3", 80)
	u := update(tu, web(nil))
	u.PacketsIn = 5
	must(t, a.Feed(u))
	f1 := a.Flush(t0.Add(time.Minute))
	if len(f1) != 1 || f1[0].NumConnectionsStarted != 1 || f1[0].NumConnectionsLive != 1 || f1[0].PacketsIn != 5 {
		t.Fatalf("first interval: %+v", f1)
	}
	f2 := a.Flush(t0.Add(2 * time.Minute))
	if len(f2) != 1 || f2[0].NumConnectionsStarted != 0 || f2[0].NumConnectionsLive != 1 || f2[0].PacketsIn != 0 ||
		!f2[0].StartTime.Equal(t0.Add(time.Minute)) {
		t.Fatalf("idle interval: %+v", f2)
	}
	done := u
	done.Completed, done.PacketsIn = true, 1
	must(t, a.Feed(done))
	f3 := a.Flush(t0.Add(3 * time.Minute))
	if len(f3) != 1 || f3[0].NumConnectionsCompleted != 1 || f3[0].NumConnectionsStarted != 0 || f3[0].PacketsIn != 1 {
		t.Fatalf("completing interval: %+v", f3)
	}
	if f4 := a.Flush(t0.Add(4 * time.Minute)); len(f4) != 0 || a.Len() != 0 {
		t.Fatalf("after completion: %+v, %d held", f4, a.Len())
	}
}

// The pending trace is the latest one seen, not a union.
func TestAggregatePendingIsLatest(t *testing.T) {
	a := NewAggregator(t0, 0)
	u := update(tcp("10.65.0.2", 40000, "10.65.0.3", 80), web(nil))
	stagedDeny := PolicyHit{Kind: KindStagedGlobalNetworkPolicy, Name: "lockdown", Tier: "default", Action: Deny}
	u.Policies.Pending = []PolicyHit{stagedDeny}
	must(t, a.Feed(u))
	u.Policies.Pending = []PolicyHit{allowHit()}
	must(t, a.Feed(u))
	f := a.Flush(t0.Add(time.Second))
	if d := cmp.Diff([]PolicyHit{allowHit()}, f[0].Policies.Pending); d != "" {
		t.Errorf("pending (-want +got):\n%s", d)
	}
}

// A connection whose first update is its last counts as started and completed.
func TestAggregateShortConnection(t *testing.T) {
	a := NewAggregator(t0, 0)
	u := update(tcp("10.65.0.2", 40000, "10.65.0.3", 80), web(nil))
	u.Completed = true
	must(t, a.Feed(u))
	f := a.Flush(t0.Add(time.Second))
	if len(f) != 1 || f[0].NumConnectionsStarted != 1 || f[0].NumConnectionsCompleted != 1 || f[0].NumConnectionsLive != 1 {
		t.Fatalf("%+v", f)
	}
	if a.Len() != 0 {
		t.Error("completed flow kept")
	}
}

func TestAggregateBound(t *testing.T) {
	a := NewAggregator(t0, 1)
	must(t, a.Feed(update(tcp("10.65.0.2", 1, "10.65.0.3", 80), web(nil))))
	must(t, a.Feed(update(tcp("10.65.0.2", 1, "10.65.0.3", 81), web(nil))))
	must(t, a.Feed(update(tcp("10.65.0.2", 2, "10.65.0.3", 80), web(nil))))
	if a.Len() != 1 || a.Dropped() != 1 {
		t.Errorf("held %d, dropped %d; want 1, 1", a.Len(), a.Dropped())
	}
}

func TestFeedRefusesInvalid(t *testing.T) {
	good := update(tcp("10.65.0.2", 1, "10.65.0.3", 80), web(nil))
	bad := map[string]func(*Update){
		"no tuple":           func(u *Update) { u.Tuple = Tuple{} },
		"mixed families":     func(u *Update) { u.Tuple.Dst = netip.MustParseAddr("fd5c::1") },
		"pass is no verdict": func(u *Update) { u.Action = Pass },
		"no reporter":        func(u *Update) { u.Reporter = ReporterUnspecified },
		"global policy in a namespace": func(u *Update) {
			u.Policies.Enforced[0].Namespace = "prod"
		},
		"end of tier without trigger": func(u *Update) {
			u.Policies.Enforced = []PolicyHit{{Kind: KindEndOfTier, Tier: "default", Action: Deny, RuleIndex: -1}}
		},
		"misnumbered": func(u *Update) { u.Policies.Enforced[0].PolicyIndex = 3 },
	}
	for name, mut := range bad {
		u := good
		u.Policies.Enforced = cloneHits(good.Policies.Enforced)
		mut(&u)
		if err := NewAggregator(t0, 0).Feed(u); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// One line of the flow log: Goldmane's field names in snake_case, enums by name, the
// policies under "enforced" and "pending".
func TestFlowJSON(t *testing.T) {
	f := Flow{
		StartTime: t0, EndTime: t0.Add(5 * time.Minute),
		Key: Key{
			SourceName: "client-*", SourceNamespace: "prod", SourceType: WorkloadEndpoint,
			DestName: "pvt", DestNamespace: NoNamespace, DestType: Network,
			DestPort: 443, Proto: "tcp", Reporter: Src, Action: Deny,
			Policies: Trace{
				Enforced: []PolicyHit{{Kind: KindEndOfTier, Tier: "security", Action: Deny, RuleIndex: -1,
					Trigger: &PolicyHit{Kind: KindCalicoNetworkPolicy, Name: "egress", Namespace: "prod", Tier: "security"}}},
				Pending: []PolicyHit{},
			},
		},
		SourceLabels: []string{"app=client"}, DestLabels: []string{},
		PacketsOut: 3, BytesOut: 180,
	}
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"start_time":"2026-12-06T10:00:00Z","end_time":"2026-12-06T10:05:00Z",` +
		`"source_name":"client-*","source_namespace":"prod","source_type":"WorkloadEndpoint",` +
		`"dest_name":"pvt","dest_namespace":"-","dest_type":"Network","dest_port":443,"proto":"tcp",` +
		`"reporter":"Src","action":"Deny","policies":{"enforced":[{"kind":"EndOfTier","name":"","namespace":"",` +
		`"tier":"security","action":"Deny","policy_index":0,"rule_index":-1,"trigger":{"kind":"CalicoNetworkPolicy",` +
		`"name":"egress","namespace":"prod","tier":"security","action":"ActionUnspecified","policy_index":0,` +
		`"rule_index":0,"trigger":null}}],"pending":[]},"source_labels":["app=client"],"dest_labels":[],` +
		`"packets_in":0,"packets_out":3,"bytes_in":0,"bytes_out":180,"num_connections_started":0,` +
		`"num_connections_completed":0,"num_connections_live":0}`
	if string(b) != want {
		t.Errorf("JSON:\n got %s\nwant %s", b, want)
	}
	var back Flow
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(f, back); d != "" {
		t.Errorf("round trip (-want +got):\n%s", d)
	}
	if err := json.Unmarshal([]byte(strings.Replace(string(b), `"Deny"`, `"Drop"`, 1)), &back); err == nil {
		t.Error("unknown action accepted")
	}
}

func TestPolicyHitLabel(t *testing.T) {
	cases := map[string]PolicyHit{
		"0|default|gnp:allow-web|allow|1": allowHit(),
		"2|security|np:prod/egress|deny|-1": {Kind: KindEndOfTier, Tier: "security", Action: Deny, PolicyIndex: 2,
			RuleIndex: -1, Trigger: &PolicyHit{Kind: KindCalicoNetworkPolicy, Name: "egress", Namespace: "prod"}},
		"1|__PROFILE__|pro:kns.prod|allow|0": {Kind: KindProfile, Name: "kns.prod", Action: Allow, PolicyIndex: 1},
	}
	for want, h := range cases {
		if got := h.String(); got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}

func TestNetworkEndpoint(t *testing.T) {
	for addr, want := range map[string]string{
		"10.1.2.3": PrivateNetwork, "172.31.0.1": PrivateNetwork, "192.168.1.1": PrivateNetwork,
		"::ffff:10.0.0.1": PrivateNetwork, "198.18.0.1": PublicNetwork, "fd5c::1": PublicNetwork,
	} {
		if got := NetworkEndpoint(netip.MustParseAddr(addr)); got.Name != want || got.Namespace != NoNamespace {
			t.Errorf("%s: %+v, want %s", addr, got, want)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
