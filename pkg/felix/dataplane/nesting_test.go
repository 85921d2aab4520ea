package dataplane

import (
	"context"
	"strings"
	"testing"

	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/selector"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// throughPipeline stores body under key among fuzzBase, and runs it through felix's decoder,
// calc and the dataplane on the nft fake; it fails the test if the apply fails or quarantines.
func throughPipeline(t *testing.T, key string, body []byte) *harness {
	t.Helper()
	id := datastore.IDOf(key)
	v, err := syncer.FailClosedDecoder(id, body, 2)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	g := calc.New("h1", testLogger(t))
	g.OnMessage(syncer.Message{Status: syncer.InSync, Snapshot: true, Updates: append(fuzzBase(), syncer.Update{ID: id, Value: v, Revision: 2})})
	h := newHarness(t, Config{IPv6Support: true})
	h.up("calilocal000000")
	for _, u := range g.Flush() {
		h.dp.model.apply(u)
	}
	if _, err := h.dp.apply(context.Background()); err != nil {
		t.Fatalf("apply: %v", err)
	}
	if n := h.dp.Quarantined(); n != 0 {
		t.Fatalf("%d objects quarantined: %v", n, h.dp.quar.summary())
	}
	return h
}

// nested wraps inner in depth parentheses, alternating negations and conjunctions.
func nested(depth int, inner string) string {
	s := inner
	for i := range depth {
		switch i % 3 {
		case 0:
			s = "(" + s + ")"
		case 1:
			s = "(" + s + " && has(role))"
		default:
			s = "(" + s + " || role == 'x')"
		}
	}
	return s
}

// TestSelectorsAtNestingLimit: a policy whose selector and rule selectors sit at the selector
// parser's nesting limit is valid, selects the workload and is programmed.
func TestSelectorsAtNestingLimit(t *testing.T) {
	deep := strings.Repeat("(", selector.MaxNesting) + "role == 'web'" + strings.Repeat(")", selector.MaxNesting)
	if _, err := selector.Parse(deep); err != nil {
		t.Fatalf("setup: %v", err)
	}
	mixed := nested(selector.MaxNesting-1, "role == 'db'")
	if _, err := selector.Parse(mixed); err != nil {
		t.Fatalf("setup: the mixed selector does not parse: %v", err)
	}
	body := `{"kind":"GlobalNetworkPolicy","apiVersion":"projectcalico.org/v3","metadata":{"name":"fz"},"spec":{"selector":"` + deep + `",
	  "ingress":[{"action":"Deny","source":{"selector":"` + mixed + `"}},{"action":"Allow","source":{"notSelector":"` + mixed + `"}}]}}`
	h := throughPipeline(t, fuzzKeys[0], []byte(body))
	dump := h.fake.Dump()
	if !strings.Contains(dump, "gnp/fz") {
		t.Fatalf("the policy at the nesting limit is not programmed:\n%s", dump)
	}
	if !strings.Contains(dump, "10.65.1.1") {
		t.Fatalf("the rule selector at the nesting limit does not select the remote workload:\n%s", dump)
	}
}
