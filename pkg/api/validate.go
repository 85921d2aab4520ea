package api

import (
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
)

// FieldError is one validation failure, with the path of the offending field.
type FieldError struct {
	Field   string
	Message string
	// Value, when not nil, is the offending value: calicoctl shows it as Project Calico's
	// validator does ("PeerIP = 'x' (...)").
	Value any
	// Name, when set, is what Project Calico's messages call the field, where that is not the Go
	// name of Field's last element ("IPPool.Spec.CIDR", "Port", "spec").
	Name string
}

// String is "field: message", with the value in parentheses when the message does not show it.
func (e FieldError) String() string {
	s := e.Field + ": " + e.Message
	if e.Value != nil {
		if v := fmt.Sprint(e.Value); !strings.Contains(e.Message, v) {
			s += " (" + v + ")"
		}
	}
	return s
}

// ValidationError lists every problem found in one object.
type ValidationError struct {
	Kind   string
	Name   string
	Errors []FieldError
}

func (e *ValidationError) Error() string {
	msgs := make([]string, len(e.Errors))
	for i, fe := range e.Errors {
		msgs[i] = fe.String()
	}
	return fmt.Sprintf("invalid %s %q: %s", e.Kind, e.Name, strings.Join(msgs, "; "))
}

// Validator checks objects. CheckSelector parses a selector (pkg/selector's Parse); api imports
// nothing of ours, so the caller supplies it. A nil CheckSelector accepts every selector.
type Validator struct {
	CheckSelector func(string) error
}

// errs collects field errors.
type errs struct {
	v    *Validator
	list []FieldError
	// write is set for ValidateWrite: some rules apply only to what is being written (see
	// validateRule), since refusing an object a reader finds can widen policy.
	write bool
}

func (e *errs) add(field, format string, args ...any) {
	e.list = append(e.list, FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
}

// addValue is add for a failure that is about the field's value.
func (e *errs) addValue(field string, value any, format string, args ...any) {
	e.list = append(e.list, FieldError{Field: field, Message: fmt.Sprintf(format, args...), Value: value})
}

// addNamed is addValue with the name Project Calico's message gives the field (value may be nil).
func (e *errs) addNamed(field, name string, value any, format string, args ...any) {
	e.list = append(e.list, FieldError{Field: field, Message: fmt.Sprintf(format, args...), Value: value, Name: name})
}

// Validate checks one object and returns a *ValidationError listing every problem, or nil. It
// is the check every reader applies (an object that fails it is treated as absent): what the
// components need to use an object safely.
func (v Validator) Validate(r Resource) error {
	return v.validate(r, false)
}

// ValidateWrite is Validate plus the rest of Project Calico's write-time validation (see
// writeChecks): what calicoctl refuses to write. Readers do not apply these rules, so an object
// another tool wrote without them keeps working as it does in Project Calico.
func (v Validator) ValidateWrite(r Resource) error {
	return v.validate(r, true)
}

func (v Validator) validate(r Resource, write bool) error {
	e := &errs{v: &v, write: write}
	k, _ := KindOf(r)
	validateMeta(e, k, r.GetObjectMeta())
	validateSpec(e, r)
	if write {
		writeChecks(e, r)
	}
	if len(e.list) == 0 {
		return nil
	}
	return &ValidationError{Kind: k.Kind, Name: r.GetObjectMeta().Name, Errors: e.list}
}

func validateSpec(e *errs, r Resource) {
	switch o := r.(type) {
	case *IPPool:
		validateIPPool(e, &o.Spec)
	case *Node:
		validateNode(e, &o.Spec)
	case *FelixConfiguration:
		validateFelixConfiguration(e, o)
	case *BGPConfiguration:
		validateBGPConfiguration(e, o)
	case *BGPPeer:
		validateBGPPeer(e, &o.Spec)
	case *BGPFilter:
		validateBGPFilter(e, &o.Spec)
	case *Tier:
		validateTier(e, o)
	case *GlobalNetworkPolicy:
		validatePolicy(e, o.View())
	case *NetworkPolicy:
		validatePolicy(e, o.View())
	case *StagedGlobalNetworkPolicy:
		validateStagedPolicy(e, o.Spec.StagedAction, o.View(), o.Spec.PerformanceHints)
	case *StagedNetworkPolicy:
		validateStagedPolicy(e, o.Spec.StagedAction, o.View(), o.Spec.PerformanceHints)
	case *StagedKubernetesNetworkPolicy:
		validateStagedKubernetesPolicy(e, o)
	case *Profile:
		validateRules(e, "spec.ingress", o.Spec.Ingress)
		validateRules(e, "spec.egress", o.Spec.Egress)
		validateLabels(e, "spec.labelsToApply", o.Spec.LabelsToApply)
	case *GlobalNetworkSet:
		validateNets(e, "spec.nets", o.Spec.Nets, 0)
	case *NetworkSet:
		validateNets(e, "spec.nets", o.Spec.Nets, 0)
	case *HostEndpoint:
		validateHostEndpoint(e, &o.Spec)
	case *WorkloadEndpoint:
		validateWorkloadEndpoint(e, &o.Spec)
	case *LiveMigration:
		validateLiveMigration(e, &o.Spec)
	case *IPAMConfiguration:
		validateIPAMConfiguration(e, o)
	case *IPReservation:
		validateIPReservation(e, &o.Spec)
	case *KubeControllersConfiguration:
		validateKubeControllersConfiguration(e, o)
	}
}

var (
	dns1123Subdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	dns1123Label     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	labelKeyName     = regexp.MustCompile(`^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`)
	labelValue       = regexp.MustCompile(`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`)
	interfaceName    = regexp.MustCompile(`^[a-zA-Z0-9_.\-]{1,15}$`)
)

// ValidInterfaceName reports whether name is an interface name as endpoints may give it.
func ValidInterfaceName(name string) bool { return interfaceName.MatchString(name) }

func validateMeta(e *errs, k KindInfo, m *ObjectMeta) {
	switch {
	case m.Name == "":
		e.add("metadata.name", "name is required")
	case len(m.Name) > 253:
		e.add("metadata.name", "name %q is longer than 253 characters", m.Name)
	case !dns1123Subdomain.MatchString(m.Name):
		e.addNamed("metadata.name", "Metadata.Name", m.Name, "name %q must consist of lower case alphanumeric characters, '-' or '.', and start and end with an alphanumeric character", m.Name)
	}
	if k.Namespaced {
		if m.Namespace == "" {
			e.add("metadata.namespace", "namespace is required for %s", k.Kind)
		} else if !dns1123Label.MatchString(m.Namespace) {
			e.add("metadata.namespace", "namespace %q must be a DNS-1123 label", m.Namespace)
		}
	} else if m.Namespace != "" {
		e.add("metadata.namespace", "%s is not namespaced", k.Kind)
	}
	validateLabels(e, "metadata.labels", m.Labels)
}

// maxAnnotationBytes is Kubernetes' limit on the total size of an object's annotations, which
// Project Calico applies.
const maxAnnotationBytes = 256 * 1024

// validateAnnotations applies Project Calico's annotation rules: every key (lower-cased) is a
// qualified name, and keys and values together fit in maxAnnotationBytes.
func validateAnnotations(e *errs, annotations map[string]string) {
	total := 0
	for k, v := range annotations {
		if !validLabelKey(strings.ToLower(k)) {
			e.add("metadata.annotations", "invalid annotation key %q", k)
		}
		total += len(k) + len(v)
	}
	if total > maxAnnotationBytes {
		e.add("metadata.annotations", "total size of annotations is too large by %d bytes", total-maxAnnotationBytes)
	}
}

func validateLabels(e *errs, field string, labels map[string]string) {
	for k, v := range labels {
		if !validLabelKey(k) {
			e.add(field, "invalid label key %q", k)
		}
		if len(v) > 63 || !labelValue.MatchString(v) {
			e.add(field, "invalid value %q for label %q", v, k)
		}
	}
}

func validLabelKey(k string) bool {
	prefix, name, hasPrefix := strings.Cut(k, "/")
	if !hasPrefix {
		name, prefix = prefix, ""
	}
	if hasPrefix && (prefix == "" || len(prefix) > 253 || !dns1123Subdomain.MatchString(prefix)) {
		return false
	}
	return len(name) <= 63 && labelKeyName.MatchString(name)
}

func (e *errs) selector(field, sel string) {
	if sel == "" || e.v.CheckSelector == nil {
		return
	}
	if err := e.v.CheckSelector(sel); err != nil {
		e.addValue(field, sel, "invalid selector %q: %v", sel, err)
	}
}

// ParseCIDROrIP parses a CIDR, or a bare IP as a host CIDR (/32 or /128).
func ParseCIDROrIP(s string) (*net.IPNet, error) {
	if ip := net.ParseIP(s); ip != nil {
		bits := 128
		if ip.To4() != nil {
			ip, bits = ip.To4(), 32
		}
		return &net.IPNet{IP: ip, Mask: net.CIDRMask(bits, bits)}, nil
	}
	_, n, err := net.ParseCIDR(s)
	if err != nil {
		return nil, fmt.Errorf("invalid CIDR %q", s)
	}
	return n, nil
}

// IPVersionOf returns 4 or 6 for an IP or CIDR string, or 0 if it parses as neither.
func IPVersionOf(s string) int {
	n, err := ParseCIDROrIP(s)
	if err != nil {
		return 0
	}
	if n.IP.To4() != nil {
		return 4
	}
	return 6
}

// validateNets checks a list of CIDRs; version 4 or 6 also requires that family.
func validateNets(e *errs, field string, nets []string, version int) {
	for i, s := range nets {
		f := fmt.Sprintf("%s[%d]", field, i)
		v := IPVersionOf(s)
		switch {
		case v == 0:
			e.addValue(f, s, "invalid CIDR %q", s)
		case version != 0 && v != version:
			e.add(f, "%q is not an IPv%d network (ipVersion is %d)", s, version, version)
		}
	}
}

func validateIP(e *errs, field, s string, version int) {
	ip := net.ParseIP(s)
	switch {
	case ip == nil:
		e.addValue(field, s, "invalid IP address %q", s)
	case version == 4 && ip.To4() == nil:
		e.add(field, "%q is not an IPv4 address", s)
	case version == 6 && ip.To4() != nil:
		e.add(field, "%q is not an IPv6 address", s)
	}
}

func validateOneOf(e *errs, field, value string, allowed ...string) {
	for _, a := range allowed {
		if value == a {
			return
		}
	}
	e.add(field, "unsupported value %q: supported values: %s", value, quoteAll(allowed))
}

// quoteAll lists values as Kubernetes' "supported values" do: "a", "b".
func quoteAll(values []string) string {
	q := make([]string, len(values))
	for i, v := range values {
		q[i] = strconv.Quote(v)
	}
	return strings.Join(q, ", ")
}

// validateOneOfFold is validateOneOf ignoring case, for fields that Project Calico matches
// case-insensitively.
func validateOneOfFold(e *errs, field, value string, allowed ...string) {
	for _, a := range allowed {
		if strings.EqualFold(value, a) {
			return
		}
	}
	e.add(field, "unsupported value %q: supported values: %s", value, quoteAll(allowed))
}

// enumCheck is one enum-valued field: its path, its value ("" when unset) and allowed values.
type enumCheck struct {
	field   string
	value   string
	allowed []string
}

// validateEnums checks every set field of the list, exactly or ignoring case.
func validateEnums(e *errs, fold bool, checks []enumCheck) {
	for _, c := range checks {
		switch {
		case c.value == "":
		case fold:
			validateOneOfFold(e, c.field, c.value, c.allowed...)
		default:
			validateOneOf(e, c.field, c.value, c.allowed...)
		}
	}
}

// deref returns *p, or "" for nil.
func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func validateRange(e *errs, field string, v *int, lo, hi int) {
	if v != nil && (*v < lo || *v > hi) {
		e.add(field, "%d is out of range %d-%d", *v, lo, hi)
	}
}

// rangeCheck is one optional integer field and its inclusive bounds.
type rangeCheck struct {
	field  string
	v      *int
	lo, hi int
}

func validateRanges(e *errs, checks []rangeCheck) {
	for _, c := range checks {
		validateRange(e, c.field, c.v, c.lo, c.hi)
	}
}

// validateCommunity checks a BGP community: "aa:nn" with 16-bit parts or "aa:nn:mm" with 32-bit
// parts.
func validateCommunity(e *errs, field, v string) {
	m := communityValue.FindStringSubmatch(v)
	if m == nil {
		e.add(field, "invalid community %q (want aa:nn or aa:nn:mm)", v)
		return
	}
	limit := uint64(65535)
	if m[4] != "" {
		limit = 1<<32 - 1
	}
	for _, part := range []string{m[1], m[2], m[4]} {
		if part == "" {
			continue
		}
		if n, err := strconv.ParseUint(part, 10, 64); err != nil || n > limit {
			e.add(field, "community %q has a part out of range", v)
			return
		}
	}
}
