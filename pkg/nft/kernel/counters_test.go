package kernel

import (
	"context"
	"testing"

	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/internal/nstest"
)

// TestLogGroupCounters: the counters of the rules that log to an NFLOG group come back by
// prefix, two rules with one prefix summed; rules without a group log or a counter do not;
// a missing table counts nothing.
func TestLogGroupCounters(t *testing.T) {
	ns := nstest.New(t)
	k := newBackend(t, ns)
	tb := nft.NewTable(nft.FamilyIP, "calico")
	must(t, tb.PutChain(&nft.Chain{Name: "out", Base: &nft.BaseChain{Type: nft.ChainFilter, Hook: nft.HookOutput},
		Rules: []nft.Rule{
			nft.NewRule(nft.L4Proto(nft.ProtoICMP), nft.LogGroup("API0|gnp/a", 1, 80), nft.Counter(), nft.Accept()),
			nft.NewRule(nft.L4Proto(nft.ProtoUDP), nft.LogGroup("API0|gnp/a", 1, 80), nft.Counter(), nft.Accept()),
			nft.NewRule(nft.LogGroup("DRE", 2, 80), nft.Accept()),
			nft.NewRule(nft.Log("x"), nft.Counter(), nft.Accept()),
		}}))
	applyOK(t, newApplier(t, k, tb), tb)
	ns.Exec(t, "ip", "link", "set", "lo", "up")
	ns.Exec(t, "ping", "-c", "2", "-W", "1", "127.0.0.1")
	got, err := k.LogGroupCounters(context.Background(), tb.ID())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got["API0|gnp/a"].Packets < 2 || got["API0|gnp/a"].Bytes < 2*84 {
		t.Errorf("counters %+v", got)
	}
	if none, err := k.LogGroupCounters(context.Background(), nft.TableID{Family: nft.FamilyIP6, Name: "calico"}); err != nil || len(none) != 0 {
		t.Errorf("missing table: %v %v", none, err)
	}
}
