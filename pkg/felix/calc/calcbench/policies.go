package calcbench

import (
	"fmt"

	"github.com/calico-host/calico-host/pkg/api"
)

func port(s string) api.Port {
	p, err := api.ParsePort(s)
	if err != nil {
		panic(err)
	}
	return p
}

var tcp = api.ProtocolFromString("TCP")

// policy adds policy number i, for app i%Apps (in that app's namespace): 60% namespaced app
// policies (ingress from a role with a named port, egress to the databases), 20% policies of
// the security tier (deny a net, else pass), 10% OpenStack security-group policies (no types),
// 10% global policies with a namespace selector and a network-set destination.
func (b *builder) policy(i int) {
	app := i % b.s.Apps()
	ns, role := fmt.Sprintf("ns-%d", app%Namespaces), Roles[i%len(Roles)]
	appSel := fmt.Sprintf("app == 'app-%d'", app)
	switch i % 10 {
	case 6, 7:
		b.add("", fmt.Sprintf("security.block-%d", i), &api.GlobalNetworkPolicy{Spec: api.GlobalNetworkPolicySpec{
			Tier: "security", Order: api.Float(float64(i)), Selector: fmt.Sprintf("%s && role == '%s'", appSel, role),
			Types: []string{"Ingress"},
			Ingress: []api.Rule{{Action: "Deny", Source: api.EntityRule{Nets: []string{fmt.Sprintf("203.0.113.%d/32", i%256)}}},
				{Action: "Pass"}}}})
	case 8:
		sg := fmt.Sprintf("sg-%d", app%b.s.SecurityGroups())
		b.add(ns, fmt.Sprintf("ossg.default.%s-%d", sg, i), &api.NetworkPolicy{Spec: api.NetworkPolicySpec{
			Selector: fmt.Sprintf("has(%s)", sg),
			Ingress: []api.Rule{{Action: "Allow", Protocol: &tcp, Source: api.EntityRule{Selector: fmt.Sprintf("has(%s)", sg)},
				Destination: api.EntityRule{Ports: []api.Port{port("22")}}}},
			Egress: []api.Rule{{Action: "Allow"}}}})
	case 9:
		b.add("", fmt.Sprintf("cross-%d", i), &api.GlobalNetworkPolicy{Spec: api.GlobalNetworkPolicySpec{
			Order: api.Float(500), Selector: appSel + " && env == 'prod'", Types: []string{"Ingress", "Egress"},
			Ingress: []api.Rule{{Action: "Allow", Source: api.EntityRule{NamespaceSelector: fmt.Sprintf("team == 'team-%d'", i%3),
				Selector: "role == 'api'"}}},
			Egress: []api.Rule{{Action: "Allow", Destination: api.EntityRule{Selector: fmt.Sprintf("netset == 'n-%d'", i%10)}}}}})
	default:
		b.add(ns, fmt.Sprintf("app-%d", i), &api.NetworkPolicy{Spec: api.NetworkPolicySpec{
			Order: api.Float(float64(i % 10)), Selector: appSel, Types: []string{"Ingress", "Egress"},
			Ingress: []api.Rule{{Action: "Allow", Protocol: &tcp, Source: api.EntityRule{Selector: fmt.Sprintf("role == '%s'", role)},
				Destination: api.EntityRule{Ports: []api.Port{port("80"), port("http")}}}},
			Egress: []api.Rule{{Action: "Allow", Protocol: &tcp, Destination: api.EntityRule{Selector: "role == 'db'",
				Ports: []api.Port{port("5432")}}}}}})
	}
}

// netset adds network set number i: global and namespaced alternately, labelled netset=n-<i%10>.
func (b *builder) netset(i int) {
	labels := map[string]string{"netset": fmt.Sprintf("n-%d", i%10)}
	spec := api.NetworkSetSpec{Nets: []string{fmt.Sprintf("198.51.100.%d/32", i%256), fmt.Sprintf("203.0.113.%d/32", i%256)}}
	if i%2 == 0 {
		b.add("", fmt.Sprintf("gset-%d", i), &api.GlobalNetworkSet{ObjectMeta: meta(labels), Spec: spec})
		return
	}
	b.add(fmt.Sprintf("ns-%d", i%Namespaces), fmt.Sprintf("set-%d", i), &api.NetworkSet{ObjectMeta: meta(labels), Spec: spec})
}
