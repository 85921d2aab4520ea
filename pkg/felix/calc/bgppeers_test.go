package calc

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/syncer"
)

func bgpPeer(name string, spec api.BGPPeerSpec) syncer.Update {
	return up(resKey("bgppeers", "", name), &api.BGPPeer{ObjectMeta: api.ObjectMeta{Name: name}, Spec: spec})
}

func bgpConfig(name, v4, v6 string) syncer.Update {
	return up(resKey("bgpconfigurations", "", name), &api.BGPConfiguration{ObjectMeta: api.ObjectMeta{Name: name},
		Spec: api.BGPConfigurationSpec{LocalWorkloadPeeringIPV4: v4, LocalWorkloadPeeringIPV6: v6}})
}

// peerState renders each local workload's peer and addresses, "-" for none.
func peerState(m *dpModel, ctrs ...string) string {
	out := ""
	for _, c := range ctrs {
		w := m.WEPs[wepID("ns1", c)]
		switch {
		case w == nil:
			out += c + ":gone "
		case w.LocalBGPPeer == "" && len(w.LocalBGPPeerAddrs) == 0:
			out += c + ":- "
		default:
			out += fmt.Sprintf("%s:%s%v ", c, w.LocalBGPPeer, w.LocalBGPPeerAddrs)
		}
	}
	return out
}

// TestLocalBGPPeerEndpoints: a local workload endpoint that an applying BGPPeer's
// localWorkloadSelector selects (its own labels or its profiles' labelsToApply) carries the
// BGPPeer's name (the first by name) and the peering addresses of BGPConfiguration default;
// BGPPeers for another node, or whose nodeSelector does not match this node, select nothing.
func TestLocalBGPPeerEndpoints(t *testing.T) {
	g, m := newTestGraph("h1"), newModel()
	snapshot(g,
		labelledNode("h1", map[string]string{"rack": "a"}),
		bgpConfig("default", "169.254.0.179", "fd5c::179"),
		profile("bgp", map[string]string{"role": "router"}, nil, nil),
		wep("ns1", "h1", "a", map[string]string{"role": "router"}, []string{"10.65.0.1/32"}),
		wep("ns1", "h1", "b", nil, []string{"10.65.0.2/32"}, withProfiles("bgp")),
		wep("ns1", "h1", "c", map[string]string{"role": "web"}, []string{"10.65.0.3/32"}, withProfiles("bgp")),
		bgpPeer("z-all", api.BGPPeerSpec{LocalWorkloadSelector: "role == 'router'"}),
		bgpPeer("other-node", api.BGPPeerSpec{Node: "h2", LocalWorkloadSelector: "all()"}),
		bgpPeer("other-rack", api.BGPPeerSpec{NodeSelector: "rack == 'b'", LocalWorkloadSelector: "all()"}),
	)
	const v4v6 = "[169.254.0.179 fd5c::179]"
	steps := []struct {
		name string
		ups  []syncer.Update
		want string
	}{
		{"own labels and profile labels; own wins", nil, "a:z-all" + v4v6 + " b:z-all" + v4v6 + " c:- "},
		{"first BGPPeer by name", []syncer.Update{bgpPeer("a-node", api.BGPPeerSpec{Node: "h1", LocalWorkloadSelector: "role == 'router'"})},
			"a:a-node" + v4v6 + " b:a-node" + v4v6 + " c:- "},
		{"label change", []syncer.Update{wep("ns1", "h1", "a", map[string]string{"role": "web"}, []string{"10.65.0.1/32"})},
			"a:- b:a-node" + v4v6 + " c:- "},
		{"node labels now match other-rack", []syncer.Update{labelledNode("h1", map[string]string{"rack": "b"})},
			"a:other-rack" + v4v6 + " b:a-node" + v4v6 + " c:other-rack" + v4v6 + " "},
		{"node labels back", []syncer.Update{labelledNode("h1", map[string]string{"rack": "a"})},
			"a:- b:a-node" + v4v6 + " c:- "},
		{"profile labels change", []syncer.Update{profile("bgp", map[string]string{"role": "x"}, nil, nil)},
			"a:- b:- c:- "},
		{"profile labels back", []syncer.Update{profile("bgp", map[string]string{"role": "router"}, nil, nil)},
			"a:- b:a-node" + v4v6 + " c:- "},
		{"IPv6 field cleared", []syncer.Update{bgpConfig("default", "169.254.0.179", "")},
			"a:- b:a-node[169.254.0.179] c:- "},
		{"wrong family refused", []syncer.Update{bgpConfig("default", "fd5c::1", "169.254.0.1")},
			"a:- b:a-node[] c:- "},
		{"loopback and multicast refused", []syncer.Update{bgpConfig("default", "127.0.0.1", "ff02::1")},
			"a:- b:a-node[] c:- "},
		{"unspecified refused", []syncer.Update{bgpConfig("default", "0.0.0.0", "::")},
			"a:- b:a-node[] c:- "},
		{"another BGPConfiguration is ignored", []syncer.Update{bgpConfig("node.h1", "169.254.9.9", "")},
			"a:- b:a-node[] c:- "},
		{"fields set again", []syncer.Update{bgpConfig("default", "169.254.0.179", "fd5c::179")},
			"a:- b:a-node" + v4v6 + " c:- "},
		{"a-node deleted: z-all takes over", []syncer.Update{del(resKey("bgppeers", "", "a-node"))},
			"a:- b:z-all" + v4v6 + " c:- "},
		{"selector removed", []syncer.Update{bgpPeer("z-all", api.BGPPeerSpec{PeerIP: "198.18.0.9"})},
			"a:- b:- c:- "},
		{"BGPPeer for another node", []syncer.Update{bgpPeer("z-all", api.BGPPeerSpec{Node: "h2", LocalWorkloadSelector: "all()"})},
			"a:- b:- c:- "},
		{"back on this node, BGPConfiguration deleted", []syncer.Update{bgpPeer("z-all", api.BGPPeerSpec{Node: "h1", LocalWorkloadSelector: "all()"}),
			del(resKey("bgpconfigurations", "", "default"))}, "a:z-all[] b:z-all[] c:z-all[] "},
	}
	for _, st := range steps {
		feed(g, st.ups...)
		flushInto(t, g, m)
		if got := peerState(m, "a", "b", "c"); got != st.want {
			t.Errorf("%s: got %q, want %q", st.name, got, st.want)
		}
	}
}

// TestLocalBGPPeerIgnoresBadSelectors: a BGPPeer whose selectors do not parse selects nothing,
// and a remote workload is never a local peer.
func TestLocalBGPPeerIgnoresBadSelectors(t *testing.T) {
	g, m := newTestGraph("h1"), newModel()
	snapshot(g,
		bgpConfig("default", "169.254.0.179", ""),
		wep("ns1", "h1", "a", map[string]string{"role": "router"}, []string{"10.65.0.1/32"}),
		wep("ns1", "h2", "r", map[string]string{"role": "router"}, []string{"10.65.1.1/32"}),
		bgpPeer("bad-wl", api.BGPPeerSpec{LocalWorkloadSelector: "role =="}),
		bgpPeer("bad-node", api.BGPPeerSpec{NodeSelector: "rack ==", LocalWorkloadSelector: "all()"}),
	)
	flushInto(t, g, m)
	if got := peerState(m, "a"); got != "a:- " {
		t.Errorf("got %q", got)
	}
	feed(g, bgpPeer("good", api.BGPPeerSpec{LocalWorkloadSelector: "role == 'router'"}))
	flushInto(t, g, m)
	if got := peerState(m, "a", "r"); got != "a:good[169.254.0.179] r:gone " {
		t.Errorf("got %q", got)
	}
	if want := netip.MustParseAddr("169.254.0.179"); m.WEPs[wepID("ns1", "a")].LocalBGPPeerAddrs[0] != want {
		t.Errorf("address %v", m.WEPs[wepID("ns1", "a")].LocalBGPPeerAddrs)
	}
}
