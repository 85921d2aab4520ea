package calc

import (
	"strings"
	"testing"

	"github.com/calico-host/calico-host/pkg/syncer"
)

// decoded runs raw etcd bytes through felix's decoder, as the syncer does.
func decoded(t *testing.T, key, value string) syncer.Update {
	t.Helper()
	v, err := syncer.FailClosedDecoder(key, []byte(value), 7)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	return syncer.Update{Key: key, Value: v, Revision: 7}
}

// TestInvalidPolicyFailsClosed: a policy that fails validation on read (here a deny rule with a
// bad CIDR) but whose selector parses is not treated as absent (its deny rule would vanish,
// widening what the endpoint accepts): the endpoints it selects get a policy in its place that
// drops everything reaching it. Made valid again, it is enforced as written; with a selector
// that does not parse either, it is absent.
func TestInvalidPolicyFailsClosed(t *testing.T) {
	key := resKey("globalnetworkpolicies", "", "deny-bad")
	bad := `{"kind":"GlobalNetworkPolicy","apiVersion":"projectcalico.org/v3","metadata":{"name":"deny-bad"},
	  "spec":{"selector":"role == 'web'","types":["Ingress"],
	  "ingress":[{"action":"Deny","source":{"nets":["10.1.0.0/99"]}},{"action":"Allow"}]}}`
	g, m := newTestGraph("h1"), newModel()
	snapshot(g, wep("ns1", "h1", "a", map[string]string{"role": "web"}, []string{"10.65.0.1/32"}), decoded(t, key, bad))
	flushInto(t, g, m)
	a := wepID("ns1", "a")
	if got := ingressPolicies(m, a); len(got) != 1 || got[0] != "default:deny-bad" {
		t.Fatalf("ingress policies of the selected endpoint = %v, want the invalid policy in place", got)
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
	if got := ingressPolicies(m, a); len(got) != 0 {
		t.Fatalf("a policy whose selector does not parse still applies: %v", got)
	}
}
