package calc

import (
	"testing"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// osWEP is an OpenStack workload endpoint of instance inst, port port, bound to node.
func osWEP(node, inst, port string) (syncer.Update, WorkloadEndpointID) {
	name := api.WorkloadEndpointName(node, "openstack", inst, port)
	w := &api.WorkloadEndpoint{ObjectMeta: api.ObjectMeta{Name: name, Namespace: "openstack"},
		Spec: api.WorkloadEndpointSpec{Orchestrator: "openstack", Node: node, Workload: inst, Endpoint: port,
			InterfaceName: "tap" + port, IPNetworks: []string{"10.65.0.7/32"}}}
	return up(resKey("workloadendpoints", "openstack", name), w),
		WorkloadEndpointID{OrchestratorID: "openstack", WorkloadID: "openstack/" + inst, EndpointID: port}
}

// osMigration is the LiveMigration networking-calico writes when port of inst moves from src to
// dst (endpoints.py live_migration_spec), stored under the destination endpoint's name.
func osMigration(src, dst, inst, port string) syncer.Update {
	ident := func(host string) *api.WorkloadEndpointIdentifiers {
		return &api.WorkloadEndpointIdentifiers{Hostname: host, OrchestratorID: "openstack",
			WorkloadID: "openstack/" + inst, EndpointID: port}
	}
	name := api.WorkloadEndpointName(dst, "openstack", inst, port)
	return up(resKey("livemigrations", "openstack", name), &api.LiveMigration{
		ObjectMeta: api.ObjectMeta{Name: name, Namespace: "openstack"},
		Spec: api.LiveMigrationSpec{Source: &api.LiveMigrationSource{WorkloadEndpoint: ident(src)},
			Target: &api.LiveMigrationTarget{WorkloadEndpoint: ident(dst)}}})
}

func TestLiveMigrationRoles(t *testing.T) {
	srcWEP, id := osWEP("h1", "inst-1", "port-1")
	dstWEP, _ := osWEP("h2", "inst-1", "port-1")
	lm := osMigration("h1", "h2", "inst-1", "port-1")
	otherWEP, otherID := osWEP("h2", "inst-2", "port-2")

	// The migration is written before the target endpoint (mech_calico.py): the role is known
	// when the endpoint first appears.
	target, tm := newTestGraph("h2"), newModel()
	snapshot(target, lm, otherWEP)
	flushInto(t, target, tm)
	feed(target, dstWEP)
	flushInto(t, target, tm)
	source, sm := newTestGraph("h1"), newModel()
	snapshot(source, srcWEP, lm)
	flushInto(t, source, sm)
	for _, c := range []struct {
		name string
		m    *dpModel
		id   WorkloadEndpointID
		want MigrationRole
	}{{"target", tm, id, MigrationTarget}, {"source", sm, id, MigrationSource}, {"unnamed", tm, otherID, MigrationNone}} {
		if got := c.m.WEPs[c.id].LiveMigration; got != c.want {
			t.Errorf("%s: role %s, want %s", c.name, got, c.want)
		}
	}

	// Deleting the migration clears both roles; the endpoints are re-sent.
	feed(target, del(lm.ID.Key()))
	feed(source, del(lm.ID.Key()))
	if len(flushInto(t, target, tm)) == 0 || len(flushInto(t, source, sm)) == 0 {
		t.Fatal("deleting the LiveMigration sent nothing")
	}
	if r1, r2 := tm.WEPs[id].LiveMigration, sm.WEPs[id].LiveMigration; r1 != MigrationNone || r2 != MigrationNone {
		t.Errorf("after deletion: target %s, source %s", r1, r2)
	}

	// A migration naming an existing endpoint gives it the role at once; an invalid value (as the
	// syncer delivers it: absent) takes it away.
	feed(target, lm)
	flushInto(t, target, tm)
	if got := tm.WEPs[id].LiveMigration; got != MigrationTarget {
		t.Errorf("re-created migration: role %s", got)
	}
	feed(target, syncer.Update{ID: lm.ID})
	flushInto(t, target, tm)
	if got := tm.WEPs[id].LiveMigration; got != MigrationNone {
		t.Errorf("migration now absent: role %s", got)
	}
}

// A workload-level source names every endpoint of the workload; a target selector (KubeVirt) is
// accepted but gives no role.
func TestLiveMigrationWorkloadAndSelectorForms(t *testing.T) {
	w, id := osWEP("h1", "inst-1", "port-1")
	sel := "all()"
	lm := up(resKey("livemigrations", "openstack", "m"), &api.LiveMigration{
		ObjectMeta: api.ObjectMeta{Name: "m", Namespace: "openstack"},
		Spec: api.LiveMigrationSpec{
			Source: &api.LiveMigrationSource{Workload: &api.WorkloadIdentifier{Hostname: "h1", OrchestratorID: "openstack", WorkloadID: "openstack/inst-1"}},
			Target: &api.LiveMigrationTarget{Selector: &sel}}})
	g, m := newTestGraph("h1"), newModel()
	snapshot(g, w, lm)
	flushInto(t, g, m)
	if got := m.WEPs[id].LiveMigration; got != MigrationSource {
		t.Errorf("workload-level source: role %s, want source", got)
	}
}
