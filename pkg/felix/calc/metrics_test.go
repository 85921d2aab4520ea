package calc

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// TestCalicoMetricNames: Project Calico's felix_resync_state, felix_cluster_num_* and
// felix_active_local_* follow the datastore: counts cluster-wide and on this host go up with a
// snapshot and events and down with deletions.
func TestCalicoMetricNames(t *testing.T) {
	g, m := newTestGraph("host-a"), newMetrics()
	msg := func(mg syncer.Message) {
		m.onMessage(mg)
		g.OnMessage(mg)
		if b := g.Flush(); b != nil {
			m.onFlush(len(b), g)
		}
	}
	gauge := func(name string) float64 {
		for _, c := range clusterGauges {
			if c.name == name {
				return testutil.ToFloat64(m.cluster[c.plural])
			}
		}
		t.Fatalf("no gauge %s", name)
		return 0
	}
	msg(syncer.Message{Status: syncer.WaitingForDatastore})
	if v := testutil.ToFloat64(m.resyncState); v != 1 {
		t.Errorf("felix_resync_state while waiting = %v, want 1", v)
	}
	allow := api.GlobalNetworkPolicySpec{Selector: "all()", Ingress: []api.Rule{rule("Allow")}}
	msg(syncer.Message{Status: syncer.InSync, Snapshot: true, Updates: []syncer.Update{
		node("host-a", "198.18.0.1", ""), node("host-b", "198.18.0.2", ""),
		wep("ns1", "host-a", "c1", nil, []string{"10.65.0.1/32"}), wep("ns1", "host-b", "c2", nil, []string{"10.65.1.1/32"}),
		hep("eth0-b", "host-b", "eth0", nil, nil),
		gnp("allow", allow), np("ns1", "none", api.NetworkPolicySpec{Selector: "app == 'x'"}),
		profile("p1", nil, nil, nil),
	}})
	want := map[string]float64{"felix_cluster_num_hosts": 2, "felix_cluster_num_workload_endpoints": 2,
		"felix_cluster_num_host_endpoints": 1, "felix_cluster_num_policies": 2, "felix_cluster_num_profiles": 1}
	for name, w := range want {
		if v := gauge(name); v != w {
			t.Errorf("%s = %v, want %v", name, v, w)
		}
	}
	if v := testutil.ToFloat64(m.resyncState); v != 3 {
		t.Errorf("felix_resync_state in sync = %v, want 3", v)
	}
	if ep, pol := testutil.ToFloat64(m.activeEPs), testutil.ToFloat64(m.activePols); ep != 1 || pol != 1 {
		t.Errorf("active local endpoints %v policies %v, want 1 and 1 (only allow matches c1)", ep, pol)
	}
	msg(syncer.Message{Status: syncer.InSync, Updates: []syncer.Update{
		del(wepKey("ns1", "host-a", "c1")), del(resKey("globalnetworkpolicies", "", "allow")),
	}})
	if v := gauge("felix_cluster_num_workload_endpoints"); v != 1 {
		t.Errorf("workload endpoints after a deletion = %v, want 1", v)
	}
	if v := gauge("felix_cluster_num_policies"); v != 1 {
		t.Errorf("policies after a deletion = %v, want 1", v)
	}
	if ep, pol := testutil.ToFloat64(m.activeEPs), testutil.ToFloat64(m.activePols); ep != 0 || pol != 0 {
		t.Errorf("active local endpoints %v policies %v after deletions, want 0 and 0", ep, pol)
	}
	if n := testutil.ToFloat64(m.resyncsStarted); n != 1 {
		t.Errorf("felix_resyncs_started = %v, want 1", n)
	}
	if n := testutil.ToFloat64(m.updates.WithLabelValues("event")); n != 2 {
		t.Errorf("event updates processed = %v, want 2", n)
	}
}
