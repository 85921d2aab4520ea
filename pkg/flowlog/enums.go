package flowlog

import (
	"fmt"
	"slices"
)

// The enumerations of a flow record carry Goldmane's numbers (its
// api.proto), so that a value converts to the wire by a cast, and print
// in JSON by the names whisker-backend prints ("Allow", "Src",
// "WorkloadEndpoint", "GlobalNetworkPolicy").

// Action is the verdict of a rule or of a flow.
type Action int32

// Actions (goldmane.Action).
const (
	ActionUnspecified Action = 0
	Allow             Action = 1
	Deny              Action = 2
	Pass              Action = 3
)

var actionNames = []string{"ActionUnspecified", "Allow", "Deny", "Pass"}

func (a Action) String() string { return enumName(a, actionNames) }

// MarshalText prints the action's name.
func (a Action) MarshalText() ([]byte, error) { return enumMarshal(a, actionNames) }

// UnmarshalText parses an action's name.
func (a *Action) UnmarshalText(b []byte) error { return enumUnmarshal(a, b, actionNames, "action") }

// Reporter says which end of a connection measured a flow: Src is the
// egress side of the initiating endpoint, Dst the ingress side of the
// terminating one.
type Reporter int32

// Reporters (goldmane.Reporter).
const (
	ReporterUnspecified Reporter = 0
	Src                 Reporter = 1
	Dst                 Reporter = 2
)

var reporterNames = []string{"ReporterUnspecified", "Src", "Dst"}

func (r Reporter) String() string { return enumName(r, reporterNames) }

// MarshalText prints the reporter's name.
func (r Reporter) MarshalText() ([]byte, error) { return enumMarshal(r, reporterNames) }

// UnmarshalText parses a reporter's name.
func (r *Reporter) UnmarshalText(b []byte) error {
	return enumUnmarshal(r, b, reporterNames, "reporter")
}

// EndpointType says what the name and namespace of a flow's end mean.
type EndpointType int32

// Endpoint types (goldmane.EndpointType).
const (
	EndpointTypeUnspecified EndpointType = 0
	WorkloadEndpoint        EndpointType = 1
	HostEndpoint            EndpointType = 2
	NetworkSet              EndpointType = 3
	Network                 EndpointType = 4
)

var endpointTypeNames = []string{"EndpointTypeUnspecified", "WorkloadEndpoint", "HostEndpoint", "NetworkSet", "Network"}

func (t EndpointType) String() string { return enumName(t, endpointTypeNames) }

// MarshalText prints the type's name.
func (t EndpointType) MarshalText() ([]byte, error) { return enumMarshal(t, endpointTypeNames) }

// UnmarshalText parses a type's name.
func (t *EndpointType) UnmarshalText(b []byte) error {
	return enumUnmarshal(t, b, endpointTypeNames, "endpoint type")
}

// PolicyKind is the kind of the object a policy hit names. EndOfTier is a
// tier's default action; its hit names the policy that triggered it.
type PolicyKind int32

// Policy kinds (goldmane.PolicyKind; 7 and 8 are reserved there).
const (
	KindUnspecified                   PolicyKind = 0
	KindCalicoNetworkPolicy           PolicyKind = 1
	KindGlobalNetworkPolicy           PolicyKind = 2
	KindStagedNetworkPolicy           PolicyKind = 3
	KindStagedGlobalNetworkPolicy     PolicyKind = 4
	KindStagedKubernetesNetworkPolicy PolicyKind = 5
	KindNetworkPolicy                 PolicyKind = 6 // Kubernetes NetworkPolicy
	KindProfile                       PolicyKind = 9
	KindEndOfTier                     PolicyKind = 10
	KindClusterNetworkPolicy          PolicyKind = 11
)

var policyKindNames = []string{
	"KindUnspecified", "CalicoNetworkPolicy", "GlobalNetworkPolicy", "StagedNetworkPolicy",
	"StagedGlobalNetworkPolicy", "StagedKubernetesNetworkPolicy", "NetworkPolicy", "", "",
	"Profile", "EndOfTier", "ClusterNetworkPolicy",
}

func (k PolicyKind) String() string { return enumName(k, policyKindNames) }

// MarshalText prints the kind's name.
func (k PolicyKind) MarshalText() ([]byte, error) { return enumMarshal(k, policyKindNames) }

// UnmarshalText parses a kind's name.
func (k *PolicyKind) UnmarshalText(b []byte) error {
	return enumUnmarshal(k, b, policyKindNames, "policy kind")
}

// Staged says whether policies of this kind are staged: evaluated for
// flow logs (their verdicts are pending), never enforced.
func (k PolicyKind) Staged() bool {
	switch k {
	case KindStagedNetworkPolicy, KindStagedGlobalNetworkPolicy, KindStagedKubernetesNetworkPolicy:
		return true
	}
	return false
}

// Namespaced says whether policies of this kind live in a namespace.
func (k PolicyKind) Namespaced() bool {
	switch k {
	case KindCalicoNetworkPolicy, KindNetworkPolicy, KindStagedNetworkPolicy, KindStagedKubernetesNetworkPolicy:
		return true
	}
	return false
}

// Valid says whether k is one of the kinds above (not KindUnspecified).
func (k PolicyKind) Valid() bool {
	return k > KindUnspecified && int(k) < len(policyKindNames) && policyKindNames[k] != ""
}

func enumName[T ~int32](v T, names []string) string {
	if v >= 0 && int(v) < len(names) && names[v] != "" {
		return names[v]
	}
	return fmt.Sprintf("%d", int32(v))
}

func enumMarshal[T ~int32](v T, names []string) ([]byte, error) {
	if v < 0 || int(v) >= len(names) || names[v] == "" {
		return nil, fmt.Errorf("invalid value %d", int32(v))
	}
	return []byte(names[v]), nil
}

func enumUnmarshal[T ~int32](v *T, b []byte, names []string, what string) error {
	i := slices.Index(names, string(b))
	if i < 0 || len(b) == 0 {
		return fmt.Errorf("unknown %s %q", what, b)
	}
	*v = T(i)
	return nil
}
