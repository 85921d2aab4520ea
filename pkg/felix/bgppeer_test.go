package felix

import (
	"context"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/calico-host/calico-host/internal/logtest"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/datastore/etcdtest"
	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// TestLocalBGPPeerWithRealEtcd: felix on the real syncer and calculation graph against etcd
// gives the workload endpoint that a BGPPeer's localWorkloadSelector selects the peering
// addresses of BGPConfiguration default, as Project Calico's tools write these objects, and
// takes them away when the BGPPeer is deleted.
func TestLocalBGPPeerWithRealEtcd(t *testing.T) {
	srv := etcdtest.Start(t)
	cli := srv.Client()
	ts := createdAt("2026-01-01T00:00:00Z")
	putRaw(t, cli, "clusterinformations", "ClusterInformation", "default", ts, `{"datastoreReady":true}`)
	putRaw(t, cli, "nodes", "Node", "host-a", ts, `{"bgp":{"ipv4Address":"198.18.0.1/24"}}`)
	putRaw(t, cli, "bgpconfigurations", "BGPConfiguration", "default", ts,
		`{"localWorkloadPeeringIPV4":"169.254.0.179","localWorkloadPeeringIPV6":"fe80::179"}`)
	putRaw(t, cli, "bgppeers", "BGPPeer", "routers", ts, `{"localWorkloadSelector":"role == 'router'","asNumber":65010}`)
	wep := `{"kind":"WorkloadEndpoint","apiVersion":"projectcalico.org/v3","metadata":{"name":"host--a-cni-wl1-eth0","namespace":"default",` +
		ts + `,"labels":{"role":"router","projectcalico.org/namespace":"default","projectcalico.org/orchestrator":"cni"}},` +
		`"spec":{"orchestrator":"cni","workload":"wl1","node":"host-a","containerID":"wl1","endpoint":"eth0","interfaceName":"cali1wl","ipNetworks":["10.65.1.2/32"]}}`
	if _, err := cli.Put(context.Background(), datastore.ResourcePrefix+"workloadendpoints/default/host--a-cni-wl1-eth0", wep); err != nil {
		t.Fatal(err)
	}

	log := logtest.Logger(t)
	s := syncer.New(datastore.NewFromEtcd(cli), syncer.Config{Prefixes: []string{datastore.ResourcePrefix, datastore.BlockPrefix}}, log)
	h := &harness{t: t, etcd: srv}
	h.run(s, []string{"FELIX_FELIXHOSTNAME=host-a"})
	dp := h.dataplane()
	close(dp.release)
	want := []netip.Addr{netip.MustParseAddr("169.254.0.179"), netip.MustParseAddr("fe80::179")}
	waitUpdate(t, dp, "the peering addresses", func(w calc.WorkloadEndpointUpdate) bool {
		return w.Endpoint.LocalBGPPeer == "routers" && slices.Equal(w.Endpoint.LocalBGPPeerAddrs, want)
	})
	if _, err := cli.Delete(context.Background(), datastore.ResourcePrefix+"bgppeers/routers"); err != nil {
		t.Fatal(err)
	}
	waitUpdate(t, dp, "the endpoint without peering addresses", func(w calc.WorkloadEndpointUpdate) bool {
		return w.Endpoint.LocalBGPPeer == "" && len(w.Endpoint.LocalBGPPeerAddrs) == 0
	})
}

func waitUpdate(t *testing.T, dp *fakeDataplane, what string, ok func(calc.WorkloadEndpointUpdate) bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !dp.has(func(u calc.Update) bool {
		w, is := u.(calc.WorkloadEndpointUpdate)
		return is && ok(w)
	}); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the dataplane never got %s: %v", what, dp.received())
		}
	}
}
