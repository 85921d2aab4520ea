package calc

import (
	"testing"

	"github.com/calico-host/calico-host/pkg/datastore"

	"github.com/calico-host/calico-host/pkg/syncer"
)

// asSyncerDelivers is what the syncer delivers for a raw value: the decoded value, or nil
// (absent) when felix's decoder fails (syncer.decodeKV).
func asSyncerDelivers(key, value string) syncer.Update {
	v, err := syncer.FailClosedDecoder(datastore.IDOf(key), []byte(value), 7)
	if err != nil {
		v = nil
	}
	return syncer.Update{ID: datastore.IDOf(key), Value: v, Revision: 7}
}

// TestUndecodableFelixConfigurationKeepsFailsafe (review of issue 23, point 1): a
// FelixConfiguration with one field of the wrong JSON type (a port as a string, as etcdctl by
// hand writes it) does not decode, so it is absent and every field falls back to its default:
// the failsafe ports the administrator closed ([]) open again (tcp:22, 179, 2379, ...) on every
// host endpoint. An invalid one keeps its valid fields (TestInvalidFelixConfigurationKeepsValidFields).
func TestUndecodableFelixConfigurationKeepsFailsafe(t *testing.T) {
	g := newTestGraph("h1")
	snapshot(g, asSyncerDelivers(resKey("felixconfigurations", "", "node.h1"), `{"kind":"FelixConfiguration",`+v3+`,
	  "metadata":{"name":"node.h1"},"spec":{"failsafeInboundHostPorts":[],"vxlanPort":"4789"}}`))
	g.Flush()
	n := g.Facts().Config.Node
	if n == nil || n.FailsafeInboundHostPorts == nil || len(*n.FailsafeInboundHostPorts) != 0 {
		t.Fatalf("node.h1 = %+v, want failsafeInboundHostPorts [] kept", n)
	}
}

// TestUndecodablePolicyScope: a policy whose selector does not decode (a number) is scoped as one
// whose selector does not parse: never enforced, it selects nothing (an empty selector would be
// all(): a drop at every endpoint of the host); enforced before, it drops at that version's
// endpoints. A policy with another undecodable value keeps its selector and drops there.
func TestUndecodablePolicyScope(t *testing.T) {
	key := resKey("globalnetworkpolicies", "", "p")
	pol := func(selector, ports string) string {
		return `{"kind":"GlobalNetworkPolicy",` + v3 + `,"metadata":{"name":"p"},"spec":{"selector":` + selector + `,
		  "types":["Ingress"],"ingress":[{"action":"Deny","protocol":"TCP","destination":{"ports":[` + ports + `]}}]}}`
	}
	g, m := newTestGraph("h1"), newModel()
	snapshot(g, wep("ns1", "h1", "a", map[string]string{"role": "web"}, []string{"10.65.0.1/32"}),
		wep("ns1", "h1", "b", nil, []string{"10.65.0.2/32"}), decoded(t, key, pol(`5`, `22`)))
	flushInto(t, g, m)
	a, b := wepID("ns1", "a"), wepID("ns1", "b")
	if pa, pb := ingressPolicies(m, a), ingressPolicies(m, b); len(pa)+len(pb) != 0 {
		t.Fatalf("a never enforced policy whose selector does not decode selects %v and %v, want nothing", pa, pb)
	}
	feed(g, decoded(t, key, pol(`"role == 'web'"`, `"9000:8000"`)))
	flushInto(t, g, m)
	if p := m.Policies[gnpID("p")]; p == nil || len(p.InboundRules) != 1 || p.InboundRules[0].Invalid == "" ||
		len(ingressPolicies(m, a)) != 1 || len(ingressPolicies(m, b)) != 0 {
		t.Fatalf("a policy with a reversed port range: %+v at a %v, b %v; want a drop at a only", p,
			ingressPolicies(m, a), ingressPolicies(m, b))
	}
	feed(g, decoded(t, key, pol(`true`, `22`)))
	flushInto(t, g, m)
	if p := m.Policies[gnpID("p")]; p == nil || p.InboundRules[0].Invalid == "" ||
		len(ingressPolicies(m, a)) != 1 || len(ingressPolicies(m, b)) != 0 {
		t.Fatalf("selector not decoding after an enforced version: %+v at a %v, b %v; want a drop at a only", p,
			ingressPolicies(m, a), ingressPolicies(m, b))
	}
}

// TestUndecodableTierOrder: a tier whose order does not decode keeps the order of its last
// version (its deny still decides before the default tier); one never seen is last.
func TestUndecodableTierOrder(t *testing.T) {
	tier := func(order string) syncer.Update {
		return asSyncerDelivers(resKey("tiers", "", "sec"), `{"kind":"Tier",`+v3+`,"metadata":{"name":"sec"},
		  "spec":{"order":`+order+`,"defaultAction":"Pass"}}`)
	}
	pols := []syncer.Update{
		asSyncerDelivers(resKey("globalnetworkpolicies", "", "sec.deny"), `{"kind":"GlobalNetworkPolicy",`+v3+`,
		  "metadata":{"name":"sec.deny"},"spec":{"tier":"sec","selector":"all()","ingress":[{"action":"Deny"}]}}`),
		asSyncerDelivers(resKey("globalnetworkpolicies", "", "default.allow"), `{"kind":"GlobalNetworkPolicy",`+v3+`,
		  "metadata":{"name":"default.allow"},"spec":{"selector":"all()","ingress":[{"action":"Allow"}]}}`),
	}
	a := wepID("ns1", "a")
	g, m := newTestGraph("h1"), newModel()
	snapshot(g, append(pols, wep("ns1", "h1", "a", nil, []string{"10.65.0.1/32"}), tier(`10`))...)
	flushInto(t, g, m)
	feed(g, tier(`"10"`))
	flushInto(t, g, m)
	if got := ingressPolicies(m, a); len(got) != 2 || got[0] != "sec:sec.deny" {
		t.Fatalf("tier with an order that does not decode after order 10: %v, want sec first", got)
	}
	g, m = newTestGraph("h1"), newModel()
	snapshot(g, append(pols, wep("ns1", "h1", "a", nil, []string{"10.65.0.1/32"}), tier(`"10"`))...)
	flushInto(t, g, m)
	if got := ingressPolicies(m, a); len(got) != 2 || got[1] != "sec:sec.deny" {
		t.Fatalf("never seen tier with an order that does not decode: %v, want sec last", got)
	}
}

// TestUndecodablePolicyKeepsPlacement: a policy whose order does not decode keeps the order of
// its last enforced version (no order would move its drop after the allow it came before); one
// never enforced has no order (a drop, last in its tier).
func TestUndecodablePolicyKeepsPlacement(t *testing.T) {
	pol := func(name, order, action string) syncer.Update {
		return asSyncerDelivers(resKey("globalnetworkpolicies", "", name), `{"kind":"GlobalNetworkPolicy",`+v3+`,
		  "metadata":{"name":"`+name+`"},"spec":{"order":`+order+`,"selector":"all()","ingress":[{"action":"`+action+`"}]}}`)
	}
	a := wepID("ns1", "a")
	g, m := newTestGraph("h1"), newModel()
	snapshot(g, wep("ns1", "h1", "a", nil, []string{"10.65.0.1/32"}), pol("p", `10`, "Deny"), pol("q", `20`, "Allow"))
	flushInto(t, g, m)
	feed(g, pol("p", `"10"`, "Deny"))
	flushInto(t, g, m)
	if got := ingressPolicies(m, a); len(got) != 2 || got[0] != "default:p" || m.Policies[gnpID("p")].InboundRules[0].Invalid == "" {
		t.Fatalf("policy whose order does not decode after order 10: %v (%+v), want p, a drop, before q", got, m.Policies[gnpID("p")])
	}
	g, m = newTestGraph("h1"), newModel()
	snapshot(g, wep("ns1", "h1", "a", nil, []string{"10.65.0.1/32"}), pol("p", `"10"`, "Deny"), pol("q", `20`, "Allow"))
	flushInto(t, g, m)
	if got := ingressPolicies(m, a); len(got) != 2 || got[1] != "default:p" {
		t.Fatalf("never enforced policy whose order does not decode: %v, want it last", got)
	}
}

// TestUndecodableHostEndpointKeepsInterface: a host endpoint of this host whose node,
// interfaceName or expectedIPs do not decode keeps those of its last version: it still
// protects its interface (without its profiles).
func TestUndecodableHostEndpointKeepsInterface(t *testing.T) {
	key := resKey("hostendpoints", "", "h1-eth0")
	hep := func(spec string) syncer.Update {
		return asSyncerDelivers(key, `{"kind":"HostEndpoint",`+v3+`,"metadata":{"name":"h1-eth0"},"spec":{`+spec+`,"profiles":["p"]}}`)
	}
	for _, bad := range []string{
		`"node":5,"interfaceName":"eth0","expectedIPs":["198.18.0.1","198.18.0.7"]`,
		`"node":"h1","interfaceName":["eth0"],"expectedIPs":["198.18.0.1","198.18.0.7"]`,
		`"node":"h1","interfaceName":"eth0","expectedIPs":["198.18.0.1",7]`,
	} {
		g, m := newTestGraph("h1"), newModel()
		snapshot(g, hep(`"node":"h1","interfaceName":"eth0","expectedIPs":["198.18.0.1","198.18.0.7"]`))
		flushInto(t, g, m)
		feed(g, hep(bad))
		flushInto(t, g, m)
		h := m.HEPs["h1-eth0"]
		if h == nil || h.InterfaceName != "eth0" || len(h.ExpectedIPv4Addrs) != 2 || len(h.ProfileIDs) != 0 {
			t.Errorf("%s: host endpoint %+v, want eth0 and both addresses kept, no profiles", bad, h)
		}
	}
}

// TestUndecodablePolicySpec: a policy whose whole spec does not decode has no selector to
// scope it: never enforced, it selects nothing (not all(): a drop at every endpoint).
func TestUndecodablePolicySpec(t *testing.T) {
	g, m := newTestGraph("h1"), newModel()
	snapshot(g, wep("ns1", "h1", "a", nil, []string{"10.65.0.1/32"}),
		asSyncerDelivers(resKey("globalnetworkpolicies", "", "p"), `{"kind":"GlobalNetworkPolicy",`+v3+`,"metadata":{"name":"p"},"spec":"x"}`))
	flushInto(t, g, m)
	if got := ingressPolicies(m, wepID("ns1", "a")); len(got) != 0 {
		t.Fatalf("a policy whose spec does not decode applies at %v, want nowhere", got)
	}
}
