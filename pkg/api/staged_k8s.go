package api

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
)

// KubernetesPolicyOrder is the order Project Calico gives every Kubernetes network policy it
// converts (tier default).
const KubernetesPolicyOrder = 1000.0

// View returns the Calico policy Project Calico's felix evaluates for a staged Kubernetes
// network policy (libcalico-go's staged Kubernetes policy update processor and its Kubernetes
// policy converter): tier default, order 1000, the pod selector prefixed with
// "projectcalico.org/orchestrator == 'k8s'" (it selects Kubernetes pods only), one Allow rule
// per protocol and peer of each Kubernetes rule with that protocol's ports merged into ranges,
// types from policyTypes (Ingress when none). A spec the converter fails on (a port or CIDR
// that does not parse, an unknown selector operator) is an error: Project Calico's syncer then
// sends felix nothing for the policy. So is a label key or value Kubernetes' API refuses (it
// would be written into the selector as it is and could change its meaning).
func (p *StagedKubernetesNetworkPolicy) View() (PolicySpecView, error) {
	var e errs
	view := k8sView(&e, p)
	if len(e.list) > 0 {
		return PolicySpecView{}, &ValidationError{Kind: "StagedKubernetesNetworkPolicy", Name: p.Name, Errors: e.list}
	}
	return view, nil
}

// k8sView converts the policy (View), adding to e what does not convert. Validation checks the
// result as the Calico policy it becomes.
func k8sView(e *errs, p *StagedKubernetesNetworkPolicy) PolicySpecView {
	s := &p.Spec
	order := KubernetesPolicyOrder
	view := PolicySpecView{Namespace: p.Namespace, Tier: TierDefault, Order: &order,
		Selector: k8sSelector(e, "spec.podSelector", &s.PodSelector, true), Types: k8sPolicyTypes(s.PolicyTypes)}
	for i, r := range s.Ingress {
		view.Ingress = append(view.Ingress, k8sConvertRule(e, fmt.Sprintf("spec.ingress[%d]", i), r.From, r.Ports, true)...)
	}
	for i, r := range s.Egress {
		view.Egress = append(view.Egress, k8sConvertRule(e, fmt.Sprintf("spec.egress[%d]", i), r.To, r.Ports, false)...)
	}
	return view
}

// k8sPolicyTypes: Ingress if listed or nothing is, Egress if listed.
func k8sPolicyTypes(types []string) []string {
	var out []string
	for _, t := range []string{PolicyTypeIngress, PolicyTypeEgress} {
		if slices.Contains(types, t) {
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		out = []string{PolicyTypeIngress}
	}
	return out
}

// k8sConvertRule is Project Calico's conversion of one Kubernetes rule: the ports grouped by
// protocol (sorted by name; a port without number allows all of its protocol's, no ports at
// all any protocol), then one rule per protocol and peer.
func k8sConvertRule(e *errs, field string, peers []NetworkPolicyPeer, ports []NetworkPolicyPort, ingress bool) []Rule {
	byProto := map[string][]Port{}
	protos := map[string]Protocol{}
	if len(ports) == 0 {
		byProto[""] = nil
	}
	for j := range ports {
		m := k8sPort(e, fmt.Sprintf("%s.ports[%d]", field, j), &ports[j])
		name := m.protocol.String()
		protos[name] = m.protocol
		if have, seen := byProto[name]; m.ports == nil || !seen || len(have) > 0 {
			byProto[name] = appendOrAll(have, m.ports)
		}
	}
	names := make([]string, 0, len(byProto))
	for n := range byProto {
		names = append(names, n)
	}
	sort.Strings(names)
	peerList := []*NetworkPolicyPeer{nil}
	if len(peers) > 0 {
		peerList = peerList[:0]
		for i := range peers {
			peerList = append(peerList, &peers[i])
		}
	}
	var out []Rule
	for _, n := range names {
		var match *k8sPortMatch
		if n != "" {
			match = &k8sPortMatch{protocol: protos[n], ports: simplifyPorts(byProto[n])}
		}
		for _, peer := range peerList {
			out = append(out, k8sRule(k8sConvertPeer(e, field, peer), match, ingress))
		}
	}
	return out
}

// appendOrAll adds ports to a protocol's list; no ports means all of them (nil), which stays.
func appendOrAll(have, ports []Port) []Port {
	if ports == nil {
		return nil
	}
	return append(have, ports...)
}

// k8sConvertPeer is Project Calico's peer conversion: an ipBlock's CIDRs as networks (masked),
// else a pod selector (the Kubernetes-pods term even when the peer has none) and a namespace
// selector.
func k8sConvertPeer(e *errs, field string, p *NetworkPolicyPeer) EntityRule {
	var ent EntityRule
	if p == nil {
		return ent
	}
	if b := p.IPBlock; b != nil {
		for i, c := range append([]string{b.CIDR}, b.Except...) {
			pfx, err := netip.ParsePrefix(c)
			if err != nil {
				e.add(field+".ipBlock", "invalid CIDR %q: %v", c, err)
				continue
			}
			if i == 0 {
				ent.Nets = append(ent.Nets, pfx.Masked().String())
			} else {
				ent.NotNets = append(ent.NotNets, pfx.Masked().String())
			}
		}
		return ent
	}
	ent.Selector = k8sSelector(e, field+".podSelector", p.PodSelector, true)
	if p.NamespaceSelector != nil {
		ent.NamespaceSelector = k8sSelector(e, field+".namespaceSelector", p.NamespaceSelector, false)
	}
	return ent
}

// simplifyPorts merges numeric ports into the fewest ranges, sorted, after the named ports
// (Project Calico's SimplifyPorts); a list with at most one number is kept as it is.
func simplifyPorts(ports []Port) []Port {
	var nums []int
	var out []Port
	for _, p := range ports {
		if p.PortName != "" {
			out = append(out, p)
			continue
		}
		for n := int(p.MinPort); n <= int(p.MaxPort); n++ {
			nums = append(nums, n)
		}
	}
	if len(nums) <= 1 {
		return ports
	}
	sort.Ints(nums)
	for len(nums) > 0 {
		lo, hi := nums[0], nums[0]
		nums = nums[1:]
		for len(nums) > 0 && nums[0] <= hi+1 {
			hi, nums = nums[0], nums[1:]
		}
		out = append(out, Port{MinPort: uint16(lo), MaxPort: uint16(hi)})
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
		k8sLabel(e, field+".matchLabels", k, s.MatchLabels[k])
		terms = append(terms, fmt.Sprintf("%s == '%s'", k, s.MatchLabels[k]))
	}
	for i, x := range s.MatchExpressions {
		k8sLabel(e, fmt.Sprintf("%s.matchExpressions[%d]", field, i), x.Key, x.Values...)
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

// k8sLabel refuses a label key or value Kubernetes would refuse: written into the selector as it
// is, one could change its meaning (a value "x' || all() || a == 'y" selects everything).
func k8sLabel(e *errs, field, key string, values ...string) {
	if !validLabelKey(key) {
		e.add(field, "invalid label key %q", key)
	}
	for _, v := range values {
		if len(v) > 63 || !labelValue.MatchString(v) {
			e.add(field, "invalid value %q for label %q", v, key)
		}
	}
}
