package calc

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/syncer"
)

func TestSnapshotsReplaceTheModel(t *testing.T) {
	g, m := newTestGraph("h1"), newModel()
	a := wep("ns", "h1", "a", nil, []string{"10.65.0.1/32"})
	b := wep("ns", "h1", "b", nil, []string{"10.65.0.2/32"})
	a.Revision, b.Revision = 10, 11
	g.OnMessage(syncer.Message{Status: syncer.InSync, Snapshot: true, Updates: []syncer.Update{a, b}})
	flushInto(t, g, m)
	if len(m.WEPs) != 2 {
		t.Fatalf("endpoints = %d", len(m.WEPs))
	}
	// The same snapshot again (a resync after compaction): nothing changes.
	g.OnMessage(syncer.Message{Status: syncer.InSync, Snapshot: true, Updates: []syncer.Update{a, b}})
	if batch := g.Flush(); batch != nil {
		t.Errorf("identical resync produced %v", batch)
	}
	// A snapshot without b deletes it.
	g.OnMessage(syncer.Message{Status: syncer.InSync, Snapshot: true, Updates: []syncer.Update{a}})
	flushInto(t, g, m)
	if _, ok := m.WEPs[wepID("ns", "b")]; ok || len(m.WEPs) != 1 {
		t.Errorf("after snapshot without b: %v", m.WEPs)
	}
}

func TestInSyncOnceAfterTheFirstSnapshot(t *testing.T) {
	g := newTestGraph("h1")
	steps := []struct {
		msg        syncer.Message
		wantInSync bool
	}{
		{syncer.Message{Status: syncer.ResyncInProgress, Snapshot: true}, false},
		{syncer.Message{Status: syncer.ResyncInProgress, Updates: []syncer.Update{node("h2", "", "")}}, false},
		{syncer.Message{Status: syncer.InSync}, true},
		{syncer.Message{Status: syncer.WaitingForDatastore}, false},
		{syncer.Message{Status: syncer.InSync, Snapshot: true}, false},
	}
	for i, st := range steps {
		g.OnMessage(st.msg)
		got := false
		for _, u := range g.Flush() {
			if _, ok := u.(InSync); ok {
				got = true
			}
		}
		if got != st.wantInSync {
			t.Errorf("step %d: InSync sent = %v, want %v", i, got, st.wantInSync)
		}
	}
}

func TestUninterpretableValuesAreAbsentAndLogged(t *testing.T) {
	var logs bytes.Buffer
	g, m := New("h1", zerolog.New(&logs)), newModel()
	badIP := wep("ns", "h1", "bad", nil, []string{"10.65.0.300/32"})
	noIP := wep("ns", "h1", "noip", nil, nil)
	wrongType := up(resKey("globalnetworkpolicies", "", "odd"), &api.Tier{})
	badSel := gnp("badsel", api.GlobalNetworkPolicySpec{Selector: "role == "})
	badPool := pool("bad", "10.65.0.0/33", "", false)
	snapshot(g, wep("ns", "h1", "good", nil, []string{"10.65.0.1/32"}), badIP, noIP, wrongType, badSel, badPool,
		gnp("all", api.GlobalNetworkPolicySpec{Selector: "all()", Ingress: []api.Rule{rule("Allow"), rule("Allow", proto("GRE"))}}))
	flushInto(t, g, m)
	if len(m.WEPs) != 1 || len(m.Policies) != 1 || len(m.Pools) != 0 {
		t.Errorf("endpoints %d, policies %d, pools %d; want 1, 1, 0", len(m.WEPs), len(m.Policies), len(m.Pools))
	}
	// The uninterpretable rule stays in its place, marked Invalid: the dataplane drops what
	// reaches it (fail closed) instead of skipping it.
	if rules := m.Policies[gnpID("all")].InboundRules; len(rules) != 2 || rules[0].Invalid != "" || rules[1].Invalid == "" {
		t.Errorf("rules = %+v, want the valid one, then an Invalid one", rules)
	}
	for _, key := range []string{badIP.ID.Key(), noIP.ID.Key(), wrongType.ID.Key(), badSel.ID.Key(), badPool.ID.Key()} {
		if !strings.Contains(logs.String(), key) {
			t.Errorf("no log line names %s", key)
		}
	}
	if !strings.Contains(logs.String(), "unknown protocol") {
		t.Error("the dropped rule is not logged")
	}
	// A valid value replaces the bad one.
	feed(g, wep("ns", "h1", "bad", nil, []string{"10.65.0.3/32"}))
	flushInto(t, g, m)
	if len(m.WEPs) != 2 {
		t.Errorf("endpoints = %d after fixing the bad one", len(m.WEPs))
	}
}
