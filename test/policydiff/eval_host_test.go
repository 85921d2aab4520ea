package policydiff

import (
	"testing"

	"github.com/calico-host/calico-host/pkg/api"
)

func hepObj(name, node, iface string, labels map[string]string, profiles ...string) *api.HostEndpoint {
	return &api.HostEndpoint{TypeMeta: api.TypeMeta{Kind: "HostEndpoint", APIVersion: api.APIVersion},
		ObjectMeta: api.ObjectMeta{Name: name, Labels: labels},
		Spec:       api.HostEndpointSpec{Node: node, InterfaceName: iface, Profiles: profiles}}
}

// forwardGNP is an applyOnForward GlobalNetworkPolicy.
func forwardGNP(name, tierName, sel string, types []string, in, out []api.Rule) *api.GlobalNetworkPolicy {
	p := gnpObj(name, tierName, nil, sel, types, in, out)
	p.Spec.ApplyOnForward = true
	return p
}

// hostUniverse is a universe whose local workloads all accept everything (profile "open"), so
// that only host endpoints decide, with an endpoint on the uplink labelled hep=ext0.
func hostUniverse() *Universe {
	open := profileObj("open", nil, []api.Rule{allow()}, []api.Rule{allow()})
	profs := map[int][]string{}
	for i := range numLocal {
		profs[i] = []string{"open"}
	}
	return &Universe{Node: localNode, Tiers: []*api.Tier{tier("default", floatp(1e6), api.ActionDeny)},
		Profiles: []*api.Profile{open}, WEPs: localWEPs(nil, profs),
		HEPs: []*api.HostEndpoint{hepObj("uplink", localNode, uplink, map[string]string{"hep": "ext0"})}}
}

// TestEvaluatorHostEndpoints pins the evaluator's forward chains of host endpoints to Project
// Calico's semantics on hand-written cases (no dataplane needed).
func TestEvaluatorHostEndpoints(t *testing.T) {
	deny := func() api.Rule { return api.Rule{Action: api.ActionDeny} }
	pass := func() api.Rule { return api.Rule{Action: api.ActionPass} }
	tcpOnly := api.Rule{Action: api.ActionAllow, Protocol: protocolp("TCP")}
	in, eg := []string{api.PolicyTypeIngress}, []string{api.PolicyTypeEgress}
	o4, o6 := outsideAddrs[4][4], outsideAddrs[6][4]
	in0, in0v6 := udp(outside, "wl0", o4, wl(0).V4, 80), udp(outside, "wl0", o6, wl(0).V6, 80)
	out0 := udp("wl0", outside, wl(0).V4, o4, 80)
	w1to0 := udp("wl1", "wl0", wl(1).V4, wl(0).V4, 80)
	cases := []struct {
		name  string
		u     func(u *Universe)
		probe Probe
		want  bool
	}{
		{"no applyOnForward policy: forwarded traffic allowed (normal policy is for host traffic)", func(u *Universe) {
			u.GNPs = append(u.GNPs, gnpObj("host-deny", "default", nil, "hep == 'ext0'", nil, []api.Rule{deny()}, []api.Rule{deny()}))
		}, in0, true},
		{"applyOnForward Deny drops forwarded traffic in", func(u *Universe) {
			u.GNPs = append(u.GNPs, forwardGNP("fwd", "default", "hep == 'ext0'", in, []api.Rule{deny()}, nil))
		}, in0v6, false},
		{"Pass out of the last tier: no profiles in forward chains, delivered", func(u *Universe) {
			u.GNPs = append(u.GNPs, forwardGNP("fwd", "default", "hep == 'ext0'", in, []api.Rule{pass()}, nil))
		}, in0, true},
		{"Pass out of the last tier, IPv6", func(u *Universe) {
			u.GNPs = append(u.GNPs, forwardGNP("fwd", "default", "hep == 'ext0'", in, []api.Rule{pass()}, nil))
		}, in0v6, true},
		{"last tier's default action Pass: delivered", func(u *Universe) {
			u.Tiers = append(u.Tiers, tier("t1", floatp(10), api.ActionPass))
			u.GNPs = append(u.GNPs, forwardGNP("fwd", "t1", "hep == 'ext0'", in, []api.Rule{tcpOnly}, nil))
		}, in0, true},
		{"a forward tier still drops at its end", func(u *Universe) {
			u.GNPs = append(u.GNPs, forwardGNP("fwd", "default", "hep == 'ext0'", in, []api.Rule{tcpOnly}, nil))
		}, in0, false},
		{"egress forward policy of the uplink: traffic out", func(u *Universe) {
			u.GNPs = append(u.GNPs, forwardGNP("fwd", "default", "hep == 'ext0'", eg, nil, []api.Rule{deny()}))
		}, out0, false},
		{"egress forward policy of the uplink: traffic in passes out of its ingress chain", func(u *Universe) {
			u.GNPs = append(u.GNPs, forwardGNP("fwd", "default", "hep == 'ext0'", eg, nil, []api.Rule{deny()}))
		}, in0, true},
		{"forward Allow does not skip the workload's policy", func(u *Universe) {
			u.WEPs[0].Spec.Profiles = nil
			u.GNPs = append(u.GNPs, forwardGNP("fwd", "default", "hep == 'ext0'", in, []api.Rule{allow()}, nil))
		}, in0, false},
		{"the '*' endpoint meets traffic between workloads", func(u *Universe) {
			u.HEPs = append(u.HEPs, hepObj("all", localNode, "*", map[string]string{"hep": "all"}))
			u.GNPs = append(u.GNPs, forwardGNP("fwd", "default", "hep == 'all'", eg, nil, []api.Rule{deny()}))
		}, w1to0, false},
		{"the uplink's own endpoint, not '*', governs the uplink", func(u *Universe) {
			u.HEPs = append(u.HEPs, hepObj("all", localNode, "*", map[string]string{"hep": "all"}))
			u.GNPs = append(u.GNPs, forwardGNP("fwd", "default", "hep == 'all'", in, []api.Rule{deny()}, nil))
		}, in0, true},
		{"profile labelsToApply select a host endpoint", func(u *Universe) {
			u.Profiles = append(u.Profiles, profileObj("edge", map[string]string{"role": "edge"}, nil, nil))
			u.HEPs[0].Spec.Profiles = []string{"edge"}
			u.GNPs = append(u.GNPs, forwardGNP("fwd", "default", "role == 'edge'", in, []api.Rule{deny()}, nil))
		}, in0, false},
		{"another node's endpoint on the same interface name is no part of it", func(u *Universe) {
			u.HEPs[0].Spec.Node = remoteNode
			u.GNPs = append(u.GNPs, forwardGNP("fwd", "default", "hep == 'ext0'", in, []api.Rule{deny()}, nil))
		}, in0, true},
		{"expected IPs are members of the selector's IP set", func(u *Universe) {
			u.HEPs[0].Spec.ExpectedIPs = []string{o4.String()}
			u.WEPs[0].Spec.Profiles = nil
			u.GNPs = append(u.GNPs, gnpObj("from-hep", "default", nil, "", in,
				[]api.Rule{{Action: api.ActionAllow, Source: api.EntityRule{Selector: "hep == 'ext0'"}}}, nil))
		}, in0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u := hostUniverse()
			c.u(u)
			ev, err := NewEvaluator(u)
			if err != nil {
				t.Fatal(err)
			}
			if v := ev.Evaluate(c.probe.Packet); v.Delivered != c.want {
				t.Errorf("%s: delivered=%v, want %v\n%v", c.probe.Packet, v.Delivered, c.want, v.Trace)
			}
		})
	}
}
