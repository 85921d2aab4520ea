package policydiff

import (
	"testing"

	"github.com/calico-host/calico-host/pkg/api"
)

// Traffic forwarded through a host endpoint and passed out of the last tier of its
// applyOnForward policy, by a Pass rule or by a tier whose default action is Pass, is
// delivered: Project Calico's forward chains have no profiles and no drop after the tiers
// (felix/rules/endpoints.go, chainTypeForward). Our felix ended them with the "no profile
// matched" drop of normal chains (48 of 3,306 probes of a random run, both families), until
// this case was added. A Deny rule and the end of a tier whose default action is Deny still
// drop. Both kinds of endpoint: the uplink's own (traffic to and from the outside) and "*"
// (traffic between local workloads).
func (c *caseRunner) forwardPassOut(t *testing.T) {
	u := hostUniverse()
	u.HEPs = append(u.HEPs, hepObj(localNode+"-all", localNode, "*", map[string]string{"hep": "all"}))
	u.Tiers = append(u.Tiers, tier("t1", floatp(10), api.ActionDeny), tier("t2", floatp(20), api.ActionPass))
	udpRule := func(action string, port uint16) api.Rule {
		return api.Rule{Action: action, Protocol: protocolp("UDP"), Destination: api.EntityRule{Ports: []api.Port{api.SinglePort(port)}}}
	}
	uplinkRules := []api.Rule{udpRule(api.ActionPass, 80), udpRule(api.ActionDeny, 443)} // 8080: end of tier drop
	allRules := []api.Rule{udpRule(api.ActionDeny, 443)}                                 // 80: t2's default action Pass
	both := []string{api.PolicyTypeIngress, api.PolicyTypeEgress}
	u.GNPs = append(u.GNPs,
		forwardGNP("uplink", "t1", "hep == 'ext0'", both, uplinkRules, uplinkRules),
		forwardGNP("all", "t2", "hep == 'all'", both, allRules, allRules))
	var probes []Probe
	var want []bool
	for _, fam := range []int{4, 6} {
		o := outsideAddrs[fam][4]
		w0, w1 := wl(0).addr(fam), wl(1).addr(fam)
		probes = append(probes,
			udp(outside, "wl0", o, w0, 80),   // t1 Pass rule, last tier of the uplink: delivered
			udp("wl0", outside, w0, o, 80),   // the same, egress through the uplink
			udp(outside, "wl0", o, w0, 443),  // t1 Deny
			udp(outside, "wl0", o, w0, 8080), // end of t1 (Deny)
			udp("wl1", "wl0", w1, w0, 80),    // "*": t2 matches nothing, default action Pass: delivered
			udp("wl1", "wl0", w1, w0, 443))   // "*": t2 Deny
		want = append(want, true, true, false, false, true, false)
	}
	c.check(t, u, probes, want)
}
