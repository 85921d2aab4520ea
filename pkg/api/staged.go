package api

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Staged policy actions: what the staged policy would do to its enforced counterpart.
const (
	StagedActionSet    = "Set"
	StagedActionDelete = "Delete"
	StagedActionLearn  = "Learn"
	StagedActionIgnore = "Ignore"
)

// StagedGlobalNetworkPolicy is a GlobalNetworkPolicy proposed but not enforced: Project Calico
// stores it (key plural stagedglobalnetworkpolicies) and only reports what it would do; felix
// never enforces it, and neither does calico-host.
type StagedGlobalNetworkPolicy struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       StagedGlobalNetworkPolicySpec `json:"spec"`
}

// StagedGlobalNetworkPolicySpec is a GlobalNetworkPolicySpec with the staged action first, in
// Project Calico's field order (the embedded spec's fields follow in the JSON, flattened).
type StagedGlobalNetworkPolicySpec struct {
	StagedAction string `json:"stagedAction,omitempty"`
	GlobalNetworkPolicySpec
}

// StagedNetworkPolicy is a NetworkPolicy proposed but not enforced (plural stagednetworkpolicies).
type StagedNetworkPolicy struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       StagedNetworkPolicySpec `json:"spec"`
}

// StagedNetworkPolicySpec is a NetworkPolicySpec with the staged action first.
type StagedNetworkPolicySpec struct {
	StagedAction string `json:"stagedAction,omitempty"`
	NetworkPolicySpec
}

// View returns the common policy view of the staged policy's rules.
func (p *StagedGlobalNetworkPolicy) View() PolicySpecView { return p.Spec.view() }

// View returns the common policy view of the staged policy's rules.
func (p *StagedNetworkPolicy) View() PolicySpecView { return p.Spec.view(p.Namespace) }

// StagedKubernetesNetworkPolicy is a Kubernetes NetworkPolicy proposed but not enforced (plural
// stagedkubernetesnetworkpolicies). Its spec has the Kubernetes NetworkPolicySpec's JSON.
type StagedKubernetesNetworkPolicy struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       StagedKubernetesNetworkPolicySpec `json:"spec"`
}

// StagedKubernetesNetworkPolicySpec is Kubernetes' NetworkPolicySpec with the staged action first.
type StagedKubernetesNetworkPolicySpec struct {
	StagedAction string                     `json:"stagedAction,omitempty"`
	PodSelector  LabelSelector              `json:"podSelector"`
	Ingress      []NetworkPolicyIngressRule `json:"ingress,omitempty"`
	Egress       []NetworkPolicyEgressRule  `json:"egress,omitempty"`
	PolicyTypes  []string                   `json:"policyTypes,omitempty"`
}

// LabelSelector is Kubernetes' metav1.LabelSelector.
type LabelSelector struct {
	MatchLabels      map[string]string          `json:"matchLabels,omitempty"`
	MatchExpressions []LabelSelectorRequirement `json:"matchExpressions,omitempty"`
}

// LabelSelectorRequirement is Kubernetes' metav1.LabelSelectorRequirement.
type LabelSelectorRequirement struct {
	Key      string   `json:"key"`
	Operator string   `json:"operator"`
	Values   []string `json:"values,omitempty"`
}

// NetworkPolicyIngressRule is Kubernetes' networking/v1 NetworkPolicyIngressRule.
type NetworkPolicyIngressRule struct {
	Ports []NetworkPolicyPort `json:"ports,omitempty"`
	From  []NetworkPolicyPeer `json:"from,omitempty"`
}

// NetworkPolicyEgressRule is Kubernetes' networking/v1 NetworkPolicyEgressRule.
type NetworkPolicyEgressRule struct {
	Ports []NetworkPolicyPort `json:"ports,omitempty"`
	To    []NetworkPolicyPeer `json:"to,omitempty"`
}

// NetworkPolicyPort is Kubernetes' networking/v1 NetworkPolicyPort. Port is a number or a
// named port (Kubernetes' IntOrString), kept as the JSON it is.
type NetworkPolicyPort struct {
	Protocol *string      `json:"protocol,omitempty"`
	Port     *IntOrString `json:"port,omitempty"`
	EndPort  *int32       `json:"endPort,omitempty"`
}

// NetworkPolicyPeer is Kubernetes' networking/v1 NetworkPolicyPeer.
type NetworkPolicyPeer struct {
	PodSelector       *LabelSelector `json:"podSelector,omitempty"`
	NamespaceSelector *LabelSelector `json:"namespaceSelector,omitempty"`
	IPBlock           *IPBlock       `json:"ipBlock,omitempty"`
}

// IPBlock is Kubernetes' networking/v1 IPBlock.
type IPBlock struct {
	CIDR   string   `json:"cidr"`
	Except []string `json:"except,omitempty"`
}

// IntOrString is Kubernetes' intstr.IntOrString: a JSON number or string.
type IntOrString struct {
	IsString bool
	IntVal   int32
	StrVal   string
}

// String prints the number or the string.
func (v IntOrString) String() string {
	if v.IsString {
		return v.StrVal
	}
	return strconv.Itoa(int(v.IntVal))
}

// MarshalJSON writes a number or a string.
func (v IntOrString) MarshalJSON() ([]byte, error) {
	if v.IsString {
		return json.Marshal(v.StrVal)
	}
	return json.Marshal(v.IntVal)
}

// UnmarshalJSON reads a number or a string.
func (v *IntOrString) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		v.IsString = true
		return json.Unmarshal(b, &v.StrVal)
	}
	v.IsString = false
	return json.Unmarshal(b, &v.IntVal)
}

// String prints the selector as Kubernetes' generated String method does (what Project Calico's
// calicoctl shows in the PODSELECTOR column and in templates).
func (s *LabelSelector) String() string {
	if s == nil {
		return "nil"
	}
	var b strings.Builder
	b.WriteString("&LabelSelector{MatchLabels:map[string]string{")
	keys := make([]string, 0, len(s.MatchLabels))
	for k := range s.MatchLabels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "%v: %v,", k, s.MatchLabels[k])
	}
	b.WriteString("},MatchExpressions:[]LabelSelectorRequirement{")
	for _, x := range s.MatchExpressions {
		fmt.Fprintf(&b, "LabelSelectorRequirement{Key:%v,Operator:%v,Values:%v,},", x.Key, x.Operator, x.Values)
	}
	b.WriteString("},}")
	return b.String()
}
