package calcbench

import (
	"reflect"
	"testing"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/syncer"
)

func TestBenchData(t *testing.T) {
	s := Shape{Host: "h", Local: 130, Remote: 120, Policies: 20, NetSets: 4}
	ups := s.Updates()
	byKey := map[string]syncer.Update{}
	kinds := map[string]int{}
	for _, u := range ups {
		if _, dup := byKey[u.ID.Key()]; dup {
			t.Errorf("duplicate key %s", u.ID.Key())
		}
		byKey[u.ID.Key()] = u
		if r, ok := u.Value.(api.Resource); ok {
			kinds[r.GetTypeMeta().Kind]++
		} else {
			kinds["block"]++
		}
	}
	want := map[string]int{"WorkloadEndpoint": 250, "HostEndpoint": 4, "Node": 4, "GlobalNetworkSet": 2, "NetworkSet": 2,
		"NetworkPolicy": 14, "GlobalNetworkPolicy": 6, "block": 3 + 3}
	for k, n := range want {
		if kinds[k] != n {
			t.Errorf("%d %s, want %d", kinds[k], k, n)
		}
	}
	if got := BenchData("h", 130, 120, 20, 4); !reflect.DeepEqual(got, ups) {
		t.Error("BenchData differs from Shape.Updates (or is not deterministic)")
	}
	// The single-endpoint helpers rebuild endpoints of the data set with another role.
	for _, u := range []syncer.Update{s.LocalEndpoint(129, "api"), s.RemoteEndpoint(119, "api")} {
		orig, ok := byKey[u.ID.Key()]
		if !ok {
			t.Fatalf("%s is not in the data set", u.ID.Key())
		}
		o, n := *orig.Value.(*api.WorkloadEndpoint), *u.Value.(*api.WorkloadEndpoint)
		if n.Labels["role"] != "api" {
			t.Errorf("role = %q", n.Labels["role"])
		}
		delete(o.Labels, "role")
		delete(n.Labels, "role")
		o.Spec.Ports, n.Spec.Ports = nil, nil
		if !reflect.DeepEqual(o, n) {
			t.Errorf("%s differs:\n%+v\n%+v", u.ID.Key(), o, n)
		}
	}
}
