package confd

import (
	"strings"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/netnstest"
)

// TestRealBGPBindModeNodeIP: with bindMode NodeIP and listen port 1179, host-1 peers with
// host-2 in both families through a BGPPeer whose sourceAddress is None (host-2 peers back).
// BIRD runs, the sessions come up, and both hosts listen on their node addresses only.
func TestRealBGPBindModeNodeIP(t *testing.T) {
	rig := newBGPRig(t, 2)
	hosts := rig.hosts
	h1, h2 := hosts[0], hosts[1]
	cfg := defaultBGP(false, 1179, false)
	cfg.Spec.BindMode = "NodeIP"
	rig.st.put(cfg)
	rig.nodes()
	for _, ip := range []string{h2.v4, h2.v6} {
		rig.st.put(peer("to-h2-"+strings.ReplaceAll(ip, ":", "-"),
			api.BGPPeerSpec{Node: h1.name, PeerIP: ip, ASNumber: asn(64512), SourceAddress: "None"}))
	}
	rig.start()
	waitUntil(t, 30*time.Second, "host-1's sessions", wantSessions(h1, pname(PeerNode, h2.v4, 1179), pname(PeerNode, h2.v6, 1179)))
	waitUntil(t, 30*time.Second, "host-2's sessions", wantSessions(h2, pname(PeerNode, h1.v4, 1179), pname(PeerNode, h1.v6, 1179)))
	for _, h := range hosts {
		listening := netnstest.Run(t, "ip", "netns", "exec", h.ns, "ss", "-Hltn", "sport", "= :1179")
		for _, want := range []string{h.v4 + ":1179", "[" + h.v6 + "]:1179"} {
			if !strings.Contains(listening, want) {
				t.Errorf("%s does not listen on %s:\n%s", h.name, want, listening)
			}
		}
		if n := strings.Count(strings.TrimSpace(listening), "\n") + 1; n != 2 {
			t.Errorf("%s has %d listening sockets on port 1179, want its two node addresses:\n%s", h.name, n, listening)
		}
	}
}
