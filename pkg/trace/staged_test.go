package trace

import (
	"testing"

	"github.com/calico-host/calico-host/pkg/flowlog"
	"github.com/calico-host/calico-host/pkg/flowlog/ruleid"
)

// A staged deny over allowed traffic: pending deny by the staged policy, enforced still allow.
func TestStagedDenyOverAllowedFlow(t *testing.T) {
	ups := twoWorkloads(t, gnp("stagedglobalnetworkpolicies", "lockdown", `{"order":1,"selector":"app == 'b'",
		"types":["Ingress"],"ingress":[{"action":"Deny","protocol":"TCP"}]}`))
	tr := run(t, ups, "a", "b", flowlog.ProtoTCP, 80)
	if !tr.Enforced.Allowed {
		t.Fatalf("enforced: %+v", tr.Enforced)
	}
	if in := last(t, tr.Enforced, "h1", ruleid.Ingress); in.Name != "web" || in.Pending() {
		t.Errorf("enforced ingress decided by %v, want web", in)
	}
	if tr.Pending.Allowed {
		t.Fatal("pending: allowed, want denied by the staged policy")
	}
	in := last(t, tr.Pending, "h1", ruleid.Ingress)
	if in.Kind != flowlog.KindStagedGlobalNetworkPolicy || in.Name != "lockdown" || in.Action != flowlog.Deny || !in.Pending() {
		t.Errorf("pending ingress decided by %v, want sgnp lockdown deny", in)
	}
	hits := tr.Pending.Hops[0].IngressHits
	if len(hits) != 1 || hits[0].Kind != flowlog.KindStagedGlobalNetworkPolicy || hits[0].RuleIndex != 0 {
		t.Errorf("pending hits %+v", hits)
	}
}

// A staged policy whose stagedAction is Delete never reaches felix: pending equals enforced.
func TestStagedActionDelete(t *testing.T) {
	ups := twoWorkloads(t, gnp("stagedglobalnetworkpolicies", "lockdown", `{"stagedAction":"Delete","order":1,
		"selector":"app == 'b'","ingress":[{"action":"Deny"}]}`))
	tr := run(t, ups, "a", "b", flowlog.ProtoTCP, 80)
	if !tr.Enforced.Allowed || !tr.Pending.Allowed {
		t.Fatalf("enforced %v, pending %v: want both allowed", tr.Enforced.Allowed, tr.Pending.Allowed)
	}
	if in := last(t, tr.Pending, "h1", ruleid.Ingress); in.Name != "web" {
		t.Errorf("pending ingress decided by %v, want web", in)
	}
}

// A tier whose policies are all staged: skipped by the enforced verdict, its end of tier
// applies to the pending one.
func TestTierOfStagedPoliciesOnly(t *testing.T) {
	ups := twoWorkloads(t,
		object{plural: "tiers", name: "security", spec: `{"order":10}`},
		gnp("stagedglobalnetworkpolicies", "security.ssh-only", `{"tier":"security","selector":"app == 'b'",
			"types":["Ingress"],"ingress":[{"action":"Allow","protocol":"TCP","destination":{"ports":[22]}}]}`))
	tr := run(t, ups, "a", "b", flowlog.ProtoTCP, 80)
	if !tr.Enforced.Allowed {
		t.Fatalf("enforced: %+v", tr.Enforced)
	}
	for _, r := range tr.Enforced.Hops[0].Ingress {
		if r.Tier == "security" {
			t.Errorf("enforced path meets tier security: %v", r)
		}
	}
	if tr.Pending.Allowed {
		t.Fatal("pending: allowed, want the end of tier security")
	}
	in := last(t, tr.Pending, "h1", ruleid.Ingress)
	if in.Kind != flowlog.KindEndOfTier || in.Tier != "security" {
		t.Errorf("pending decided by %v, want the end of tier security", in)
	}
	hits := tr.Pending.Hops[0].IngressHits
	if h := hits[len(hits)-1]; h.Trigger == nil || h.Trigger.Kind != flowlog.KindStagedGlobalNetworkPolicy || h.Trigger.Name != "security.ssh-only" {
		t.Errorf("end of tier hit %+v, want triggered by the staged policy", h)
	}
	if tr = run(t, ups, "a", "b", flowlog.ProtoTCP, 22); tr.Pending.Allowed != true {
		t.Errorf("pending a -> b tcp/22 denied")
	}
}
