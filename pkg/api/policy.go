package api

// Tier default actions.
const (
	TierDefault = "default"
)

// Tier groups policies; tiers are evaluated by ascending order.
type Tier struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       TierSpec   `json:"spec"`
	Status     TierStatus `json:"status"`
}

// TierSpec is the specification of a Tier. DefaultAction is a pointer in Project Calico; an
// explicit empty value is invalid there, so a plain string round-trips every valid tier.
type TierSpec struct {
	Order         *float64 `json:"order,omitempty"`
	DefaultAction string   `json:"defaultAction,omitempty"`
}

// TierStatus is the status Project Calico's controllers report on a tier.
type TierStatus struct {
	Conditions []Condition `json:"conditions,omitempty"`
}

// GlobalNetworkPolicy is a policy that applies across namespaces and to host endpoints.
type GlobalNetworkPolicy struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       GlobalNetworkPolicySpec `json:"spec"`
}

// GlobalNetworkPolicySpec is the specification of a GlobalNetworkPolicy.
type GlobalNetworkPolicySpec struct {
	Tier                   string   `json:"tier,omitempty"`
	Order                  *float64 `json:"order,omitempty"`
	Ingress                []Rule   `json:"ingress,omitempty"`
	Egress                 []Rule   `json:"egress,omitempty"`
	Selector               string   `json:"selector,omitempty"`
	Types                  []string `json:"types,omitempty"`
	DoNotTrack             bool     `json:"doNotTrack,omitempty"`
	PreDNAT                bool     `json:"preDNAT,omitempty"`
	ApplyOnForward         bool     `json:"applyOnForward,omitempty"`
	ServiceAccountSelector string   `json:"serviceAccountSelector,omitempty"`
	NamespaceSelector      string   `json:"namespaceSelector,omitempty"`
	PerformanceHints       []string `json:"performanceHints,omitempty"`
}

// NetworkPolicy is a namespaced policy; its selectors only see endpoints of its namespace.
type NetworkPolicy struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       NetworkPolicySpec `json:"spec"`
}

// NetworkPolicySpec is the specification of a NetworkPolicy.
type NetworkPolicySpec struct {
	Tier                   string   `json:"tier,omitempty"`
	Order                  *float64 `json:"order,omitempty"`
	Ingress                []Rule   `json:"ingress,omitempty"`
	Egress                 []Rule   `json:"egress,omitempty"`
	Selector               string   `json:"selector,omitempty"`
	Types                  []string `json:"types,omitempty"`
	ServiceAccountSelector string   `json:"serviceAccountSelector,omitempty"`
	PerformanceHints       []string `json:"performanceHints,omitempty"`
}

// Profile holds rules and labels applied to the endpoints that name it.
type Profile struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       ProfileSpec `json:"spec"`
}

// ProfileSpec is the specification of a Profile.
type ProfileSpec struct {
	Ingress       []Rule            `json:"ingress,omitempty"`
	Egress        []Rule            `json:"egress,omitempty"`
	LabelsToApply map[string]string `json:"labelsToApply,omitempty"`
}

// GlobalNetworkSet is a labelled set of CIDRs that rule selectors can match.
type GlobalNetworkSet struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       NetworkSetSpec `json:"spec"`
}

// NetworkSet is a namespaced labelled set of CIDRs.
type NetworkSet struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       NetworkSetSpec `json:"spec"`
}

// NetworkSetSpec lists the nets of a (Global)NetworkSet.
type NetworkSetSpec struct {
	Nets []string `json:"nets,omitempty"`
}

// PolicySpecView is the common view of GlobalNetworkPolicy and NetworkPolicy specs.
type PolicySpecView struct {
	Namespace      string // "" for GlobalNetworkPolicy
	Tier           string
	Order          *float64
	Selector       string
	NamespaceSel   string
	ServiceAcctSel string
	Types          []string
	Ingress        []Rule
	Egress         []Rule
	DoNotTrack     bool
	PreDNAT        bool
	ApplyOnForward bool
}

// View returns the common policy view.
func (p *GlobalNetworkPolicy) View() PolicySpecView { return p.Spec.view() }

func (s *GlobalNetworkPolicySpec) view() PolicySpecView {
	return PolicySpecView{Tier: s.Tier, Order: s.Order, Selector: s.Selector, NamespaceSel: s.NamespaceSelector,
		ServiceAcctSel: s.ServiceAccountSelector, Types: s.Types, Ingress: s.Ingress, Egress: s.Egress,
		DoNotTrack: s.DoNotTrack, PreDNAT: s.PreDNAT, ApplyOnForward: s.ApplyOnForward}
}

// View returns the common policy view.
func (p *NetworkPolicy) View() PolicySpecView { return p.Spec.view(p.Namespace) }

func (s *NetworkPolicySpec) view(namespace string) PolicySpecView {
	return PolicySpecView{Namespace: namespace, Tier: s.Tier, Order: s.Order, Selector: s.Selector,
		ServiceAcctSel: s.ServiceAccountSelector, Types: s.Types, Ingress: s.Ingress, Egress: s.Egress}
}
