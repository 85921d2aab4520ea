package api

// Rule actions.
const (
	ActionAllow = "Allow"
	ActionDeny  = "Deny"
	ActionLog   = "Log"
	ActionPass  = "Pass"
)

// Policy types.
const (
	PolicyTypeIngress = "Ingress"
	PolicyTypeEgress  = "Egress"
)

// Rule is one ingress or egress rule of a policy or profile.
type Rule struct {
	Action      string        `json:"action"`
	IPVersion   *int          `json:"ipVersion,omitempty"`
	Protocol    *Protocol     `json:"protocol,omitempty"`
	ICMP        *ICMPFields   `json:"icmp,omitempty"`
	NotProtocol *Protocol     `json:"notProtocol,omitempty"`
	NotICMP     *ICMPFields   `json:"notICMP,omitempty"`
	Source      EntityRule    `json:"source,omitzero"`
	Destination EntityRule    `json:"destination,omitzero"`
	HTTP        *HTTPMatch    `json:"http,omitempty"`
	Metadata    *RuleMetadata `json:"metadata,omitempty"`
}

// ICMPFields matches an ICMP type and optionally a code.
type ICMPFields struct {
	Type *int `json:"type,omitempty"`
	Code *int `json:"code,omitempty"`
}

// EntityRule is the source or destination part of a rule.
type EntityRule struct {
	Nets              []string             `json:"nets,omitempty"`
	Selector          string               `json:"selector,omitempty"`
	NamespaceSelector string               `json:"namespaceSelector,omitempty"`
	Services          *ServiceMatch        `json:"services,omitempty"`
	Ports             []Port               `json:"ports,omitempty"`
	NotNets           []string             `json:"notNets,omitempty"`
	NotSelector       string               `json:"notSelector,omitempty"`
	NotPorts          []Port               `json:"notPorts,omitempty"`
	ServiceAccounts   *ServiceAccountMatch `json:"serviceAccounts,omitempty"`
}

// ServiceAccountMatch matches endpoints by service account name or labels.
type ServiceAccountMatch struct {
	Names    []string `json:"names,omitempty"`
	Selector string   `json:"selector,omitempty"`
}

// ServiceMatch names a Kubernetes service (kept for round trips; not enforced on bare metal).
type ServiceMatch struct {
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
}

// HTTPMatch is an application-layer match (kept for round trips; not enforced by felix).
type HTTPMatch struct {
	Methods []string        `json:"methods,omitempty"`
	Paths   []HTTPPathMatch `json:"paths,omitempty"`
}

// HTTPPathMatch is one HTTP path match.
type HTTPPathMatch struct {
	Exact  string `json:"exact,omitempty"`
	Prefix string `json:"prefix,omitempty"`
}

// RuleMetadata carries annotations on a rule.
type RuleMetadata struct {
	Annotations map[string]string `json:"annotations,omitempty"`
}

// IsEmpty reports whether the entity rule matches everything.
func (e *EntityRule) IsEmpty() bool {
	return len(e.Nets) == 0 && e.Selector == "" && e.NamespaceSelector == "" && e.Services == nil &&
		len(e.Ports) == 0 && len(e.NotNets) == 0 && e.NotSelector == "" && len(e.NotPorts) == 0 &&
		e.ServiceAccounts == nil
}
