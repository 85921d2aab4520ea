package startup

import (
	"net/netip"
	"testing"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/syncer"
)

func pool(name, cidr, vxlan string, mut ...func(*api.IPPool)) *api.IPPool {
	p := &api.IPPool{ObjectMeta: api.ObjectMeta{Name: name}, Spec: api.IPPoolSpec{CIDR: cidr, VXLANMode: vxlan}}
	api.SetDefaults(p)
	for _, m := range mut {
		m(p)
	}
	return p
}

func TestVXLANPoolCIDRs(t *testing.T) {
	node := &api.Node{ObjectMeta: api.ObjectMeta{Name: "host-z", Labels: map[string]string{"zone": "a"}}}
	pools := []*api.IPPool{
		pool("always", "10.65.0.0/20", api.EncapAlways),
		pool("cross", "10.65.16.0/20", api.EncapCrossSubnet),
		pool("never", "10.65.32.0/20", api.EncapNever),
		pool("disabled", "10.65.48.0/20", api.EncapAlways, func(p *api.IPPool) { p.Spec.Disabled = true }),
		// Being deleted counts as disabled, as Project Calico's allocateip does.
		pool("deleting", "10.65.112.0/20", api.EncapAlways, func(p *api.IPPool) { p.DeletionTimestamp = "2026-12-01T00:00:00Z" }),
		pool("workload-only", "10.65.64.0/20", api.EncapAlways, func(p *api.IPPool) { p.Spec.AllowedUses = []string{api.UseWorkload} }),
		pool("other-zone", "10.65.80.0/20", api.EncapAlways, func(p *api.IPPool) { p.Spec.NodeSelector = "zone == 'b'" }),
		pool("this-zone", "10.65.96.0/20", api.EncapAlways, func(p *api.IPPool) { p.Spec.NodeSelector = "zone == 'a'" }),
		pool("v6", "fd5c:1::/48", api.EncapAlways),
	}
	got4 := tunnelPoolCIDRs(node, pools, tunnelKinds[1])
	want4 := []netip.Prefix{pfx("10.65.0.0/20"), pfx("10.65.16.0/20"), pfx("10.65.96.0/20")}
	if len(got4) != len(want4) {
		t.Fatalf("IPv4: got %v, want %v", got4, want4)
	}
	for i := range want4 {
		if got4[i] != want4[i] {
			t.Fatalf("IPv4: got %v, want %v", got4, want4)
		}
	}
	if got6 := tunnelPoolCIDRs(node, pools, tunnelKinds[2]); len(got6) != 1 || got6[0] != pfx("fd5c:1::/48") {
		t.Errorf("IPv6: got %v", got6)
	}
}

func TestTunnelTrigger(t *testing.T) {
	nodeKey := datastore.ResourcePrefix + "nodes/host-z"
	poolKey := datastore.ResourcePrefix + "ippools/p1"
	node := func(labels map[string]string, addr string, interfaces ...string) *api.Node {
		n := &api.Node{ObjectMeta: api.ObjectMeta{Name: "host-z", Labels: labels}}
		n.Spec.IPv4VXLANTunnelAddr = addr
		for _, i := range interfaces {
			n.Spec.Interfaces = append(n.Spec.Interfaces, api.NodeInterface{Name: i})
		}
		return n
	}
	up := func(key string, v any) syncer.Update { return syncer.Update{ID: datastore.IDOf(key), Value: v} }
	steps := []struct {
		name string
		msg  syncer.Message
		want bool
	}{
		{"updates before any snapshot", syncer.Message{Updates: []syncer.Update{up(poolKey, pool("p1", "10.65.0.0/16", "Always"))}}, false},
		{"first snapshot", syncer.Message{Snapshot: true, Updates: []syncer.Update{up(nodeKey, node(nil, ""))}}, true},
		{"pool added", syncer.Message{Updates: []syncer.Update{up(poolKey, pool("p1", "10.65.0.0/16", "Always"))}}, true},
		{"pool unchanged", syncer.Message{Updates: []syncer.Update{up(poolKey, pool("p1", "10.65.0.0/16", "Always"))}}, false},
		{"node interfaces changed only", syncer.Message{Updates: []syncer.Update{up(nodeKey, node(nil, "", "eth0"))}}, false},
		{"node labels changed", syncer.Message{Updates: []syncer.Update{up(nodeKey, node(map[string]string{"a": "b"}, ""))}}, true},
		{"tunnel address changed", syncer.Message{Updates: []syncer.Update{up(nodeKey, node(map[string]string{"a": "b"}, "10.65.0.1"))}}, true},
		{"another node with a longer name", syncer.Message{Updates: []syncer.Update{up(nodeKey+"x", node(nil, "10.65.0.9"))}}, false},
		{"status only", syncer.Message{Status: syncer.InSync}, false},
		{"pool deleted", syncer.Message{Updates: []syncer.Update{up(poolKey, nil)}}, true},
		{"same snapshot again", syncer.Message{Snapshot: true, Updates: []syncer.Update{up(nodeKey, node(map[string]string{"a": "b"}, "10.65.0.1"))}}, false},
		{"snapshot without the node", syncer.Message{Snapshot: true}, true},
	}
	tr := newTunnelTrigger("host-z")
	for _, st := range steps {
		if got := tr.apply(st.msg); got != st.want {
			t.Errorf("%s: trigger %v, want %v", st.name, got, st.want)
		}
	}
}
