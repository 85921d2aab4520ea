package policydiff

import (
	"net/netip"
	"testing"

	"github.com/calico-host/calico-host/pkg/api"
)

// TestEvaluator pins the reference evaluator to Project Calico's semantics on hand-written
// cases (no dataplane needed).
func TestEvaluator(t *testing.T) {
	deny := func() api.Rule { return api.Rule{Action: api.ActionDeny} }
	pass := func() api.Rule { return api.Rule{Action: api.ActionPass} }
	ingress := []string{api.PolicyTypeIngress}
	defTier := tier("default", floatp(1e6), api.ActionDeny)
	o4 := outsideAddrs[4][4] // 198.19.2.7
	in0 := udp(outside, "wl0", o4, wl(0).V4, 80)
	cases := []struct {
		name  string
		u     func(u *Universe)
		probe Probe
		want  bool
	}{
		{"no policy, no profile: drop", func(u *Universe) {}, in0, false},
		{"profile allows", func(u *Universe) {
			u.Profiles = []*api.Profile{profileObj("p", nil, []api.Rule{allow()}, nil)}
			u.WEPs[0].Spec.Profiles = []string{"p"}
		}, in0, true},
		{"profile Pass goes to the next profile", func(u *Universe) {
			u.Profiles = []*api.Profile{profileObj("p1", nil, []api.Rule{pass(), deny()}, nil), profileObj("p2", nil, []api.Rule{allow()}, nil)}
			u.WEPs[0].Spec.Profiles = []string{"p1", "p2"}
		}, in0, true},
		{"profile Deny stops", func(u *Universe) {
			u.Profiles = []*api.Profile{profileObj("p1", nil, []api.Rule{deny()}, nil), profileObj("p2", nil, []api.Rule{allow()}, nil)}
			u.WEPs[0].Spec.Profiles = []string{"p1", "p2"}
		}, in0, false},
		{"a policy applying ends the tier in a drop; profiles never run", func(u *Universe) {
			u.GNPs = []*api.GlobalNetworkPolicy{gnpObj("x", "default", nil, "", ingress, nil, nil)}
			u.Profiles = []*api.Profile{profileObj("p", nil, []api.Rule{allow()}, nil)}
			u.WEPs[0].Spec.Profiles = []string{"p"}
		}, in0, false},
		{"Pass skips the rest of the tier and reaches the profiles", func(u *Universe) {
			u.GNPs = []*api.GlobalNetworkPolicy{gnpObj("a", "default", floatp(1), "", ingress, []api.Rule{pass()}, nil),
				gnpObj("b", "default", floatp(2), "", ingress, []api.Rule{deny()}, nil)}
			u.Profiles = []*api.Profile{profileObj("p", nil, []api.Rule{allow()}, nil)}
			u.WEPs[0].Spec.Profiles = []string{"p"}
		}, in0, true},
		{"tiers run by order: Deny in order 10 beats Allow in default", func(u *Universe) {
			u.Tiers = append(u.Tiers, tier("t1", floatp(10), api.ActionDeny))
			u.GNPs = []*api.GlobalNetworkPolicy{gnpObj("a", "t1", nil, "", ingress, []api.Rule{deny()}, nil),
				gnpObj("b", "default", nil, "", ingress, []api.Rule{allow()}, nil)}
		}, in0, false},
		{"a tier without order runs last", func(u *Universe) {
			u.Tiers = append(u.Tiers, tier("t1", nil, api.ActionDeny))
			u.GNPs = []*api.GlobalNetworkPolicy{gnpObj("a", "t1", nil, "", ingress, []api.Rule{deny()}, nil),
				gnpObj("b", "default", nil, "", ingress, []api.Rule{allow()}, nil)}
		}, in0, true},
		{"end of a Pass tier goes on", func(u *Universe) {
			u.Tiers = append(u.Tiers, tier("t1", floatp(10), api.ActionPass))
			u.GNPs = []*api.GlobalNetworkPolicy{gnpObj("a", "t1", nil, "", ingress, nil, nil),
				gnpObj("b", "default", nil, "", ingress, []api.Rule{allow()}, nil)}
		}, in0, true},
		{"equal order: name/namespace/kind string decides ('p-a' before 'p')", func(u *Universe) {
			u.GNPs = []*api.GlobalNetworkPolicy{gnpObj("p", "default", floatp(5), "", ingress, []api.Rule{allow()}, nil),
				gnpObj("p-a", "default", floatp(5), "", ingress, []api.Rule{deny()}, nil)}
		}, in0, false},
		{"no order sorts after every order", func(u *Universe) {
			u.GNPs = []*api.GlobalNetworkPolicy{gnpObj("a", "default", nil, "", ingress, []api.Rule{deny()}, nil),
				gnpObj("b", "default", floatp(1000), "", ingress, []api.Rule{allow()}, nil)}
		}, in0, true},
		{"types omitted: the policy governs egress too", func(u *Universe) {
			u.GNPs = []*api.GlobalNetworkPolicy{gnpObj("a", "default", nil, "", nil, []api.Rule{allow()}, nil)}
			u.Profiles = []*api.Profile{profileObj("p", nil, nil, []api.Rule{allow()})}
			u.WEPs[0].Spec.Profiles = []string{"p"}
		}, udp("wl0", outside, wl(0).V4, o4, 80), false},
		{"UDP to 4789 from a workload is dropped before policy", func(u *Universe) {
			u.GNPs = []*api.GlobalNetworkPolicy{gnpObj("a", "default", nil, "", nil, []api.Rule{allow()}, []api.Rule{allow()})}
		}, udp("wl0", outside, wl(0).V4, o4, 4789), false},
		{"UDP to 4789 into a workload is policy's business", func(u *Universe) {
			u.GNPs = []*api.GlobalNetworkPolicy{gnpObj("a", "default", nil, "", nil, []api.Rule{allow()}, []api.Rule{allow()})}
		}, udp(outside, "wl0", o4, wl(0).V4, 4789), true},
		{"NetworkPolicy source selector stays in its namespace", func(u *Universe) {
			u.NPs = []*api.NetworkPolicy{npObj("ns1", "a", "default", nil, "", ingress,
				[]api.Rule{{Action: api.ActionAllow, Source: api.EntityRule{Selector: "all()"}}}, nil)}
			u.Profiles = []*api.Profile{profileObj("p", nil, nil, []api.Rule{allow()})}
			u.WEPs[1] = wl(1).wep("ns2", nil, []string{"p"}, nil)
		}, tcp("wl1", "wl0", wl(1).V4, wl(0).V4, 80), false},
		{"namespaceSelector all() reaches other namespaces", func(u *Universe) {
			u.NPs = []*api.NetworkPolicy{npObj("ns1", "a", "default", nil, "", ingress,
				[]api.Rule{{Action: api.ActionAllow, Source: api.EntityRule{NamespaceSelector: "all()"}}}, nil)}
			u.Profiles = []*api.Profile{profileObj("p", nil, nil, []api.Rule{allow()})}
			u.WEPs[1] = wl(1).wep("ns2", nil, []string{"p"}, nil)
		}, tcp("wl1", "wl0", wl(1).V4, wl(0).V4, 80), true},
		{"namespaceSelector global() picks global network sets", func(u *Universe) {
			u.GNSs = []*api.GlobalNetworkSet{gnsObj("out", nil, "198.19.0.0/16")}
			u.GNPs = []*api.GlobalNetworkPolicy{gnpObj("a", "default", nil, "", ingress,
				[]api.Rule{{Action: api.ActionAllow, Source: api.EntityRule{NamespaceSelector: "global()"}}}, nil)}
		}, in0, true},
		{"profile labelsToApply select the endpoint", func(u *Universe) {
			u.Profiles = []*api.Profile{profileObj("p", map[string]string{"role": "db"}, nil, nil)}
			u.WEPs[0].Spec.Profiles = []string{"p"}
			u.GNPs = []*api.GlobalNetworkPolicy{gnpObj("a", "default", nil, "role == 'db'", ingress, []api.Rule{allow()}, nil)}
		}, in0, true},
		{"named port of the destination endpoint", func(u *Universe) {
			u.WEPs[0].Spec.Ports = []api.WorkloadEndpointPort{{Name: "http", Protocol: api.ProtocolFromString("UDP"), Port: 80}}
			u.GNPs = []*api.GlobalNetworkPolicy{gnpObj("a", "default", nil, "", ingress,
				[]api.Rule{{Action: api.ActionAllow, Protocol: protocolp("UDP"), Destination: api.EntityRule{Ports: []api.Port{api.NamedPort("http")}}}}, nil)}
		}, in0, true},
		{"named port of another protocol does not match", func(u *Universe) {
			u.WEPs[0].Spec.Ports = []api.WorkloadEndpointPort{{Name: "http", Protocol: api.ProtocolFromString("TCP"), Port: 80}}
			u.GNPs = []*api.GlobalNetworkPolicy{gnpObj("a", "default", nil, "", ingress,
				[]api.Rule{{Action: api.ActionAllow, Protocol: protocolp("UDP"), Destination: api.EntityRule{Ports: []api.Port{api.NamedPort("http")}}}}, nil)}
		}, in0, false},
		{"ICMP type and code", func(u *Universe) {
			u.GNPs = []*api.GlobalNetworkPolicy{gnpObj("a", "default", nil, "", ingress,
				[]api.Rule{{Action: api.ActionAllow, Protocol: protocolp("ICMP"), ICMP: &api.ICMPFields{Type: intp(8), Code: intp(0)}}}, nil)}
		}, Probe{Packet: Packet{Src: o4, Dst: wl(0).V4, Proto: protoICMP, ICMPType: 8}, From: outside, To: "wl0"}, true},
		{"notICMP excludes the type", func(u *Universe) {
			u.GNPs = []*api.GlobalNetworkPolicy{gnpObj("a", "default", nil, "", ingress,
				[]api.Rule{{Action: api.ActionAllow, Protocol: protocolp("ICMP"), NotICMP: &api.ICMPFields{Type: intp(8)}}}, nil)}
		}, Probe{Packet: Packet{Src: o4, Dst: wl(0).V4, Proto: protoICMP, ICMPType: 8, ICMPCode: 1}, From: outside, To: "wl0"}, false},
		{"protocol ICMP never matches ICMPv6", func(u *Universe) {
			u.GNPs = []*api.GlobalNetworkPolicy{gnpObj("a", "default", nil, "", ingress,
				[]api.Rule{{Action: api.ActionAllow, Protocol: protocolp("ICMP")}}, nil)}
		}, Probe{Packet: Packet{Src: outsideAddrs[6][4], Dst: wl(0).V6, Proto: protoICMPv6, ICMPType: 128}, From: outside, To: "wl0"}, false},
		{"notNets of the other family leave the rule out", func(u *Universe) {
			u.GNPs = []*api.GlobalNetworkPolicy{gnpObj("a", "default", nil, "", ingress,
				[]api.Rule{{Action: api.ActionAllow, Source: api.EntityRule{NotNets: []string{"fd5c:e::/32"}}}}, nil)}
		}, in0, false},
		{"negated catch-all leaves the rule out of its family", func(u *Universe) {
			u.GNPs = []*api.GlobalNetworkPolicy{gnpObj("a", "default", nil, "", ingress,
				[]api.Rule{{Action: api.ActionDeny, Source: api.EntityRule{NotNets: []string{"0.0.0.0/0"}}}, allow()}, nil)}
		}, in0, true},
		{"notSelector alone: its own negated set, network set nets included", func(u *Universe) {
			u.GNSs = []*api.GlobalNetworkSet{gnsObj("bad", map[string]string{"bad": ""}, o4.String()+"/32")}
			u.GNPs = []*api.GlobalNetworkPolicy{gnpObj("a", "default", nil, "", ingress,
				[]api.Rule{{Action: api.ActionAllow, Source: api.EntityRule{NotSelector: "has(bad)"}}}, nil)}
		}, in0, false},
		{"notSelector folds into a selector: an item matching both holds the address", func(u *Universe) {
			u.GNSs = []*api.GlobalNetworkSet{gnsObj("bad", map[string]string{"bad": ""}, o4.String()+"/32"),
				gnsObj("good", map[string]string{"good": ""}, "198.19.0.0/16")}
			u.GNPs = []*api.GlobalNetworkPolicy{gnpObj("a", "default", nil, "", ingress,
				[]api.Rule{{Action: api.ActionAllow, Source: api.EntityRule{Selector: "has(good)", NotSelector: "has(bad)"}}}, nil)}
		}, in0, true},
		{"notSelector folds into a selector: an item matching both is left out", func(u *Universe) {
			u.GNSs = []*api.GlobalNetworkSet{gnsObj("both", map[string]string{"bad": "", "good": ""}, o4.String()+"/32")}
			u.GNPs = []*api.GlobalNetworkPolicy{gnpObj("a", "default", nil, "", ingress,
				[]api.Rule{{Action: api.ActionAllow, Source: api.EntityRule{Selector: "has(good)", NotSelector: "has(bad)"}}}, nil)}
		}, in0, false},
		{"a NetworkPolicy's namespace is a positive selector the notSelector folds into", func(u *Universe) {
			u.GNSs = []*api.GlobalNetworkSet{gnsObj("bad", map[string]string{"bad": ""}, wl(1).V4.String()+"/32")}
			u.NPs = []*api.NetworkPolicy{npObj("ns1", "a", "default", nil, "", ingress,
				[]api.Rule{{Action: api.ActionAllow, Source: api.EntityRule{NotSelector: "has(bad)"}}}, nil)}
			u.Profiles = []*api.Profile{profileObj("p", nil, nil, []api.Rule{allow()})}
			u.WEPs[1].Spec.Profiles = []string{"p"}
		}, tcp("wl1", "wl0", wl(1).V4, wl(0).V4, 80), true},
		{"namespaceSelector global() is a positive selector the notSelector folds into", func(u *Universe) {
			u.GNSs = []*api.GlobalNetworkSet{gnsObj("bad", map[string]string{"bad": ""}, o4.String()+"/32"),
				gnsObj("out", nil, "198.19.0.0/16")}
			u.NPs = []*api.NetworkPolicy{npObj("ns1", "a", "default", nil, "", ingress,
				[]api.Rule{{Action: api.ActionAllow, Source: api.EntityRule{NamespaceSelector: "global()", NotSelector: "has(bad)"}}}, nil)}
		}, in0, true},
		{"the folded selector picks the endpoints of a named port", func(u *Universe) {
			u.WEPs[0].Spec.Ports = []api.WorkloadEndpointPort{{Name: "http", Protocol: api.ProtocolFromString("UDP"), Port: 80}}
			u.WEPs[0].Labels["bad"] = ""
			u.GNSs = []*api.GlobalNetworkSet{gnsObj("ok", nil, wl(0).V4.String()+"/32")}
			u.GNPs = []*api.GlobalNetworkPolicy{gnpObj("a", "default", nil, "", ingress,
				[]api.Rule{{Action: api.ActionAllow, Protocol: protocolp("UDP"), Destination: api.EntityRule{
					Selector: "all()", NotSelector: "has(bad)", Ports: []api.Port{api.NamedPort("http")}}}}, nil)}
		}, in0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u := &Universe{Node: localNode, Tiers: []*api.Tier{defTier}, WEPs: localWEPs(nil, nil)}
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

// TestPacketRoundTrip checks that the receiver reads back what the sender wrote.
func TestPacketRoundTrip(t *testing.T) {
	for _, p := range []Packet{
		{Src: wl(0).V4, Dst: wl(1).V4, Proto: protoTCP, SrcPort: 1, DstPort: 2},
		{Src: wl(0).V6, Dst: wl(1).V6, Proto: protoUDP, SrcPort: 1, DstPort: 2},
		{Src: wl(0).V4, Dst: wl(1).V4, Proto: protoICMP, ICMPType: 8},
		{Src: wl(0).V6, Dst: wl(1).V6, Proto: protoICMPv6, ICMPType: 128},
		{Src: wl(0).V6, Dst: wl(1).V6, Proto: protoSCTP, SrcPort: 1, DstPort: 2},
		{Src: wl(0).V4, Dst: netip.MustParseAddr("198.19.1.1"), Proto: 253},
	} {
		got, ok := parsePacket(buildPacket(p, 0x12345678))
		if !ok || got.Tag != 0x12345678 || got.Src != p.Src || got.Dst != p.Dst || got.Proto != p.Proto {
			t.Errorf("%s: read back %+v ok=%v", p, got, ok)
		}
	}
}
