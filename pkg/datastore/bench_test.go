package datastore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/datastore/etcdtest"
)

// BenchmarkList10kWorkloadEndpoints lists and decodes 10,000 WorkloadEndpoints (paginated, pinned
// to one revision) from an embedded etcd.
func BenchmarkList10kWorkloadEndpoints(b *testing.B) {
	s := etcdtest.Start(b)
	cli := s.Client()
	ctx := context.Background()
	for i := range 10000 {
		w := api.WorkloadEndpoint{ObjectMeta: api.ObjectMeta{
			Name:      api.WorkloadEndpointName(fmt.Sprintf("host-%d", i%100), "cni", fmt.Sprintf("%012x", i), "eth0"),
			Namespace: "default", UID: "5d103538-0307-479d-99d0-892ad29e11df", CreationTimestamp: "2026-11-29T13:16:37Z",
			Labels: map[string]string{"app": fmt.Sprintf("app-%d", i%50), "role": "web", api.LabelNamespace: "default", api.LabelOrchestrator: "cni"},
		}, Spec: api.WorkloadEndpointSpec{
			Orchestrator: "cni", Node: fmt.Sprintf("host-%d", i%100), Endpoint: "eth0", ContainerID: fmt.Sprintf("%012x", i),
			InterfaceName: fmt.Sprintf("cali%011x", i), MAC: "26:7c:ba:39:2b:6e", Profiles: []string{"calico-net"},
			IPNetworks: []string{fmt.Sprintf("10.65.%d.%d/32", i/256, i%256)},
		}}
		v, _ := json.Marshal(&w)
		if _, err := cli.Put(ctx, datastore.ResourcePrefix+"workloadendpoints/default/"+w.Name, string(v)); err != nil {
			b.Fatal(err)
		}
	}
	c, err := datastore.New(s.Datastore())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	k, _ := api.LookupKind("WorkloadEndpoint")
	b.ReportAllocs()
	for b.Loop() {
		res, err := c.List(ctx, k, "")
		if err != nil || len(res.Items) != 10000 {
			b.Fatalf("listed %d: %v", len(res.Items), err)
		}
	}
}
