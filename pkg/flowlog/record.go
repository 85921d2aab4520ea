package flowlog

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// NoNamespace is the namespace of a flow's end that has none (host
// endpoints, networks, global network sets), as Project Calico's collector
// writes it.
const NoNamespace = "-"

// Network names of an end that is no known endpoint nor network set: "pvt"
// for the private IPv4 ranges (10/8, 172.16/12, 192.168/16), "pub" for
// everything else, IPv6 included (Project Calico's collector).
const (
	PrivateNetwork = "pvt"
	PublicNetwork  = "pub"
)

// Key holds the fields that identify a flow (goldmane.FlowKey, less the
// Kubernetes service fields, which hosts without Kubernetes never fill).
type Key struct {
	SourceName      string       `json:"source_name"`
	SourceNamespace string       `json:"source_namespace"`
	SourceType      EndpointType `json:"source_type"`
	DestName        string       `json:"dest_name"`
	DestNamespace   string       `json:"dest_namespace"`
	DestType        EndpointType `json:"dest_type"`
	DestPort        uint16       `json:"dest_port"`
	Proto           string       `json:"proto"`
	Reporter        Reporter     `json:"reporter"`
	Action          Action       `json:"action"`
	Policies        Trace        `json:"policies"`
}

// Flow is one flow record: the connections that share a Key over
// [StartTime, EndTime), with their counters (goldmane.Flow). It is one line
// of the flow log file.
type Flow struct {
	StartTime time.Time `json:"start_time"`
	EndTime   time.Time `json:"end_time"`
	Key
	// SourceLabels and DestLabels are "key=value", sorted: the labels that
	// every contributing endpoint carried, its own (none inherited from a
	// profile or namespace, as Project Calico's felix reports them).
	SourceLabels []string `json:"source_labels"`
	DestLabels   []string `json:"dest_labels"`

	PacketsIn  int64 `json:"packets_in"`
	PacketsOut int64 `json:"packets_out"`
	BytesIn    int64 `json:"bytes_in"`
	BytesOut   int64 `json:"bytes_out"`

	NumConnectionsStarted   int64 `json:"num_connections_started"`
	NumConnectionsCompleted int64 `json:"num_connections_completed"`
	NumConnectionsLive      int64 `json:"num_connections_live"`
}

// Trace lists the policy rules a flow's connections met: Enforced are the
// ones the dataplane applied, in order, ending with the verdict; Pending
// are the ones that would apply if the staged policies were enforced.
type Trace struct {
	Enforced []PolicyHit `json:"enforced"`
	Pending  []PolicyHit `json:"pending"`
}

// PolicyHit is one policy rule met by a flow (goldmane.PolicyHit).
// RuleIndex is -1 for a tier's default action (Kind EndOfTier, naming the
// policy that triggered it in Trigger). Profiles have no tier.
type PolicyHit struct {
	Kind        PolicyKind `json:"kind"`
	Name        string     `json:"name"`
	Namespace   string     `json:"namespace"`
	Tier        string     `json:"tier"`
	Action      Action     `json:"action"`
	PolicyIndex int64      `json:"policy_index"`
	RuleIndex   int64      `json:"rule_index"`
	Trigger     *PolicyHit `json:"trigger"`
}

// Validate checks a hit as Goldmane does before it accepts one: a known
// kind and action, a namespace exactly for namespaced kinds, a trigger for
// EndOfTier.
func (h PolicyHit) Validate() error {
	switch {
	case !h.Kind.Valid():
		return fmt.Errorf("policy hit %q: unknown kind %d", h.Name, int32(h.Kind))
	case h.Action < Allow || h.Action > Pass:
		return fmt.Errorf("policy hit %q: unknown action %d", h.Name, int32(h.Action))
	case h.Kind == KindEndOfTier && h.Trigger == nil:
		return fmt.Errorf("end-of-tier hit in tier %q: no trigger", h.Tier)
	case h.Kind == KindEndOfTier:
		if h.Trigger.Kind == KindEndOfTier {
			return fmt.Errorf("end-of-tier hit in tier %q: triggered by an end of tier", h.Tier)
		}
		return h.Trigger.validateName()
	case h.Kind == KindProfile && h.Tier != "":
		return fmt.Errorf("profile hit %q: has tier %q", h.Name, h.Tier)
	case h.Kind != KindProfile && h.Tier == "":
		return fmt.Errorf("policy hit %q: no tier", h.Name)
	}
	return h.validateName()
}

func (h PolicyHit) validateName() error {
	switch {
	case h.Name == "":
		return fmt.Errorf("%s hit: no name", h.Kind)
	case h.Kind.Namespaced() && h.Namespace == "":
		return fmt.Errorf("%s hit %q: no namespace", h.Kind, h.Name)
	case !h.Kind.Namespaced() && h.Namespace != "":
		return fmt.Errorf("%s hit %q: has namespace %q", h.Kind, h.Name, h.Namespace)
	}
	return nil
}

// String prints a hit as Goldmane's labels do:
// "<policy index>|<tier>|<kind>:[<namespace>/]<name>|<action>|<rule index>",
// an end of tier naming its trigger, a profile in tier "__PROFILE__".
func (h PolicyHit) String() string {
	named := h
	if h.Kind == KindEndOfTier && h.Trigger != nil {
		named = *h.Trigger
	}
	tier := h.Tier
	if h.Kind == KindProfile {
		tier = "__PROFILE__"
	}
	b := make([]byte, 0, 64)
	b = strconv.AppendInt(b, h.PolicyIndex, 10)
	b = append(b, '|')
	b = append(b, tier...)
	b = append(b, '|')
	b = append(b, shortKinds[named.Kind]...)
	b = append(b, ':')
	if named.Namespace != "" {
		b = append(b, named.Namespace...)
		b = append(b, '/')
	}
	b = append(b, named.Name...)
	b = append(b, '|')
	b = append(b, strings.ToLower(h.Action.String())...)
	b = append(b, '|')
	b = strconv.AppendInt(b, h.RuleIndex, 10)
	return string(b)
}

// shortKinds are Project Calico's short names of policy kinds (felix's
// types.ShortKind*), used in NFLOG prefixes and policy hit labels.
var shortKinds = map[PolicyKind]string{
	KindCalicoNetworkPolicy:           "np",
	KindGlobalNetworkPolicy:           "gnp",
	KindStagedNetworkPolicy:           "snp",
	KindStagedGlobalNetworkPolicy:     "sgnp",
	KindStagedKubernetesNetworkPolicy: "sknp",
	KindNetworkPolicy:                 "knp",
	KindClusterNetworkPolicy:          "kcnp",
	KindProfile:                       "pro",
}

// ShortKind returns Project Calico's short name of a policy kind ("gnp",
// "np", "sgnp", "pro", ...), or "" for EndOfTier and unknown kinds.
func ShortKind(k PolicyKind) string { return shortKinds[k] }

// KindFromShort is the inverse of ShortKind.
func KindFromShort(s string) (PolicyKind, bool) {
	for k, v := range shortKinds {
		if v == s {
			return k, true
		}
	}
	return KindUnspecified, false
}

// label is the canonical text of a list of hits, used to key flows.
func label(hits []PolicyHit) string {
	parts := make([]string, len(hits))
	for i, h := range hits {
		parts[i] = h.String()
	}
	return strings.Join(parts, ";")
}

// Validate checks every hit of a trace and that the enforced hits are
// numbered in order from 0.
func (t Trace) Validate() error {
	var errs []error
	for i, h := range t.Enforced {
		if err := h.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("enforced: %w", err))
		}
		if h.PolicyIndex != int64(i) {
			errs = append(errs, fmt.Errorf("enforced hit %d has policy index %d", i, h.PolicyIndex))
		}
	}
	for _, h := range t.Pending {
		if err := h.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("pending: %w", err))
		}
	}
	return errors.Join(errs...)
}

func cloneHits(hits []PolicyHit) []PolicyHit {
	out := slices.Clone(hits)
	for i := range out {
		if t := out[i].Trigger; t != nil {
			c := *t
			out[i].Trigger = &c
		}
	}
	if out == nil {
		out = []PolicyHit{}
	}
	return out
}
