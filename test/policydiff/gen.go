package policydiff

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/calico-host/calico-host/pkg/api"
)

// gen draws small random universes, so that selectors, nets and ports actually match: three
// label keys with three values, two namespaces, a handful of endpoints, tiers, policies,
// profiles and network sets, all valid by Project Calico's validation.
type gen struct {
	r *rand.Rand
}

var (
	labelKeys   = []string{"a", "b", "c"}
	labelValues = []string{"1", "2", "3"}
	namespaces  = []string{"ns1", "ns2"}
	// Port pool: numbers, ranges and the names the endpoints' ports use.
	numericPorts = []string{"80", "443", "8080", "53", "9000", "22", "8000:8100", "5000:5005"}
	portNames    = []string{"http", "web", "dns", "alt"}
	// CIDR pools per family: local workloads, remote workloads, outside addresses, catch-all.
	netPool = map[int][]string{
		4: {"10.65.1.0/24", "10.65.1.10/31", "10.65.1.12/32", "10.65.1.15/32", "10.65.0.0/16", "10.65.200.0/24",
			"10.65.200.2/32", "198.19.0.0/16", "198.19.1.0/24", "198.19.2.7/32", "0.0.0.0/0"},
		6: {"fd5c:1:1::/64", "fd5c:1:1::10/127", "fd5c:1:1::12/128", "fd5c:1:1::15/128", "fd5c:1::/32", "fd5c:1:200::/64",
			"fd5c:1:200::2/128", "fd5c:e::/32", "fd5c:e:1::/48", "fd5c:e:2::7/128", "::/0"},
	}
	policyBases = []string{"p", "p-a", "p.a", "pa", "q"}
)

func (g *gen) pick(list []string) string { return list[g.r.IntN(len(list))] }
func (g *gen) chance(p float64) bool     { return g.r.Float64() < p }

// atom is one selector term.
func (g *gen) atom() string {
	k, v := g.pick(labelKeys), g.pick(labelValues)
	switch g.r.IntN(8) {
	case 0:
		return "all()"
	case 1:
		return fmt.Sprintf("has(%s)", k)
	case 2:
		return fmt.Sprintf("!has(%s)", k)
	case 3:
		return fmt.Sprintf("%s != '%s'", k, v)
	case 4:
		return fmt.Sprintf("%s in {'%s', '%s'}", k, v, g.pick(labelValues))
	case 5:
		return fmt.Sprintf("%s not in {'%s'}", k, v)
	}
	return fmt.Sprintf("%s == '%s'", k, v)
}

func (g *gen) selector() string {
	switch n := g.r.IntN(10); {
	case n < 6:
		return g.atom()
	case n < 8:
		return g.atom() + " && " + g.atom()
	}
	return g.atom() + " || " + g.atom()
}

func (g *gen) labels() map[string]string {
	l := map[string]string{}
	for _, k := range labelKeys {
		if g.chance(0.55) {
			l[k] = g.pick(labelValues)
		}
	}
	return l
}

func (g *gen) protocol(name string) *api.Protocol {
	p := api.ProtocolFromString(name)
	return &p
}

func intp(i int) *int { return &i }

// rule draws one valid rule.
func (g *gen) rule(namespaced bool) api.Rule {
	r := api.Rule{Action: g.pick([]string{"Allow", "Allow", "Allow", "Allow", "Allow", "Deny", "Deny", "Pass", "Pass", "Log"})}
	if g.chance(0.15) {
		return r // matches everything
	}
	if g.chance(0.2) {
		r.IPVersion = intp(4 + 2*g.r.IntN(2))
	}
	proto := ""
	if g.chance(0.65) {
		proto = g.pick([]string{"TCP", "TCP", "UDP", "UDP", "ICMP", "ICMPv6", "SCTP", "6", "17", "253", "UDPLite"})
		r.Protocol = g.protocol(proto)
	}
	if g.chance(0.12) {
		r.NotProtocol = g.protocol(g.pick([]string{"TCP", "UDP", "ICMP", "ICMPv6", "SCTP", "17", "253"}))
	}
	switch proto {
	case "ICMP", "ICMPv6":
		g.icmpFields(&r, proto)
	case "TCP", "UDP", "SCTP":
		g.ports(&r)
	}
	fam := 4 + 2*g.r.IntN(2)
	if r.IPVersion != nil {
		fam = *r.IPVersion
	}
	g.entity(&r.Source, fam, namespaced)
	g.entity(&r.Destination, fam, namespaced)
	return r
}

func (g *gen) icmpFields(r *api.Rule, proto string) {
	if proto == "ICMP" && r.IPVersion != nil && *r.IPVersion == 6 || proto == "ICMPv6" && r.IPVersion != nil && *r.IPVersion == 4 {
		r.IPVersion = nil // Calico refuses an ICMP protocol of the other family
	}
	types := []int{8, 13, 0}
	if proto == "ICMPv6" {
		types = []int{128, 139, 129}
	}
	f := func() *api.ICMPFields {
		t := &api.ICMPFields{Type: intp(types[g.r.IntN(len(types))])}
		if g.chance(0.4) {
			t.Code = intp(g.r.IntN(2))
		}
		return t
	}
	if g.chance(0.45) {
		r.ICMP = f()
	}
	if g.chance(0.2) {
		r.NotICMP = f()
	}
}

func (g *gen) portList() []api.Port {
	var out []api.Port
	for range 1 + g.r.IntN(2) {
		var p api.Port
		var err error
		if g.chance(0.3) {
			p = api.NamedPort(g.pick(portNames))
		} else if p, err = api.ParsePort(g.pick(numericPorts)); err != nil {
			panic(err)
		}
		out = append(out, p)
	}
	return out
}

func (g *gen) ports(r *api.Rule) {
	if g.chance(0.2) {
		r.Source.Ports = g.portList()
	}
	if g.chance(0.5) {
		r.Destination.Ports = g.portList()
	}
	if g.chance(0.1) {
		r.Source.NotPorts = g.portList()
	}
	if g.chance(0.15) {
		r.Destination.NotPorts = g.portList()
	}
}

func (g *gen) nets(fam int, negated bool) []string {
	var out []string
	for range 1 + g.r.IntN(2) {
		n := g.pick(netPool[fam])
		if negated && (n == "0.0.0.0/0" || n == "::/0") {
			continue // Calico refuses a negated catch-all
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

func (g *gen) entity(e *api.EntityRule, fam int, namespaced bool) {
	if g.chance(0.3) {
		e.Selector = g.selector()
	}
	if g.chance(0.1) {
		e.NotSelector = g.atom()
	}
	if (e.Selector != "" || namespaced) && g.chance(0.2) {
		e.NamespaceSelector = g.pick([]string{"all()", "global()"})
	}
	if g.chance(0.15) {
		e.Nets = g.nets(fam, false)
	}
	if g.chance(0.1) {
		e.NotNets = g.nets(fam, true)
	}
}

func (g *gen) rules(n int, namespaced bool) []api.Rule {
	var out []api.Rule
	for range n {
		out = append(out, g.rule(namespaced))
	}
	return out
}

// tiers draws 0-2 tiers besides "default" (order 1e6, Deny), with ties and unordered ones.
func (g *gen) tiers() []*api.Tier {
	out := []*api.Tier{tier("default", floatp(1e6), api.ActionDeny)}
	for _, name := range []string{"t1", "t2"} {
		if !g.chance(0.6) {
			continue
		}
		orders := []*float64{floatp(10), floatp(100), floatp(100), floatp(2e6), nil}
		out = append(out, tier(name, orders[g.r.IntN(len(orders))], g.pick([]string{api.ActionDeny, api.ActionPass, api.ActionPass})))
	}
	return out
}

func floatp(f float64) *float64 { return &f }

func tier(name string, order *float64, action string) *api.Tier {
	return &api.Tier{TypeMeta: api.TypeMeta{Kind: "Tier", APIVersion: api.APIVersion},
		ObjectMeta: api.ObjectMeta{Name: name}, Spec: api.TierSpec{Order: order, DefaultAction: action}}
}

// policyCommon draws the spec fields shared by both policy kinds.
func (g *gen) policyCommon(tiers []*api.Tier, namespaced bool) (tierName string, order *float64, sel string, types []string, in, out []api.Rule) {
	tierName = tiers[g.r.IntN(len(tiers))].Name
	orders := []*float64{nil, floatp(1), floatp(5), floatp(5), floatp(10), floatp(100)}
	order = orders[g.r.IntN(len(orders))]
	if g.chance(0.85) {
		sel = g.selector()
	}
	in, out = g.rules(g.r.IntN(4), namespaced), g.rules(g.r.IntN(3), namespaced)
	// Often end with a catch-all, as real policies do, so that later rules and tiers matter.
	if g.chance(0.35) {
		in = append(in, api.Rule{Action: g.pick([]string{api.ActionAllow, api.ActionAllow, api.ActionPass})})
	}
	if g.chance(0.35) {
		out = append(out, api.Rule{Action: g.pick([]string{api.ActionAllow, api.ActionAllow, api.ActionPass})})
	}
	switch g.r.IntN(8) {
	case 0: // stored without types: felix applies it in both directions
	case 1:
		types = []string{api.PolicyTypeIngress}
	case 2:
		types = []string{api.PolicyTypeEgress}
	case 3:
		types = []string{api.PolicyTypeIngress, api.PolicyTypeEgress}
	default:
		types = api.DefaultPolicyTypes(in, out)
	}
	return
}

func policyName(tierName, base string) string {
	if tierName == api.TierDefault {
		return base
	}
	return tierName + "." + base
}

func policyMeta(name, ns, tierName string) api.ObjectMeta {
	return api.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"projectcalico.org/tier": tierName}}
}

// policies draws 3-10 policies of both kinds with distinct names.
func (g *gen) policies(u *Universe) {
	seen := map[string]bool{}
	for range 3 + g.r.IntN(8) {
		namespaced := g.chance(0.45)
		ns := ""
		if namespaced {
			ns = g.pick(namespaces)
		}
		tierName, order, sel, types, in, out := g.policyCommon(u.Tiers, namespaced)
		name := policyName(tierName, g.pick(policyBases))
		if seen[ns+"/"+name] {
			continue
		}
		seen[ns+"/"+name] = true
		if namespaced {
			u.NPs = append(u.NPs, &api.NetworkPolicy{TypeMeta: api.TypeMeta{Kind: "NetworkPolicy", APIVersion: api.APIVersion},
				ObjectMeta: policyMeta(name, ns, tierName),
				Spec:       api.NetworkPolicySpec{Tier: tierName, Order: order, Selector: sel, Types: types, Ingress: in, Egress: out}})
			continue
		}
		u.GNPs = append(u.GNPs, &api.GlobalNetworkPolicy{TypeMeta: api.TypeMeta{Kind: "GlobalNetworkPolicy", APIVersion: api.APIVersion},
			ObjectMeta: policyMeta(name, "", tierName),
			Spec:       api.GlobalNetworkPolicySpec{Tier: tierName, Order: order, Selector: sel, Types: types, Ingress: in, Egress: out}})
	}
}

func (g *gen) profiles(u *Universe) {
	for _, name := range []string{"prof-x", "prof-y", "prof-z"} {
		if !g.chance(0.65) {
			continue
		}
		p := &api.Profile{TypeMeta: api.TypeMeta{Kind: "Profile", APIVersion: api.APIVersion}, ObjectMeta: api.ObjectMeta{Name: name},
			Spec: api.ProfileSpec{Ingress: g.rules(1+g.r.IntN(2), false), Egress: g.rules(1+g.r.IntN(2), false)}}
		if g.chance(0.4) {
			p.Spec.LabelsToApply = g.labels()
		}
		u.Profiles = append(u.Profiles, p)
	}
}

func (g *gen) networkSets(u *Universe) {
	for i := range g.r.IntN(4) {
		fam := 4 + 2*g.r.IntN(2)
		nets := g.nets(fam, true)
		if g.chance(0.3) {
			nets = append(nets, g.nets(6-fam+4, true)...)
		}
		meta := api.ObjectMeta{Name: fmt.Sprintf("set%d", i), Labels: g.labels()}
		spec := api.NetworkSetSpec{Nets: nets}
		if g.chance(0.5) {
			meta.Namespace = g.pick(namespaces)
			u.NSs = append(u.NSs, &api.NetworkSet{TypeMeta: api.TypeMeta{Kind: "NetworkSet", APIVersion: api.APIVersion}, ObjectMeta: meta, Spec: spec})
			continue
		}
		u.GNSs = append(u.GNSs, &api.GlobalNetworkSet{TypeMeta: api.TypeMeta{Kind: "GlobalNetworkSet", APIVersion: api.APIVersion}, ObjectMeta: meta, Spec: spec})
	}
}

// endpointPorts draws named ports for an endpoint.
func (g *gen) endpointPorts() []api.WorkloadEndpointPort {
	pool := []api.WorkloadEndpointPort{
		{Name: "http", Protocol: api.ProtocolFromString("TCP"), Port: 80},
		{Name: "http", Protocol: api.ProtocolFromString("TCP"), Port: 8080},
		{Name: "web", Protocol: api.ProtocolFromString("TCP"), Port: 8443},
		{Name: "dns", Protocol: api.ProtocolFromString("UDP"), Port: 53},
		{Name: "dns", Protocol: api.ProtocolFromString("TCP"), Port: 53},
		{Name: "alt", Protocol: api.ProtocolFromString("UDP"), Port: 9000},
		{Name: "alt", Protocol: api.ProtocolFromString("SCTP"), Port: 9001},
	}
	var out []api.WorkloadEndpointPort
	for _, p := range pool {
		if g.chance(0.3) {
			out = append(out, p)
		}
	}
	return out
}

func (g *gen) endpoints(u *Universe) {
	var profNames []string
	for _, p := range u.Profiles {
		profNames = append(profNames, p.Name)
	}
	add := func(s slot) {
		var profs []string
		for _, i := range g.r.Perm(len(profNames)) {
			if g.chance(0.7) {
				profs = append(profs, profNames[i])
			}
		}
		u.WEPs = append(u.WEPs, s.wep(g.pick(namespaces), g.labels(), profs, g.endpointPorts()))
	}
	for _, s := range localSlots() {
		add(s)
	}
	for _, s := range remoteSlots() {
		if g.chance(0.6) {
			add(s)
		}
	}
}

// hosts draws this node's host endpoints, one on the uplink and one for all interfaces, each
// with a chance, and marks some global policies applyOnForward. It draws from a stream of its
// own (hostStream), so that everything else in a scenario is what it was before host
// endpoints were drawn.
func (g *gen) hosts(u *Universe) {
	for _, p := range u.GNPs {
		p.Spec.ApplyOnForward = g.chance(0.5)
	}
	if g.chance(0.55) {
		u.HEPs = append(u.HEPs, g.hostEndpoint(u, uplink, uplink))
	}
	if g.chance(0.35) {
		u.HEPs = append(u.HEPs, g.hostEndpoint(u, "*", "all"))
	}
}

// hostStream is xored into a scenario's index to seed the host endpoint stream.
const hostStream = 0x686f73745f657073

// hostEndpoint draws a host endpoint of this node on iface: random labels plus hep=<tag>,
// sometimes profiles, sometimes the host's own uplink addresses as expected IPs (no probe uses
// them).
func (g *gen) hostEndpoint(u *Universe, iface, tag string) *api.HostEndpoint {
	labels := g.labels()
	labels["hep"] = tag
	h := &api.HostEndpoint{TypeMeta: api.TypeMeta{Kind: "HostEndpoint", APIVersion: api.APIVersion},
		ObjectMeta: api.ObjectMeta{Name: localNode + "-" + tag, Labels: labels},
		Spec:       api.HostEndpointSpec{Node: localNode, InterfaceName: iface}}
	for _, i := range g.r.Perm(len(u.Profiles)) {
		if g.chance(0.3) {
			h.Spec.Profiles = append(h.Spec.Profiles, u.Profiles[i].Name)
		}
	}
	if g.chance(0.5) {
		h.Spec.ExpectedIPs = []string{extGatewayV4.String(), extGatewayV6.String()}
	}
	return h
}

// Universe draws the random part of a scenario.
func (g *gen) Universe() *Universe {
	u := &Universe{Node: localNode}
	u.Tiers = g.tiers()
	g.policies(u)
	g.profiles(u)
	g.networkSets(u)
	g.endpoints(u)
	return u
}
