package calc

import (
	"strings"
	"testing"

	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// decoded runs raw etcd bytes through felix's decoder, as the syncer does.
func decoded(t *testing.T, key, value string) syncer.Update {
	t.Helper()
	id := datastore.IDOf(key)
	v, err := syncer.FailClosedDecoder(id, []byte(value), 7)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	return syncer.Update{ID: id, Value: v, Revision: 7}
}

// TestInvalidPolicyFailsClosed: a policy that fails validation on read (here a deny rule with a
// bad CIDR) but whose selector parses is not treated as absent (its deny rule would vanish,
// widening what the endpoint accepts): the endpoints it selects get a policy in its place that
// drops everything reaching it. Made valid again, it is enforced as written; with a selector
// that does not parse either, the drop stays at the endpoints its last enforced version
// selected, and only there.
func TestInvalidPolicyFailsClosed(t *testing.T) {
	key := resKey("globalnetworkpolicies", "", "deny-bad")
	bad := `{"kind":"GlobalNetworkPolicy","apiVersion":"projectcalico.org/v3","metadata":{"name":"deny-bad"},
	  "spec":{"selector":"role == 'web'","types":["Ingress"],
	  "ingress":[{"action":"Deny","source":{"nets":["10.1.0.0/99"]}},{"action":"Allow"}]}}`
	g, m := newTestGraph("h1"), newModel()
	snapshot(g, wep("ns1", "h1", "a", map[string]string{"role": "web"}, []string{"10.65.0.1/32"}),
		wep("ns2", "h1", "b", map[string]string{"role": "db"}, []string{"10.65.0.2/32"}), decoded(t, key, bad))
	flushInto(t, g, m)
	a, b := wepID("ns1", "a"), wepID("ns2", "b")
	if got := ingressPolicies(m, a); len(got) != 1 || got[0] != "default:deny-bad" {
		t.Fatalf("ingress policies of the selected endpoint = %v, want the invalid policy in place", got)
	}
	if got := ingressPolicies(m, b); len(got) != 0 {
		t.Fatalf("an endpoint the policy does not select got it: %v", got)
	}
	p := m.Policies[gnpID("deny-bad")]
	if p == nil || len(p.InboundRules) != 1 || p.InboundRules[0].Action != RuleDeny ||
		!strings.Contains(p.InboundRules[0].Invalid, "failed validation") || len(p.OutboundRules) != 1 {
		t.Fatalf("the invalid policy is not a drop in both directions: %+v", p)
	}

	good := strings.Replace(bad, "10.1.0.0/99", "10.1.0.0/16", 1)
	feed(g, decoded(t, key, good))
	flushInto(t, g, m)
	if p := m.Policies[gnpID("deny-bad")]; p == nil || len(p.InboundRules) != 2 || p.InboundRules[0].Invalid != "" {
		t.Fatalf("the policy made valid is not enforced as written: %+v", p)
	}

	unparsable := strings.Replace(bad, "role == 'web'", "role == ", 1)
	feed(g, decoded(t, key, unparsable))
	flushInto(t, g, m)
	if got := ingressPolicies(m, a); len(got) != 1 || got[0] != "default:deny-bad" {
		t.Fatalf("policy with an unparsable selector: ingress policies of %v = %v, want the drop in place", a, got)
	}
	if got := ingressPolicies(m, b); len(got) != 0 {
		t.Fatalf("policy with an unparsable selector reached an endpoint its enforced version did not select: %v", got)
	}
	if p := m.Policies[gnpID("deny-bad")]; p == nil || len(p.InboundRules) != 1 || p.InboundRules[0].Invalid == "" {
		t.Fatalf("the policy with an unparsable selector is not a drop: %+v", p)
	}
}

// TestInvalidNetworkPolicyUnparsableSelector: a NetworkPolicy that was never enforced and whose
// selector does not parse selects no endpoint (one bad object does not block its whole
// namespace); once a valid version is enforced, a later unparsable one keeps that scope.
func TestInvalidNetworkPolicyUnparsableSelector(t *testing.T) {
	key := resKey("networkpolicies", "ns1", "np-bad")
	bad := `{"kind":"NetworkPolicy","apiVersion":"projectcalico.org/v3","metadata":{"name":"np-bad","namespace":"ns1"},
	  "spec":{"selector":"role == ","types":["Egress"],"egress":[{"action":"Allow"}]}}`
	g, m := newTestGraph("h1"), newModel()
	snapshot(g, wep("ns1", "h1", "a", nil, []string{"10.65.0.1/32"}),
		wep("ns2", "h1", "b", nil, []string{"10.65.0.2/32"}), decoded(t, key, bad))
	flushInto(t, g, m)
	for _, id := range []WorkloadEndpointID{wepID("ns1", "a"), wepID("ns2", "b")} {
		if w := m.WEPs[id]; w == nil || len(w.Tiers) != 0 {
			t.Fatalf("a never-enforced policy with an unparsable selector reached %v: %+v", id, w)
		}
	}
	feed(g, decoded(t, key, strings.Replace(bad, "role == ", "all()", 1)))
	flushInto(t, g, m)
	feed(g, decoded(t, key, bad))
	flushInto(t, g, m)
	if w := m.WEPs[wepID("ns1", "a")]; w == nil || len(w.Tiers) != 1 || len(w.Tiers[0].IngressPolicies) != 1 ||
		len(w.Tiers[0].EgressPolicies) != 1 {
		t.Fatalf("endpoint the enforced version selected: %+v, want the drop in both directions", w)
	}
	if w := m.WEPs[wepID("ns2", "b")]; w == nil || len(w.Tiers) != 0 {
		t.Fatalf("endpoint of another namespace got the policy: %+v", w)
	}
}
