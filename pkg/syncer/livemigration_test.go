package syncer_test

import (
	"strings"
	"testing"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// A LiveMigration exactly as networking-calico writes it (datamodel_v3.py put with the spec of
// endpoints.py live_migration_spec) reaches felix's syncer decoded; an object that cannot be
// correlated (no endpointID) is logged with its key and delivered as absent.
func TestLiveMigrationFromNetworkingCalico(t *testing.T) {
	srv, raw := startEtcd(t)
	const lmPrefix = datastore.ResourcePrefix + "livemigrations/openstack/"
	name := "host--b-openstack-inst--1-port--1"
	good := `{"kind": "LiveMigration", "apiVersion": "projectcalico.org/v3", "metadata": {"name": "` + name + `", ` +
		`"namespace": "openstack", "creationTimestamp": "2026-12-01T22:00:00Z", "uid": "0b6c3a4e-6a39-4a1e-9d35-7d2f0c1e9a11"}, ` +
		`"spec": {"source": {"workloadEndpoint": {"hostname": "host-a", "orchestratorID": "openstack", "workloadID": "openstack/inst-1", "endpointID": "port-1"}}, ` +
		`"target": {"workloadEndpoint": {"hostname": "host-b", "orchestratorID": "openstack", "workloadID": "openstack/inst-1", "endpointID": "port-1"}}}}`
	bad := strings.ReplaceAll(good, `, "endpointID": "port-1"}}}}`, `}}}}`)
	put(t, raw, lmPrefix+name, good)
	put(t, raw, lmPrefix+"bad", bad)
	c := startConsumer(t, newClient(t, srv.Datastore()), syncer.Config{Prefixes: []string{datastore.ResourcePrefix},
		Decoder: syncer.FailClosedDecoder})
	c.waitFor(t, "the LiveMigration", func() bool { return c.model[lmPrefix+name].Value != nil })
	lm, ok := c.modelCopy()[lmPrefix+name].Value.(*api.LiveMigration)
	if !ok {
		t.Fatalf("decoded as %T", c.modelCopy()[lmPrefix+name].Value)
	}
	src, tgt := lm.Spec.Source.WorkloadEndpoint, lm.Spec.Target.WorkloadEndpoint
	want := api.WorkloadEndpointIdentifiers{Hostname: "host-b", OrchestratorID: "openstack", WorkloadID: "openstack/inst-1", EndpointID: "port-1"}
	if src == nil || tgt == nil || *tgt != want || src.Hostname != "host-a" || lm.Namespace != "openstack" || lm.UID == "" {
		t.Fatalf("decoded %+v", lm)
	}
	if v := c.modelCopy()[lmPrefix+"bad"].Value; v != nil {
		t.Fatalf("invalid LiveMigration delivered as %T", v)
	}
	if logs := c.logs.String(); !strings.Contains(logs, lmPrefix+"bad") || !strings.Contains(logs, "endpointID") {
		t.Fatalf("the invalid object was not logged with its key:\n%s", logs)
	}
}
