package felix

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/calico-host/calico-host/internal/logtest"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/datastore/etcdtest"
	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/rules"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// putRaw writes a v3 resource with the given metadata (JSON object body) and spec.
func putRaw(t *testing.T, cli *clientv3.Client, plural, kind, name, meta, spec string) {
	t.Helper()
	val := `{"kind":"` + kind + `","apiVersion":"projectcalico.org/v3","metadata":{"name":"` + name + `",` + meta + `},"spec":` + spec + `}`
	if _, err := cli.Put(context.Background(), datastore.ResourcePrefix+plural+"/"+name, val); err != nil {
		t.Fatal(err)
	}
}

func createdAt(ts string) string {
	return `"uid":"00000000-0000-4000-8000-0000000000aa","creationTimestamp":"` + ts + `"`
}

// TestSelectorScopedConfigWithRealEtcd: felix on the real syncer and calculation graph against
// etcd applies the selector-scoped FelixConfiguration whose nodeSelector matches its Node's
// labels (over default, under node.<host>), ignores an older one whose selector does not parse
// and one that matches nothing, passes BGPConfiguration default's service CIDRs to the
// dataplane, and restarts when a label change makes the scoped configuration stop applying.
func TestSelectorScopedConfigWithRealEtcd(t *testing.T) {
	srv := etcdtest.Start(t)
	cli := srv.Client()
	putRaw(t, cli, "clusterinformations", "ClusterInformation", "default", createdAt("2026-01-01T00:00:00Z"), `{"datastoreReady":true}`)
	putRaw(t, cli, "felixconfigurations", "FelixConfiguration", "default", createdAt("2026-01-01T00:00:00Z"),
		`{"serviceLoopPrevention":"Drop","defaultEndpointToHostAction":"Return"}`)
	putRaw(t, cli, "felixconfigurations", "FelixConfiguration", "gpu", createdAt("2026-03-01T00:00:00Z"),
		`{"nodeSelector":"role == 'gpu'","serviceLoopPrevention":"Reject","natOutgoingExclusions":"IPPoolsAndHostIPs","defaultEndpointToHostAction":"Accept"}`)
	putRaw(t, cli, "felixconfigurations", "FelixConfiguration", "broken", createdAt("2025-01-01T00:00:00Z"),
		`{"nodeSelector":"role ==","serviceLoopPrevention":"Disabled"}`)
	putRaw(t, cli, "felixconfigurations", "FelixConfiguration", "storage", createdAt("2025-01-01T00:00:00Z"),
		`{"nodeSelector":"role == 'storage'","serviceLoopPrevention":"Disabled"}`)
	putRaw(t, cli, "felixconfigurations", "FelixConfiguration", "node.host-a", createdAt("2026-01-01T00:00:00Z"),
		`{"defaultEndpointToHostAction":"Drop"}`)
	putRaw(t, cli, "bgpconfigurations", "BGPConfiguration", "default", createdAt("2026-01-01T00:00:00Z"),
		`{"serviceClusterIPs":[{"cidr":"198.19.96.0/24"}],"serviceExternalIPs":[{"cidr":"198.19.97.0/24"}]}`)
	node := func(labels string) {
		putRaw(t, cli, "nodes", "Node", "host-a", createdAt("2026-01-01T00:00:00Z")+`,"labels":`+labels, `{"bgp":{"ipv4Address":"198.18.0.1/24"}}`)
	}
	node(`{"role":"gpu"}`)

	log := logtest.Logger(t)
	s := syncer.New(datastore.NewFromEtcd(cli), syncer.Config{Prefixes: []string{datastore.ResourcePrefix, datastore.BlockPrefix}}, log)
	h := &harness{t: t, etcd: srv}
	h.run(s, []string{"FELIX_FELIXHOSTNAME=host-a"})
	dp := h.dataplane()
	if c := dp.cfg; c.ServiceLoopPrevention != rules.LoopReject || !c.NATOutgoingExcludeHosts || c.DefaultEndpointToHostAction != rules.ActionDrop {
		t.Errorf("dataplane config: service loop %v, exclude hosts %v, endpoint to host %v; want Reject, true, Drop (node.host-a over gpu over default)",
			c.ServiceLoopPrevention, c.NATOutgoingExcludeHosts, c.DefaultEndpointToHostAction)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !dp.has(func(u calc.Update) bool {
		s, ok := u.(calc.ServiceCIDRsUpdate)
		return ok && len(s.CIDRs) == 2 && s.CIDRs[0] == "198.19.96.0/24" && s.CIDRs[1] == "198.19.97.0/24"
	}) {
		if time.Now().After(deadline) {
			t.Fatalf("the dataplane never got the service CIDRs: %v", dp.received())
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(dp.release)
	node(`{"role":"none"}`)
	if err := h.exit(); !errors.Is(err, ErrRestart) {
		t.Fatalf("Run returned %v after the node's labels stopped matching, want ErrRestart", err)
	}
}
