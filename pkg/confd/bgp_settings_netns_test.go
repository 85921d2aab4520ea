package confd

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/netnstest"
)

// TestRealBGPCalicoSettings runs four hosts (calico-confd and BIRD each in their own network
// namespace; mesh off; host-3 in AS 65003, the others in 64512) through Project Calico's BGPPeer
// and BGPConfiguration settings, observed on real sessions, routes and kernel tables:
//
//  1. localASNumber: host-1 peers with host-3 as AS 65100 (host-3 only accepts 65100), with
//     keepaliveTime 2s (the other sessions keep the template's 1s).
//  2. reversePeering Manual: host-2 has no session back to host-1; Auto: it has.
//  3. reachableBy: host-4's BGP address is on its loopback, reachable from host-1 only through
//     the static route to host-4's fabric address that reachableBy makes.
//  4. serviceLoadBalancerAggregation: a load balancer range is advertised while Enabled, not
//     when Disabled; a single load balancer address never.
//  5. programClusterRoutes Disabled: host-1's kernel loses the route to host-2's block (left to
//     felix); EnabledNoEncapOnly brings it back.
func TestRealBGPCalicoSettings(t *testing.T) {
	rig := newBGPRig(t, 4)
	st := rig.st
	h1, h2, h3, h4 := rig.hosts[0], rig.hosts[1], rig.hosts[2], rig.hosts[3]
	const h4Loopback = "198.18.20.4"
	netnstest.Run(t, "ip", "-n", h4.ns, "addr", "add", h4Loopback+"/32", "dev", "lo")
	rig.nodes()
	n3, n4 := hostNode(h3, nil, ""), hostNode(h4, nil, "")
	n3.Spec.BGP.ASNumber = asn(65003)
	n4.Spec.BGP = &api.NodeBGPSpec{IPv4Address: h4Loopback + "/32"}
	st.put(defaultBGP(false, 0, false), n3, n4, pool4(),
		peer("h1-to-h3", api.BGPPeerSpec{Node: h1.name, PeerIP: h3.v4, ASNumber: asn(65003), LocalASNumber: asn(65100),
			KeepaliveTime: api.Dur(2 * time.Second), ReversePeering: "Manual"}),
		peer("h3-to-h1", api.BGPPeerSpec{Node: h3.name, PeerIP: h1.v4, ASNumber: asn(65100)}),
		peer("h1-to-h2", api.BGPPeerSpec{Node: h1.name, PeerIP: h2.v4, ASNumber: asn(64512), ReversePeering: "Manual"}),
		peer("h1-to-h4", api.BGPPeerSpec{Node: h1.name, PeerIP: h4Loopback, ASNumber: asn(64512), ReachableBy: h4.v4, ReversePeering: "Manual"}),
		peer("h4-to-h1", api.BGPPeerSpec{Node: h4.name, PeerIP: h1.v4, ASNumber: asn(64512), ReversePeering: "Manual"}),
		peer("h2-marker", api.BGPPeerSpec{Node: h2.name, PeerIP: "198.18.10.99", ASNumber: asn(65099)}))
	rig.ownBlocks(block4)
	rig.start()

	// 1. localASNumber and keepaliveTime.
	waitUntil(t, 30*time.Second, "host-1 and host-3 peer through local AS 65100", func() error {
		if err := wantEstablished(h1, pname(PeerNode, h3.v4, 0)); err != nil {
			return err
		}
		return wantEstablished(h3, pname(PeerNode, h1.v4, 0))
	})
	if got := keepalive(t, h1, pname(PeerNode, h3.v4, 0)); got != "2" {
		t.Errorf("keepaliveTime 2s: BIRD's keepalive time is %q", got)
	}
	if r := h3.birdCommand(t, "show protocols all "+pname(PeerNode, h1.v4, 0)); !strings.Contains(r, "65100") {
		t.Errorf("host-3 does not see AS 65100:\n%s", r)
	}

	// 2. reversePeering: host-2 rendered its marker peer (written after h1-to-h2), so it has seen
	// h1-to-h2, and has no session back while it is Manual.
	waitUntil(t, 30*time.Second, "host-2 renders its marker peer", renders(h2, pname(PeerNode, "198.18.10.99", 0)))
	if sessions, _ := h2.sessions(); sessions[pname(PeerNode, h1.v4, 0)] != "" {
		t.Errorf("reversePeering Manual: host-2 has a session back to host-1 (%v)", sessions)
	}
	st.put(peer("h1-to-h2", api.BGPPeerSpec{Node: h1.name, PeerIP: h2.v4, ASNumber: asn(64512), ReversePeering: "Auto"}))
	waitUntil(t, 30*time.Second, "reversePeering Auto: host-1 and host-2 peer", func() error {
		if err := wantEstablished(h1, pname(PeerNode, h2.v4, 0)); err != nil {
			return err
		}
		return wantEstablished(h2, pname(PeerNode, h1.v4, 0))
	})

	// 3. reachableBy.
	waitUntil(t, 30*time.Second, "host-1 reaches host-4's loopback through reachableBy", func() error {
		if err := wantRoutes(t, h1, "-4", map[string]string{h4Loopback: "via " + h4.v4})(); err != nil {
			return err
		}
		if err := wantEstablished(h1, pname(PeerNode, h4Loopback, 0)); err != nil {
			return err
		}
		return wantRoutes(t, h1, "-4", map[string]string{block4(4): "via " + h4.v4})()
	})

	// 4. serviceLoadBalancerAggregation.
	const lbRange, lbSingle = "198.18.30.0/24", "198.18.31.5/32"
	bgp := defaultBGP(false, 0, false)
	bgp.Spec.ServiceLoadBalancerIPs = []api.ServiceIPBlock{{CIDR: lbRange}, {CIDR: lbSingle}}
	st.put(bgp)
	waitUntil(t, 30*time.Second, "Enabled: host-2 learns the load balancer range from host-1", learnt(h2, lbRange, pname(PeerNode, h1.v4, 0)))
	if _, err := h2.tryBirdCommand("show route " + lbSingle); err == nil {
		t.Errorf("the single load balancer address %s is advertised", lbSingle)
	}
	bgp.Spec.ServiceLoadBalancerAggregation = api.Str("Disabled")
	st.put(bgp)
	waitUntil(t, 30*time.Second, "Disabled: nobody advertises the range", func() error {
		for _, h := range []*testHost{h1, h2} {
			if r, err := h.tryBirdCommand("show route " + lbRange); err == nil && strings.Contains(r, lbRange) {
				return fmt.Errorf("%s still has %s:\n%s", h.name, lbRange, r)
			}
		}
		return nil
	})

	// 5. programClusterRoutes.
	waitUntil(t, 30*time.Second, "host-1's kernel routes host-2's block",
		wantRoutes(t, h1, "-4", map[string]string{block4(2): "via " + h2.v4}))
	bgp.Spec.ProgramClusterRoutes = api.Str("Disabled")
	st.put(bgp)
	waitUntil(t, 30*time.Second, "Disabled: BIRD leaves host-2's block to felix", wantRoutes(t, h1, "-4", nil, block4(2)))
	if err := learnt(h1, block4(2), pname(PeerNode, h2.v4, 0))(); err != nil {
		t.Errorf("Disabled must not stop BGP: %v", err)
	}
	bgp.Spec.ProgramClusterRoutes = api.Str("EnabledNoEncapOnly")
	st.put(bgp)
	waitUntil(t, 30*time.Second, "EnabledNoEncapOnly: the route is back",
		wantRoutes(t, h1, "-4", map[string]string{block4(2): "via " + h2.v4}))
}

func peer(name string, spec api.BGPPeerSpec) *api.BGPPeer {
	return &api.BGPPeer{ObjectMeta: api.ObjectMeta{Name: name}, Spec: spec}
}

// wantEstablished checks that one of h's BGP sessions is Established.
func wantEstablished(h *testHost, name string) error {
	s, err := h.sessions()
	if err != nil {
		return err
	}
	if s[name] != "Established" {
		return fmt.Errorf("%s: session %s is %q (all: %v)", h.name, name, s[name], s)
	}
	return nil
}

// renders checks that h's rendered sessions include a protocol.
func renders(h *testHost, name string) func() error {
	return func() error {
		s, err := h.sessions()
		if err != nil {
			return err
		}
		if _, ok := s[name]; !ok {
			return fmt.Errorf("%s has no protocol %s yet", h.name, name)
		}
		return nil
	}
}

var keepaliveTimer = regexp.MustCompile(`Keepalive timer:\s+\S+/(\d+)`)

// keepalive is BIRD's keepalive time of an established session.
func keepalive(t *testing.T, h *testHost, name string) string {
	t.Helper()
	out := h.birdCommand(t, "show protocols all "+name)
	m := keepaliveTimer.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no keepalive timer in:\n%s", out)
	}
	return m[1]
}

// learnt checks that h has a route for prefix learnt from the session proto.
func learnt(h *testHost, prefix, proto string) func() error {
	return func() error {
		out, err := h.tryBirdCommand("show route " + prefix + " all")
		if err != nil {
			return err
		}
		if !strings.Contains(out, proto) {
			return fmt.Errorf("%s: %s not learnt from %s:\n%s", h.name, prefix, proto, out)
		}
		return nil
	}
}
