package dataplane

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/sys/unix"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/nft"
)

// refuseRulesWith makes the fake refuse every rule whose text contains marker, as the kernel
// refuses a rule it cannot take.
func refuseRulesWith(h *harness, marker string) {
	h.fake.Refuse(func(op *nft.Op) error {
		if op.Kind == nft.OpAddRule && strings.Contains(op.Rule.String(), marker) {
			return unix.ERANGE
		}
		return nil
	})
}

func quarantined(h *harness, kind string) float64 {
	return testutil.ToFloat64(h.dp.metrics.quarantined.WithLabelValues(kind))
}

// TestQuarantineRefusedPolicy: a policy whose rule the backend refuses is quarantined: its
// chain drops, every other object is programmed (a workload added later included), the metric
// counts it; when the policy changes to something programmable it is released.
func TestQuarantineRefusedPolicy(t *testing.T) {
	h := newHarness(t, Config{})
	refuseRulesWith(h, "6666")
	bad, good := gnpID("bad"), gnpID("good")
	h.up(ifA, ifB, "cali0000000000c")
	h.send(egressAll(),
		policy(bad, []calc.Rule{{Action: calc.RuleDeny, Protocol: 6, DstPorts: ports(6666)}, allow()}, nil),
		policy(good, []calc.Rule{allow()}, nil),
		kwep("a", ifA, ipA, tier("default", ids(good), nil)),
		kwep("b", ifB, ipB, tier("default", ids(bad), nil)))
	dump := h.fake.Dump()
	if !strings.Contains(dump, "Quarantined: GlobalNetworkPolicy bad") {
		t.Fatalf("the refused policy's chain is not a quarantine drop:\n%s", dump)
	}
	if strings.Contains(dump, "6666") {
		t.Fatalf("the refused rule is in the tables:\n%s", dump)
	}
	if got := quarantined(h, "policy"); got != 1 {
		t.Fatalf("quarantined policies = %v, want 1", got)
	}
	if h.dp.Quarantined() != 1 {
		t.Fatalf("Quarantined() = %d", h.dp.Quarantined())
	}
	h.send(kwep("c", "cali0000000000c", "10.65.0.3", tier("default", ids(good), nil)))
	if dump := h.fake.Dump(); !strings.Contains(dump, `"cali0000000000c"`) {
		t.Fatalf("a workload added after the quarantine is not programmed:\n%s", dump)
	}
	// The policy changes: it is tried again, and programmed.
	h.send(policy(bad, []calc.Rule{{Action: calc.RuleDeny, Protocol: 6, DstPorts: ports(7777)}, allow()}, nil))
	dump = h.fake.Dump()
	if strings.Contains(dump, "Quarantined") || !strings.Contains(dump, "7777") {
		t.Fatalf("the changed policy was not programmed:\n%s", dump)
	}
	if got := quarantined(h, "policy"); got != 0 {
		t.Fatalf("quarantined policies = %v after the fix, want 0", got)
	}
}

// TestQuarantineRefusedSet: a set the backend refuses is emptied and the policies looking it
// up drop (a deny rule with an empty set would let everything through).
func TestQuarantineRefusedSet(t *testing.T) {
	h := newHarness(t, Config{})
	h.fake.Refuse(func(op *nft.Op) error {
		for _, e := range op.Elements {
			if lo, _ := e.Bounds(); op.Type.FormatKey(lo) == "10.66.6.6" {
				return unix.ENOMEM
			}
		}
		return nil
	})
	deny := gnpID("deny-bad-set")
	h.up(ifA, ifB)
	h.send(egressAll(), ipset("s:bad", "10.66.6.6/32", "10.66.0.1/32"),
		policy(deny, []calc.Rule{{Action: calc.RuleDeny, SrcIPSetIDs: []string{"s:bad"}}, allow()}, nil),
		kwep("a", ifA, ipA),
		kwep("b", ifB, ipB, tier("default", ids(deny), nil)))
	dump := h.fake.Dump()
	if strings.Contains(dump, "10.66.0.1") {
		t.Fatalf("the refused set kept elements:\n%s", dump)
	}
	if !strings.Contains(dump, "Quarantined: GlobalNetworkPolicy deny-bad-set") {
		t.Fatalf("the policy looking up the refused set does not drop:\n%s", dump)
	}
	if quarantined(h, "set") != 1 || quarantined(h, "policy") != 1 {
		t.Fatalf("quarantined: set %v policy %v, want 1 and 1", quarantined(h, "set"), quarantined(h, "policy"))
	}
	h.send(ipset("s:bad", "10.66.0.1/32"))
	if dump := h.fake.Dump(); strings.Contains(dump, "Quarantined") || !strings.Contains(dump, "10.66.0.1") {
		t.Fatalf("the changed set was not programmed:\n%s", dump)
	}
}

// TestQuarantinePeriodicRetry: a quarantined policy that did not change is tried again when
// its delay has passed: still refused, it stays quarantined (with a longer delay); accepted, it
// is released.
func TestQuarantinePeriodicRetry(t *testing.T) {
	h := newHarness(t, Config{})
	refuseRulesWith(h, "6666")
	bad := gnpID("bad")
	h.up(ifB)
	h.send(egressAll(),
		policy(bad, []calc.Rule{{Action: calc.RuleDeny, Protocol: 6, DstPorts: ports(6666)}, allow()}, nil),
		kwep("b", ifB, ipB, tier("default", ids(bad), nil)))
	expire := func() {
		for _, e := range h.dp.quar.entries {
			e.retryAt = time.Time{}
		}
		if !h.dp.quar.due(time.Now()) {
			t.Fatal("no retry due after the delay passed")
		}
	}
	expire()
	h.send()
	if quarantined(h, "policy") != 1 || !strings.Contains(h.fake.Dump(), "Quarantined") {
		t.Fatal("a policy still refused on retry was released")
	}
	if h.dp.quar.due(time.Now()) {
		t.Fatal("a retry is due at once after a refused retry")
	}
	h.fake.Refuse(nil)
	expire()
	h.send()
	if dump := h.fake.Dump(); quarantined(h, "policy") != 0 || strings.Contains(dump, "Quarantined") || !strings.Contains(dump, "6666") {
		t.Fatalf("the policy was not programmed on retry once the kernel accepts it:\n%s", dump)
	}
}
