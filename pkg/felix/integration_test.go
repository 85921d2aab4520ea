package felix

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/calico-host/calico-host/internal/logtest"
	"github.com/calico-host/calico-host/pkg/daemon/notifytest"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/datastore/etcdtest"
	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/rules"
	"github.com/calico-host/calico-host/pkg/syncer"
)

func put(t *testing.T, cli *clientv3.Client, kind, name, spec string) {
	t.Helper()
	key := datastore.ResourcePrefix + kind + "/" + name
	if kind == "workloadendpoints" {
		name = name[len("openstack/"):]
	}
	val := fmt.Sprintf(`{"kind":"x","apiVersion":"projectcalico.org/v3","metadata":{"name":%q,"uid":"00000000-0000-4000-8000-000000000001","creationTimestamp":"2026-01-01T00:00:00Z"},"spec":%s}`, name, spec)
	switch kind {
	case "clusterinformations":
		val = replaceKind(val, "ClusterInformation")
	case "felixconfigurations":
		val = replaceKind(val, "FelixConfiguration")
	case "nodes":
		val = replaceKind(val, "Node")
	case "ippools":
		val = replaceKind(val, "IPPool")
	case "workloadendpoints":
		val = fmt.Sprintf(`{"kind":"WorkloadEndpoint","apiVersion":"projectcalico.org/v3","metadata":{"name":%q,"namespace":"openstack","uid":"00000000-0000-4000-8000-000000000002","creationTimestamp":"2026-01-01T00:00:00Z","labels":{"projectcalico.org/namespace":"openstack","projectcalico.org/orchestrator":"openstack"}},"spec":%s}`, name, spec)
	}
	if _, err := cli.Put(context.Background(), key, val); err != nil {
		t.Fatal(err)
	}
}

func replaceKind(val, kind string) string { return `{"kind":"` + kind + `"` + val[len(`{"kind":"x"`):] }

// TestWithRealSyncer runs the daemon on the real syncer and calculation graph against etcd, with
// only the dataplane faked: FelixConfiguration and ClusterInformation written as
// Project Calico's tools write them drive the startup gate, the dataplane configuration, live
// changes and restarts; a networking-calico port gets its status key.
func TestWithRealSyncer(t *testing.T) {
	sock := notifytest.Listen(t, 0)
	srv := etcdtest.Start(t)
	cli := srv.Client()
	put(t, cli, "clusterinformations", "default", `{"clusterGUID":"abc","calicoVersion":"v3.30","datastoreReady":false}`)
	put(t, cli, "felixconfigurations", "default", `{"reportingInterval":"1s","logSeverityScreen":"Info","endpointReportingEnabled":true,"interfacePrefix":"cali,tap","endpointReportingDelay":"10ms"}`)
	put(t, cli, "felixconfigurations", "node.host-a", `{"defaultEndpointToHostAction":"Return","failsafeInboundHostPorts":[{"protocol":"TCP","port":22},{"protocol":"UDP","net":"fd5c::/16","port":68}]}`)
	put(t, cli, "nodes", "host-a", `{"bgp":{"ipv4Address":"198.18.0.1/24"}}`)
	put(t, cli, "ippools", "pool1", `{"cidr":"10.65.0.0/16","vxlanMode":"Always","ipipMode":"Never","natOutgoing":true,"blockSize":26,"nodeSelector":"all()"}`)
	put(t, cli, "workloadendpoints", "openstack/host--a-openstack-instance--1-port--1",
		`{"orchestrator":"openstack","workload":"instance-1","node":"host-a","endpoint":"port-1","interfaceName":"tapport-1","mac":"00:11:22:33:44:55","ipNetworks":["10.65.0.2/32"]}`)

	ds := datastore.NewFromEtcd(cli)
	log := logtest.Logger(t)
	s := syncer.New(ds, syncer.Config{Prefixes: []string{datastore.ResourcePrefix, datastore.BlockPrefix}}, log)
	h := &harness{t: t, etcd: srv}
	h.run(s, []string{"FELIX_FELIXHOSTNAME=host-a"})

	sock.WaitFor(t, "STATUS=Waiting for ClusterInformation default to have datastoreReady: true", 10*time.Second)
	put(t, cli, "clusterinformations", "default", `{"clusterGUID":"abc","calicoVersion":"v3.30","datastoreReady":true}`)
	dp := h.dataplane()
	c := dp.cfg
	if !slices.Equal(c.InterfacePrefixes, []string{"cali", "tap"}) || c.DefaultEndpointToHostAction != rules.ActionReturn ||
		!c.VXLANEnabled || !c.OpenStack || len(c.FailsafeInbound) != 2 || c.FailsafeInbound[1].Net.String() != "fd5c::/16" {
		t.Errorf("dataplane config from etcd: %+v", c)
	}
	var wepID *calc.WorkloadEndpointID
	deadline := time.Now().Add(5 * time.Second)
	for wepID == nil && time.Now().Before(deadline) {
		for _, b := range dp.received() {
			for _, u := range b {
				if w, ok := u.(calc.WorkloadEndpointUpdate); ok {
					wepID = &w.ID
				}
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if wepID == nil {
		t.Fatal("the dataplane never got the workload endpoint")
	}
	close(dp.release)
	sock.WaitFor(t, "READY=1", 5*time.Second)
	dp.statuses <- dataplane.EndpointStatus{Workload: wepID, Status: "up"}
	waitEtcd(t, cli, "/calico/felix/v2/no-region/host/host-a/workload/openstack/openstack%2finstance-1/endpoint/port-1", `{"status":"up"}`)
	waitEtcd(t, cli, "/calico/felix/v2/no-region/host/host-a/status", "*")

	<-h.levels // initial
	put(t, cli, "felixconfigurations", "default", `{"reportingInterval":"1s","logSeverityScreen":"Debug","endpointReportingEnabled":true,"interfacePrefix":"cali,tap","endpointReportingDelay":"10ms"}`)
	select {
	case l := <-h.levels:
		if l != zerolog.DebugLevel {
			t.Errorf("live log level %v", l)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("logSeverityScreen change not applied live")
	}
	put(t, cli, "felixconfigurations", "node.host-a", `{"defaultEndpointToHostAction":"Accept"}`)
	if err := h.exit(); !errors.Is(err, ErrRestart) {
		t.Fatalf("Run returned %v after a restart parameter changed, want ErrRestart", err)
	}
}
