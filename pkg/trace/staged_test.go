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

// A StagedKubernetesNetworkPolicy is evaluated as Project Calico converts it (tier default,
// order 1000, Kubernetes pods only): its allow from c decides c -> b in the pending verdict,
// ahead of the enforced "web"; a -> b, which no rule of it allows, falls through to "web".
func TestStagedKubernetesPolicy(t *testing.T) {
	ups := twoWorkloads(t, object{plural: "stagedkubernetesnetworkpolicies", ns: "prod", name: "b-from-c",
		spec: `{"podSelector":{"matchLabels":{"app":"b"}},"policyTypes":["Ingress"],
		"ingress":[{"from":[{"podSelector":{"matchLabels":{"app":"c"}}}],"ports":[{"port":80}]}]}`})
	tr := run(t, ups, "c", "b", flowlog.ProtoTCP, 80)
	if in := last(t, tr.Enforced, "h1", ruleid.Ingress); in.Name != "web" {
		t.Errorf("enforced ingress decided by %v, want web", in)
	}
	hits := hopOn(t, tr.Pending, "h1").IngressHits
	want := flowlog.PolicyHit{Kind: flowlog.KindStagedKubernetesNetworkPolicy, Namespace: "prod", Name: "b-from-c",
		Tier: "default", Action: flowlog.Allow}
	if len(hits) != 1 || hits[0] != want {
		t.Errorf("pending hits %+v, want %+v", hits, want)
	}
	tr = run(t, ups, "a", "b", flowlog.ProtoTCP, 80)
	if !tr.Pending.Allowed {
		t.Fatal("pending a -> b denied")
	}
	if in := last(t, tr.Pending, "h1", ruleid.Ingress); in.Name != "web" {
		t.Errorf("pending a -> b decided by %v, want web", in)
	}
}

func hopOn(t *testing.T, v Verdict, host string) Hop {
	t.Helper()
	for _, h := range v.Hops {
		if h.Host == host {
			return h
		}
	}
	t.Fatalf("no hop on %s", host)
	return Hop{}
}
