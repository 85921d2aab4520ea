package calc

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/selector"
)

func pfx(ss ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range ss {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}

func u8(v uint8) *uint8 { return &v }

func TestRenderRule(t *testing.T) {
	webSel := sel(`role == "web"`)
	tests := []struct {
		name string
		ns   string
		rule api.Rule
		want []Rule // RuleID is ignored
	}{
		{"allow all", "", rule("Allow"), []Rule{{Action: "allow"}}},
		{"pass and log", "", rule("Pass", proto("udp")), []Rule{{Action: "pass", Protocol: 17}}},
		{"numeric protocol and notProtocol", "", rule("Deny", proto("47"), func(r *api.Rule) {
			p := api.ProtocolFromString("UDPLite")
			r.NotProtocol = &p
		}), []Rule{{Action: "deny", Protocol: 47, NotProtocol: 136}}},
		{"ICMP type and code: IPv4 only", "", rule("Allow", proto("ICMP"), func(r *api.Rule) {
			r.ICMP = &api.ICMPFields{Type: api.Int(8), Code: api.Int(0)}
		}), []Rule{{Action: "allow", IPVersion: 4, Protocol: 1, ICMP: &ICMPMatch{Type: 8, Code: u8(0)}}}},
		{"notICMP on ICMPv6", "", rule("Allow", proto("ICMPv6"), func(r *api.Rule) {
			r.NotICMP = &api.ICMPFields{Type: api.Int(128)}
		}), []Rule{{Action: "allow", IPVersion: 6, Protocol: 58, NotICMP: &ICMPMatch{Type: 128}}}},
		{"notICMP without protocol: both families", "", rule("Deny", func(r *api.Rule) {
			r.NotICMP = &api.ICMPFields{Type: api.Int(8), Code: api.Int(0)}
		}), []Rule{{Action: "deny", NotICMP: &ICMPMatch{Type: 8, Code: u8(0)}}}},
		{"notICMP with protocol TCP is invalid", "", rule("Deny", proto("TCP"), func(r *api.Rule) {
			r.NotICMP = &api.ICMPFields{Type: api.Int(8)}
		}), []Rule{{Action: "deny", Invalid: "ICMP match without protocol ICMP or ICMPv6"}}},
		{"ICMP with ipVersion 6 is dropped", "", rule("Allow", proto("ICMP"), func(r *api.Rule) { r.IPVersion = api.Int(6) }), nil},
		{"nets of one family set the IP version", "", rule("Allow", func(r *api.Rule) {
			r.Source.Nets = []string{"fd00::/8", "fd01::1"}
			r.Destination.NotNets = []string{"10.0.0.0/8", "fd02::/16"}
		}), []Rule{{Action: "allow", IPVersion: 6, SrcNets: pfx("fd00::/8", "fd01::1/128"), NotDstNets: pfx("fd02::/16")}}},
		// Project Calico's FilterRuleToIPVersion: negated nets of the other family only, or the
		// whole space of a family, leave the rule out of that family.
		{"negated nets of the other family match nothing in this one", "", rule("Allow", func(r *api.Rule) {
			r.Source.Nets = []string{"fd00::/8"}
			r.Destination.NotNets = []string{"10.0.0.0/8"}
		}), nil},
		{"ICMPv6 with IPv4 negated nets matches nothing", "", rule("Allow", proto("ICMPv6"), func(r *api.Rule) {
			r.Source.NotNets = []string{"10.65.1.10/31"}
		}), nil},
		{"negated nets set the IP version", "", rule("Deny", func(r *api.Rule) {
			r.Source.NotNets = []string{"198.19.0.0/16"}
		}), []Rule{{Action: "deny", IPVersion: 4, NotSrcNets: pfx("198.19.0.0/16")}}},
		{"a negated catch-all leaves its family out", "", rule("Deny", func(r *api.Rule) {
			r.Source.NotNets = []string{"0.0.0.0/0", "fd00::/8"}
		}), []Rule{{Action: "deny", IPVersion: 6, NotSrcNets: pfx("fd00::/8")}}},
		{"mixed nets keep both families", "", rule("Allow", func(r *api.Rule) {
			r.Source.Nets = []string{"10.1.2.3/8", "fd00::/8"}
		}), []Rule{{Action: "allow", SrcNets: pfx("10.0.0.0/8", "fd00::/8")}}},
		{"source and destination nets of different families match nothing", "", rule("Allow", func(r *api.Rule) {
			r.Source.Nets, r.Destination.Nets = []string{"10.0.0.0/8"}, []string{"fd00::/8"}
		}), nil},
		{"ipVersion filters nets", "", rule("Allow", func(r *api.Rule) {
			r.IPVersion = api.Int(4)
			r.Source.Nets = []string{"10.0.0.0/8", "fd00::/8"}
		}), []Rule{{Action: "allow", IPVersion: 4, SrcNets: pfx("10.0.0.0/8")}}},
		{"ports, ranges and notPorts", "", rule("Allow", proto("TCP"), dstPorts("80", "8000:8080"), func(r *api.Rule) {
			r.Source.NotPorts = []api.Port{api.SinglePort(22)}
		}), []Rule{{Action: "allow", Protocol: 6, DstPorts: []PortRange{{80, 80}, {8000, 8080}}, NotSrcPorts: []PortRange{{22, 22}}}}},
		{"selector and notSelector fold into one set", "", rule("Allow", srcSel("role == 'web'"), func(r *api.Rule) {
			r.Source.NotSelector = "env == 'dev'"
		}), []Rule{{Action: "allow", SrcIPSetIDs: []string{sel(`(role == "web") && (!(env == "dev"))`)}}}},
		{"notSelector alone", "", rule("Allow", func(r *api.Rule) { r.Destination.NotSelector = "env == 'dev'" }),
			[]Rule{{Action: "allow", NotDstIPSetIDs: []string{sel(`env == "dev"`)}}}},
		{"network policy selectors are scoped", "ns1", rule("Allow", srcSel("role == 'web'")),
			[]Rule{{Action: "allow", SrcIPSetIDs: []string{sel(`(projectcalico.org/namespace == "ns1") && (role == "web")`)}}}},
		{"named port only: one named-port set filtered by the selector", "", rule("Allow", proto("TCP"), dstSel("role == 'web'"), dstPorts("http")),
			[]Rule{{Action: "allow", Protocol: 6, DstNamedPortIPSetIDs: []string{namedPortSetID(selector.MustParse(`role == "web"`), 6, "http")}}}},
		{"numeric and named ports split into alternatives", "", rule("Allow", proto("UDP"), dstSel("role == 'web'"), dstPorts("53", "dns")),
			[]Rule{
				{Action: "allow", Protocol: 17, DstPorts: []PortRange{{53, 53}}, DstIPSetIDs: []string{webSel}},
				{Action: "allow", Protocol: 17, DstNamedPortIPSetIDs: []string{namedPortSetID(selector.MustParse(`role == "web"`), 17, "dns")}},
			}},
		{"named port without selector uses all()", "", rule("Allow", proto("SCTP"), dstPorts("x")),
			[]Rule{{Action: "allow", Protocol: 132, DstNamedPortIPSetIDs: []string{namedPortSetID(allSelector, 132, "x")}}}},
		{"negated named port", "", rule("Deny", proto("TCP"), func(r *api.Rule) { r.Source.NotPorts = []api.Port{api.NamedPort("ssh"), api.SinglePort(2)} }),
			[]Rule{{Action: "deny", Protocol: 6, NotSrcPorts: []PortRange{{2, 2}}, NotSrcNamedPortIPSetIDs: []string{namedPortSetID(allSelector, 6, "ssh")}}}},
		// Rules calc cannot interpret stay in place as Invalid (the dataplane fails closed);
		// rules that can never match are left out.
		{"ports without a port protocol are invalid", "", rule("Allow", dstPorts("80")),
			[]Rule{{Action: "deny", Invalid: "ports need protocol TCP, UDP, SCTP or UDPLite"}}},
		{"unknown protocol is invalid", "", rule("Deny", proto("GRE")), []Rule{{Action: "deny", Invalid: `unknown protocol "GRE"`}}},
		{"service match never matches", "", rule("Allow", func(r *api.Rule) { r.Destination.Services = &api.ServiceMatch{Name: "x"} }), nil},
		{"bad net is invalid, keeping its IP version", "", rule("Log", func(r *api.Rule) {
			r.IPVersion = api.Int(4)
			r.Source.Nets = []string{"10.0.0.0/33"}
		}), []Rule{{Action: "deny", IPVersion: 4, Invalid: `source: invalid CIDR "10.0.0.0/33"`}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &ruleRenderer{log: zerolog.Nop(), ns: tc.ns, sets: map[string]ipSetSpec{}}
			got := r.renderRules("ingress", []api.Rule{tc.rule})
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty(), cmpopts.IgnoreFields(Rule{}, "RuleID"),
				cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
				t.Errorf("rules (-want +got):\n%s", diff)
			}
			for _, rr := range got {
				for _, id := range ruleSetIDs(&rr) {
					if _, ok := r.sets[id]; !ok {
						t.Errorf("set %s used but not registered", id)
					}
				}
				if rr.RuleID == "" {
					t.Error("empty RuleID")
				}
			}
		})
	}
}

func TestNamedPortSets(t *testing.T) {
	g, m := newTestGraph("h1"), newModel()
	httpAlt := api.WorkloadEndpointPort{Name: "http-alt", Protocol: api.ProtocolFromString("TCP"), Port: 8080}
	dnsUDP := api.WorkloadEndpointPort{Name: "http-alt", Protocol: api.ProtocolFromString("UDP"), Port: 5353}
	snapshot(g,
		gnp("web", api.GlobalNetworkPolicySpec{Selector: "all()", Egress: []api.Rule{
			rule("Allow", proto("TCP"), dstSel("role == 'web'"), dstPorts("80", "http-alt"))}}),
		wep("ns1", "h1", "a", nil, []string{"10.65.0.1/32"}),
		wep("ns1", "h2", "b", map[string]string{"role": "web"}, []string{"10.65.1.1/32", "fd5c::1/128"}, withPorts(httpAlt, dnsUDP)),
		wep("ns1", "h2", "c", map[string]string{"role": "db"}, []string{"10.65.1.2/32"}, withPorts(httpAlt)),
		hep("h2-eth0", "h2", "eth0", map[string]string{"role": "web"}, []string{"198.18.1.1"}))
	flushInto(t, g, m)
	rules := m.Policies[gnpID("web")].OutboundRules
	if len(rules) != 2 || len(rules[1].DstNamedPortIPSetIDs) != 1 {
		t.Fatalf("rules = %+v, want a numeric and a named-port alternative", rules)
	}
	npSet := rules[1].DstNamedPortIPSetIDs[0]
	if m.SetTypes[npSet] != IPSetNamedPort {
		t.Errorf("set type = %v", m.SetTypes[npSet])
	}
	want := []string{"10.65.1.1,6:8080", "fd5c::1,6:8080"}
	if got := m.members(npSet); !slices.Equal(got, want) {
		t.Errorf("named-port members = %v, want %v", got, want)
	}
	// The db endpoint becomes web: its port joins; the web endpoint loses the port.
	feed(g, wep("ns1", "h2", "c", map[string]string{"role": "web"}, []string{"10.65.1.2/32"}, withPorts(httpAlt)),
		wep("ns1", "h2", "b", map[string]string{"role": "web"}, []string{"10.65.1.1/32", "fd5c::1/128"}, withPorts(dnsUDP)))
	flushInto(t, g, m)
	if got, want := m.members(npSet), []string{"10.65.1.2,6:8080"}; !slices.Equal(got, want) {
		t.Errorf("after changes: named-port members = %v, want %v", got, want)
	}
	if got, want := m.members(rules[0].DstIPSetIDs[0]), []string{"10.65.1.1/32", "10.65.1.2/32", "198.18.1.1/32", "fd5c::1/128"}; !slices.Equal(got, want) {
		t.Errorf("selector set = %v, want %v", got, want)
	}
}

// TestRuleIndexIsTheSourcePosition: a rendered rule's Index is its v3 rule's position, also
// after a rule that can never match was left out and when mixed ports split a rule.
func TestRuleIndexIsTheSourcePosition(t *testing.T) {
	four := 4
	never := rule("Deny", func(r *api.Rule) { r.IPVersion = &four; r.Source.Nets = []string{"fd5c::/64"} })
	mixed := rule("Allow", proto("TCP"), dstPorts("80", "http"))
	r := &ruleRenderer{log: zerolog.Nop(), sets: map[string]ipSetSpec{}}
	got := r.renderRules("ingress", []api.Rule{never, rule("Log"), mixed, rule("Deny")})
	var idx []int
	for _, g := range got {
		idx = append(idx, g.Index)
	}
	if want := []int{1, 2, 2, 3}; !slices.Equal(idx, want) {
		t.Errorf("indices %v, want %v", idx, want)
	}
}
