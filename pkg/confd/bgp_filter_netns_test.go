package confd

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/api"
)

// TestRealBGPFilterMatches runs three hosts (calico-confd and BIRD each, in their own network
// namespaces): host-1 and host-2 in AS 64512, host-3 in AS 65003. host-1 peers with both, and its
// BGPPeers name one BGPFilter, changed through phases that use the matches BIRD used to be
// given without (so they applied to every route):
//
//  1. peerType eBGP + asPathPrefix [65003], Reject: host-3's block is refused, host-2's kept.
//  2. peerType iBGP, Reject: host-2's block is refused, host-3's learnt.
//  3. a community match, Reject: host-3 advertises its block with 65003:100 and it is refused;
//     an export rule with peerType iBGP adds community 64512:7, which host-2 receives.
func TestRealBGPFilterMatches(t *testing.T) {
	rig := newBGPRig(t, 3)
	st := rig.st
	h1, h2, h3 := rig.hosts[0], rig.hosts[1], rig.hosts[2]
	rig.nodes()
	n3 := hostNode(h3, nil, "")
	n3.Spec.BGP.ASNumber = asn(65003)
	st.put(defaultBGP(false, 0, false), n3, pool4(),
		filterObj(api.BGPFilterSpec{ImportV4: []api.BGPFilterRule{{Action: "Reject", PeerType: "eBGP", ASPathPrefix: []api.ASNumber{65003}}}}),
		peer("h1-to-h2", api.BGPPeerSpec{Node: h1.name, PeerIP: h2.v4, ASNumber: asn(64512), Filters: []string{"f"}}),
		peer("h1-to-h3", api.BGPPeerSpec{Node: h1.name, PeerIP: h3.v4, ASNumber: asn(65003), Filters: []string{"f"}}))
	rig.ownBlocks(block4)
	rig.start()
	waitUntil(t, 30*time.Second, "host-1 sessions", wantSessions(h1, pname(PeerNode, h2.v4, 0), pname(PeerNode, h3.v4, 0)))

	// 1. eBGP routes whose AS path starts with 65003 are refused; iBGP ones pass.
	waitUntil(t, 30*time.Second, "phase 1: host-1 learns host-2's block only",
		wantRoutes(t, h1, "-4", map[string]string{block4(2): "via " + h2.v4}, block4(3)))

	// 2. iBGP routes are refused; host-3's are learnt.
	st.put(filterObj(api.BGPFilterSpec{ImportV4: []api.BGPFilterRule{{Action: "Reject", PeerType: "iBGP"}}}))
	waitUntil(t, 30*time.Second, "phase 2: host-1 learns host-3's block only",
		wantRoutes(t, h1, "-4", map[string]string{block4(3): "via " + h3.v4}, block4(2)))

	// 3. Routes carrying community 65003:100 are refused; exports to iBGP peers get 64512:7.
	st.put(bgpConfig("node."+h3.name, api.BGPConfigurationSpec{PrefixAdvertisements: []api.PrefixAdvertisement{
		{CIDR: block4(3), Communities: []string{"65003:100"}}}}),
		filterObj(api.BGPFilterSpec{
			ImportV4: []api.BGPFilterRule{{Action: "Reject", Communities: &api.BGPFilterCommunityMatch{Values: []string{"65003:100"}}}},
			ExportV4: []api.BGPFilterRule{{Action: "Accept", PeerType: "iBGP", MatchOperator: "In", CIDR: "10.65.0.0/16",
				Operations: []api.BGPFilterOperation{{AddCommunity: &api.BGPFilterAddCommunity{Value: "64512:7"}}}}}}))
	waitUntil(t, 30*time.Second, "phase 3: host-1 refuses host-3's block (community) and learns host-2's",
		wantRoutes(t, h1, "-4", map[string]string{block4(2): "via " + h2.v4}, block4(3)))
	waitUntil(t, 30*time.Second, "phase 3: host-2 receives host-1's block with community 64512:7", func() error {
		r, err := h2.tryBirdCommand("show route for " + block4(1) + " all")
		if err != nil {
			return err
		}
		if !strings.Contains(r, "(64512,7)") {
			return fmt.Errorf("no community (64512,7):\n%s", r)
		}
		return nil
	})
	if r := h3.birdCommand(t, "show route for "+block4(1)+" all"); strings.Contains(r, "(64512,7)") {
		t.Errorf("phase 3: the iBGP-only operation reached the eBGP peer host-3:\n%s", r)
	}
}

func filterObj(spec api.BGPFilterSpec) *api.BGPFilter {
	return &api.BGPFilter{ObjectMeta: api.ObjectMeta{Name: "f"}, Spec: spec}
}
