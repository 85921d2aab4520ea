package api

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// Staged policies are validated as Project Calico validates them: the staged action is one of
// its four; a Delete carries nothing but the tier (and, for the Kubernetes kind, nothing at all);
// any other action's spec is validated as the policy it would become.

func validateStagedAction(e *errs, action string) {
	if action != "" {
		validateOneOf(e, "spec.stagedAction", action, StagedActionSet, StagedActionDelete, StagedActionLearn, StagedActionIgnore)
	}
}

// stagedDeleteOnlyTier reports whether a staged Delete's policy fields are all zero but the tier.
func stagedDeleteOnlyTier(v PolicySpecView, hints []string) bool {
	v.Namespace, v.Tier = "", ""
	return reflect.DeepEqual(v, PolicySpecView{}) && len(hints) == 0
}

func validateStagedPolicy(e *errs, action string, v PolicySpecView, hints []string) {
	validateStagedAction(e, action)
	if action == StagedActionDelete {
		if !stagedDeleteOnlyTier(v, hints) {
			e.add("spec", "Spec fields, except Tier, should all be zero-value if stagedAction is Delete")
		}
		return
	}
	validatePolicy(e, v)
}

func writeStagedPolicy(e *errs, name string, namespaced bool, action string, v PolicySpecView) {
	if action == StagedActionDelete {
		return
	}
	writePolicy(e, name, namespaced, v)
}

func validateStagedKubernetesPolicy(e *errs, p *StagedKubernetesNetworkPolicy) {
	s := &p.Spec
	validateStagedAction(e, s.StagedAction)
	if s.StagedAction == StagedActionDelete {
		if !reflect.DeepEqual(*s, StagedKubernetesNetworkPolicySpec{StagedAction: StagedActionDelete}) {
			e.add("spec", "Spec fields should all be zero-value if stagedAction is Delete")
		}
		return
	}
	for i, t := range s.PolicyTypes {
		validateOneOf(e, fmt.Sprintf("spec.policyTypes[%d]", i), t, PolicyTypeIngress, PolicyTypeEgress)
	}
	view := PolicySpecView{Namespace: p.Namespace, Selector: k8sSelector(e, "spec.podSelector", &s.PodSelector, true)}
	for i, r := range s.Ingress {
		view.Ingress = append(view.Ingress, k8sRules(e, fmt.Sprintf("spec.ingress[%d]", i), r.From, r.Ports, true)...)
	}
	for i, r := range s.Egress {
		view.Egress = append(view.Egress, k8sRules(e, fmt.Sprintf("spec.egress[%d]", i), r.To, r.Ports, false)...)
	}
	validatePolicy(e, view)
}

// k8sRules converts one Kubernetes rule to the Calico rules Project Calico's converter makes of
// it (one per peer and port), so that Calico's rule validation applies to them.
func k8sRules(e *errs, field string, peers []NetworkPolicyPeer, ports []NetworkPolicyPort, ingress bool) []Rule {
	peerList := make([]*NetworkPolicyPeer, 0, len(peers))
	for i := range peers {
		peerList = append(peerList, &peers[i])
	}
	if len(peerList) == 0 {
		peerList = append(peerList, nil)
	}
	var out []Rule
	for _, peer := range peerList {
		ent := k8sPeer(e, field, peer)
		if len(ports) == 0 {
			out = append(out, k8sRule(ent, nil, ingress))
		}
		for j := range ports {
			out = append(out, k8sRule(ent, k8sPort(e, fmt.Sprintf("%s.ports[%d]", field, j), &ports[j]), ingress))
		}
	}
	return out
}

type k8sPortMatch struct {
	protocol Protocol
	ports    []Port
}

func k8sRule(peer EntityRule, port *k8sPortMatch, ingress bool) Rule {
	r := Rule{Action: ActionAllow}
	dst := EntityRule{}
	if port != nil {
		r.Protocol = &port.protocol
		dst.Ports = port.ports
	}
	if ingress {
		r.Source = peer
		r.Destination = dst
	} else {
		peer.Ports = dst.Ports
		r.Destination = peer
	}
	return r
}

func k8sPort(e *errs, field string, p *NetworkPolicyPort) *k8sPortMatch {
	m := &k8sPortMatch{protocol: ProtocolFromString("TCP")}
	if p.Protocol != nil {
		m.protocol = ProtocolFromString(*p.Protocol)
	}
	if p.Port == nil {
		if p.EndPort != nil {
			e.add(field+".endPort", "endPort requires port")
		}
		return m
	}
	text := p.Port.String()
	if p.EndPort != nil {
		text = fmt.Sprintf("%s:%d", text, *p.EndPort)
	}
	port, err := ParsePort(text)
	if err != nil {
		e.add(field, "invalid port %s: %v", text, err)
		return m
	}
	m.ports = []Port{port}
	return m
}

func k8sPeer(e *errs, field string, p *NetworkPolicyPeer) EntityRule {
	var ent EntityRule
	if p == nil {
		return ent
	}
	if b := p.IPBlock; b != nil {
		ent.Nets = []string{b.CIDR}
		ent.NotNets = b.Except
		return ent
	}
	if p.PodSelector != nil || p.NamespaceSelector == nil {
		ent.Selector = k8sSelector(e, field+".podSelector", p.PodSelector, true)
	}
	if p.NamespaceSelector != nil {
		ent.NamespaceSelector = k8sSelector(e, field+".namespaceSelector", p.NamespaceSelector, false)
	}
	return ent
}

// k8sSelector writes a Kubernetes label selector in the selector language, as Project Calico's
// converter does; an operator it does not know is refused (Calico drops it, which would widen
// the selector).
func k8sSelector(e *errs, field string, s *LabelSelector, pod bool) string {
	var terms []string
	if pod {
		terms = append(terms, LabelOrchestrator+" == 'k8s'")
	}
	if s == nil {
		return strings.Join(terms, " && ")
	}
	if !pod && len(s.MatchLabels) == 0 && len(s.MatchExpressions) == 0 {
		return "all()"
	}
	keys := make([]string, 0, len(s.MatchLabels))
	for k := range s.MatchLabels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		terms = append(terms, fmt.Sprintf("%s == '%s'", k, s.MatchLabels[k]))
	}
	for i, x := range s.MatchExpressions {
		values := strings.Join(x.Values, "', '")
		switch x.Operator {
		case "In":
			terms = append(terms, fmt.Sprintf("%s in { '%s' }", x.Key, values))
		case "NotIn":
			terms = append(terms, fmt.Sprintf("%s not in { '%s' }", x.Key, values))
		case "Exists":
			terms = append(terms, fmt.Sprintf("has(%s)", x.Key))
		case "DoesNotExist":
			terms = append(terms, fmt.Sprintf("! has(%s)", x.Key))
		default:
			e.add(fmt.Sprintf("%s.matchExpressions[%d].operator", field, i), "%q is not a valid label selector operator (In, NotIn, Exists, DoesNotExist)", x.Operator)
		}
	}
	return strings.Join(terms, " && ")
}
