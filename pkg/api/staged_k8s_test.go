package api

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The Calico policy a staged Kubernetes network policy becomes, as Project Calico's converter
// makes it: its rule list (one rule per protocol, sorted, and peer; ports merged into ranges;
// TCP when a port names no protocol) sets the rule indexes flow logs report.
func TestStagedKubernetesPolicyView(t *testing.T) {
	var p StagedKubernetesNetworkPolicy
	err := json.Unmarshal([]byte(`{"metadata": {"name": "db", "namespace": "prod"}, "spec": {
		"podSelector": {"matchLabels": {"app": "db"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]},
		"policyTypes": ["Egress", "Ingress"],
		"ingress": [
			{"from": [{"podSelector": {"matchLabels": {"app": "web"}}}, {"namespaceSelector": {}}],
			 "ports": [{"port": 5433}, {"protocol": "UDP", "port": 53}, {"port": 5432}, {"port": "metrics"}, {"port": 5434}]},
			{"from": [{"ipBlock": {"cidr": "10.65.1.7/16", "except": ["10.65.9.0/24"]}}], "ports": [{"protocol": "UDP"}, {"protocol": "UDP", "port": 9}]},
			{}
		],
		"egress": [{"to": [{"namespaceSelector": {"matchLabels": {"team": "a"}}}]}]}}`), &p)
	if err != nil {
		t.Fatal(err)
	}
	view, err := p.View()
	if err != nil {
		t.Fatal(err)
	}
	tcp, udp := ProtocolFromString("TCP"), ProtocolFromString("UDP")
	order := 1000.0
	web := EntityRule{Selector: "projectcalico.org/orchestrator == 'k8s' && app == 'web'"}
	anyNS := EntityRule{Selector: "projectcalico.org/orchestrator == 'k8s'", NamespaceSelector: "all()"}
	want := PolicySpecView{Namespace: "prod", Tier: "default", Order: &order,
		Selector: "projectcalico.org/orchestrator == 'k8s' && app == 'db' && tier in { 'a', 'b' }",
		Types:    []string{"Ingress", "Egress"},
		Ingress: []Rule{
			{Action: "Allow", Protocol: &tcp, Source: web, Destination: EntityRule{Ports: []Port{NamedPort("metrics"), {MinPort: 5432, MaxPort: 5434}}}},
			{Action: "Allow", Protocol: &tcp, Source: anyNS, Destination: EntityRule{Ports: []Port{NamedPort("metrics"), {MinPort: 5432, MaxPort: 5434}}}},
			{Action: "Allow", Protocol: &udp, Source: web, Destination: EntityRule{Ports: []Port{SinglePort(53)}}},
			{Action: "Allow", Protocol: &udp, Source: anyNS, Destination: EntityRule{Ports: []Port{SinglePort(53)}}},
			{Action: "Allow", Protocol: &udp, Source: EntityRule{Nets: []string{"10.65.0.0/16"}, NotNets: []string{"10.65.9.0/24"}}},
			{Action: "Allow"},
		},
		Egress: []Rule{{Action: "Allow", Destination: EntityRule{Selector: "projectcalico.org/orchestrator == 'k8s'", NamespaceSelector: "team == 'a'"}}},
	}
	if d := cmp.Diff(want, view); d != "" {
		t.Errorf("view (-want +got):\n%s", d)
	}
}

// No policyTypes: ingress only, even with egress rules; a port that does not parse fails the
// conversion (Project Calico's syncer then gives felix no policy).
func TestStagedKubernetesPolicyViewEdges(t *testing.T) {
	p := StagedKubernetesNetworkPolicy{Spec: StagedKubernetesNetworkPolicySpec{Egress: []NetworkPolicyEgressRule{{}}}}
	view, err := p.View()
	if err != nil || !cmp.Equal(view.Types, []string{"Ingress"}) || view.Selector != "projectcalico.org/orchestrator == 'k8s'" {
		t.Errorf("types %v, selector %q, err %v", view.Types, view.Selector, err)
	}
	bad := &IntOrString{IntVal: 70000}
	p.Spec.Ingress = []NetworkPolicyIngressRule{{Ports: []NetworkPolicyPort{{Port: bad}}}}
	if _, err := p.View(); err == nil || !strings.Contains(err.Error(), "spec.ingress[0].ports[0]") {
		t.Errorf("bad port: %v", err)
	}
}

// TestStagedKubernetesPolicyLabelInjection: a label key or value of a Kubernetes selector that
// Kubernetes would refuse is refused, never written into the Calico selector: a value such as
// "x' || all() || role == 'y" would otherwise turn the converted selector into all() (every
// endpoint, not only Kubernetes pods).
func TestStagedKubernetesPolicyLabelInjection(t *testing.T) {
	inject := "x' || all() || role == 'y"
	for name, sel := range map[string]LabelSelector{
		"matchLabels value": {MatchLabels: map[string]string{"role": inject}},
		"matchLabels key":   {MatchLabels: map[string]string{"a == 'b' || all() || c": "d"}},
		"In value":          {MatchExpressions: []LabelSelectorRequirement{{Key: "role", Operator: "In", Values: []string{"a", inject}}}},
		"Exists key":        {MatchExpressions: []LabelSelectorRequirement{{Key: "a) || all() || has(b", Operator: "Exists"}}},
	} {
		p := StagedKubernetesNetworkPolicy{Spec: StagedKubernetesNetworkPolicySpec{PodSelector: sel}}
		if view, err := p.View(); err == nil {
			t.Errorf("podSelector %s: converted to %q", name, view.Selector)
		}
		p = StagedKubernetesNetworkPolicy{Spec: StagedKubernetesNetworkPolicySpec{Ingress: []NetworkPolicyIngressRule{
			{From: []NetworkPolicyPeer{{NamespaceSelector: &sel}}}}}}
		if view, err := p.View(); err == nil {
			t.Errorf("namespaceSelector %s: converted to %q", name, view.Ingress[0].Source.NamespaceSelector)
		}
	}
	ok := StagedKubernetesNetworkPolicy{Spec: StagedKubernetesNetworkPolicySpec{PodSelector: LabelSelector{
		MatchLabels:      map[string]string{"app.kubernetes.io/name": "web-1", "empty": ""},
		MatchExpressions: []LabelSelectorRequirement{{Key: "tier", Operator: "NotIn", Values: []string{"db", "cache"}}}}}}
	if _, err := ok.View(); err != nil {
		t.Errorf("valid labels refused: %v", err)
	}
}
