package felix

import (
	"context"
	"encoding/json"
	"net/netip"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/flowlog"
	"github.com/calico-host/calico-host/pkg/flowlog/collector"
	"github.com/calico-host/calico-host/pkg/flowlog/conntrack"
	"github.com/calico-host/calico-host/pkg/flowlog/nflog"
	"github.com/calico-host/calico-host/pkg/flowlog/ruleid"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// decoded turns plural/namespace/name/JSON objects into updates, decoded as the syncer does.
func decoded(t *testing.T, objs ...[4]string) []syncer.Update {
	t.Helper()
	var out []syncer.Update
	for i, o := range objs {
		k, ok := api.KindByPlural(o[0])
		if !ok {
			t.Fatalf("no kind %q", o[0])
		}
		key := datastore.ResourceKey(k, o[1], o[2])
		raw := `{"kind":"` + k.Kind + `","apiVersion":"projectcalico.org/v3","metadata":{"name":"` + o[2] +
			`","namespace":"` + o[1] + `","labels":{"app":"` + o[2] + `"}},"spec":` + o[3] + `}`
		if !json.Valid([]byte(raw)) {
			t.Fatalf("bad JSON %s", raw)
		}
		v, err := datastore.Decode(key, []byte(raw), int64(i+1))
		if err != nil {
			t.Fatalf("decoding %s: %v", key, err)
		}
		if r, ok := v.(api.Resource); ok {
			api.SetDefaults(r)
		}
		out = append(out, syncer.Update{ID: datastore.IDOf(key), Value: v, Revision: int64(i + 1)})
	}
	return out
}

func (p *pendingFeed) isDropped() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dropped
}

// onlyLocal: b is the one local endpoint; web is the last policy of tier default.
type onlyLocal struct{ b netip.Addr }

func (o onlyLocal) Lookup(a netip.Addr) (flowlog.Endpoint, bool, bool) {
	if a != o.b {
		return flowlog.Endpoint{}, false, false
	}
	return flowlog.Endpoint{Type: flowlog.WorkloadEndpoint, Name: "b", Namespace: "prod"}, true, true
}

func (o onlyLocal) Trigger(a netip.Addr, _ ruleid.Direction, tier string) (ruleid.Policy, bool) {
	return ruleid.Policy{Kind: flowlog.KindGlobalNetworkPolicy, Name: "web"}, a == o.b && tier == "default"
}

// A staged deny over allowed traffic: calc's loop hands the syncer's messages to the feed, which
// builds its evaluator from them, and the collector's flow is enforced allow (web) with the
// staged deny (lockdown) pending.
func TestPendingFeedStagedDeny(t *testing.T) {
	ups := decoded(t,
		[4]string{"workloadendpoints", "prod", "h1-k8s-b-eth0", `{"orchestrator":"k8s","workload":"b","node":"h1",
			"endpoint":"eth0","interfaceName":"cali0b","ipNetworks":["10.65.0.2/32"]}`},
		[4]string{"globalnetworkpolicies", "", "web", `{"selector":"app == 'h1-k8s-b-eth0'","types":["Ingress"],
			"ingress":[{"action":"Allow","protocol":"TCP","destination":{"ports":[80]}}]}`},
		[4]string{"stagedglobalnetworkpolicies", "", "lockdown", `{"order":1,"selector":"all()","types":["Ingress"],
			"ingress":[{"action":"Deny","protocol":"TCP"}]}`})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	feed := newPendingFeed()
	in, out := make(chan syncer.Message), make(chan []calc.Update, 1)
	loop := calc.NewLoop(calc.New("h1", zerolog.Nop()), calc.RunConfig{Tee: feed.add})
	go loop.Run(ctx, in, out, nil)
	go feed.run(ctx, "h1", time.Minute, zerolog.Nop())
	in <- syncer.Message{Status: syncer.InSync, Snapshot: true, Updates: ups}
	if batch := <-out; len(batch) == 0 {
		t.Fatal("calc sent nothing for the snapshot")
	}
	web, err := ruleid.Rule(ruleid.Policy{Kind: flowlog.KindGlobalNetworkPolicy, Name: "web"}, "default", ruleid.Ingress, 0, flowlog.Allow)
	if err != nil {
		t.Fatal(err)
	}
	table := ruleid.NewTable()
	if _, err := table.Add(web); err != nil {
		t.Fatal(err)
	}
	b := netip.MustParseAddr("10.65.0.2")
	t0 := time.Unix(1_700_000_000, 0)
	c := collector.New(collector.Config{Endpoints: onlyLocal{b: b}, Pending: feed.evaluate, Log: zerolog.Nop()}, t0)
	c.SetTable(table)
	tu := flowlog.Tuple{Src: netip.MustParseAddr("10.65.0.1"), Dst: b, Proto: flowlog.ProtoTCP, SrcPort: 40000, DstPort: 80}
	for { // until the feed has built its evaluator from the snapshot
		if _, ok := feed.evaluate(tu, ruleid.Ingress); ok {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.OnPacket(nflog.Packet{Group: 1, Prefix: web.Prefix(), Length: 60, Tuple: tu}, t0)
	c.OnDump([]conntrack.Entry{{Orig: tu, OrigPackets: 3, OrigBytes: 180, ReplyPackets: 2, ReplyBytes: 120}})
	flows := c.Flush(t0.Add(time.Minute))
	if len(flows) != 1 {
		t.Fatalf("flows %+v", flows)
	}
	k := flows[0].Key
	if k.Action != flowlog.Allow || len(k.Policies.Enforced) != 1 || k.Policies.Enforced[0].Name != "web" {
		t.Errorf("enforced %s %+v, want allow by web", k.Action, k.Policies.Enforced)
	}
	want := flowlog.PolicyHit{Kind: flowlog.KindStagedGlobalNetworkPolicy, Tier: "default", Name: "lockdown",
		Action: flowlog.Deny, RuleIndex: 0}
	if p := k.Policies.Pending; len(p) != 1 || p[0] != want {
		t.Errorf("pending %+v, want %+v", p, want)
	}
}
