package api

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"time"
)

// writeChecks are Project Calico's write-time rules that readers do not need to use an object
// safely: its validator's name, metadata and rule consistency checks, its client's per-kind
// checks, and the rules of its CRD schemas, which it applies in etcd mode.
func writeChecks(e *errs, r Resource) {
	writeMeta(e, r.GetObjectMeta())
	switch o := r.(type) {
	case *GlobalNetworkPolicy:
		writePolicy(e, o.Name, false, o.View())
	case *NetworkPolicy:
		writePolicy(e, o.Name, true, o.View())
	case *StagedGlobalNetworkPolicy:
		writeStagedPolicy(e, o.Name, false, o.Spec.StagedAction, o.View())
	case *StagedNetworkPolicy:
		writeStagedPolicy(e, o.Name, true, o.Spec.StagedAction, o.View())
	case *Profile:
		writeRules(e, "spec.ingress", o.Spec.Ingress)
		writeRules(e, "spec.egress", o.Spec.Egress)
	case *Tier:
		writeTier(e, o)
	case *BGPConfiguration:
		if o.Name != "default" {
			validateDefaultOnlyBGP(e, &o.Spec)
		}
		if len(o.Spec.Communities) > 0 && len(o.Spec.PrefixAdvertisements) == 0 {
			e.add("spec.communities", "communities are defined but not used in prefixAdvertisements")
		}
	case *KubeControllersConfiguration:
		if n := o.Spec.Controllers.Node; n != nil && n.HostEndpoint != nil {
			validateHostEndpointTemplates(e, n.HostEndpoint.Templates)
		}
	case *WorkloadEndpoint:
		writeWorkloadEndpoint(e, o)
	case *Node:
		if o.Spec.BGP != nil && reflect.DeepEqual(*o.Spec.BGP, NodeBGPSpec{}) {
			e.add("spec.bgp", "spec.bgp should not be empty")
		}
	case *FelixConfiguration:
		for _, f := range []struct{ field, v string }{{"spec.logSeverityScreen", o.Spec.LogSeverityScreen},
			{"spec.logSeverityFile", o.Spec.LogSeverityFile}, {"spec.logSeveritySys", o.Spec.LogSeveritySys}} {
			validateEnums(e, true, []enumCheck{{f.field, f.v, []string{"Trace", "Debug", "Info", "Warning", "Error", "Fatal"}}})
		}
	case *GlobalNetworkSet:
		writeNoNamespaceLabel(e, o.Labels)
	case *NetworkSet:
		writeNoNamespaceLabel(e, o.Labels)
	}
}

// writeNoNamespaceLabel: the namespace label belongs to the datastore's own model, not to sets.
func writeNoNamespaceLabel(e *errs, labels map[string]string) {
	if _, ok := labels[LabelNamespace]; ok {
		e.add("metadata.labels", "%s is not a valid label name", LabelNamespace)
	}
}

// writeWorkloadEndpoint: the name is the one the identifiers give (Project Calico's client
// refuses another), every network is a single address and every NAT's internal IP is in one.
func writeWorkloadEndpoint(e *errs, w *WorkloadEndpoint) {
	validateWorkloadNames(e, &w.Spec)
	if want, ok := expectedWorkloadEndpointName(&w.Spec); !ok {
		e.add("metadata.name", "node, orchestrator, endpoint and the workload identifier must be set")
	} else if w.Name != want {
		e.add("metadata.name", "the WorkloadEndpoint name does not match the primary identifiers assigned in the Spec: expected name %s", want)
	}
	for i, n := range w.Spec.IPNetworks {
		if c, err := ParseCIDROrIP(n); err == nil {
			if ones, bits := c.Mask.Size(); ones != bits {
				e.add(fmt.Sprintf("spec.ipNetworks[%d]", i), "IP network %s contains multiple addresses", n)
			}
		}
	}
	for i, nat := range w.Spec.IPNATs {
		if !inNetworks(nat.InternalIP, w.Spec.IPNetworks) {
			e.add(fmt.Sprintf("spec.ipNATs[%d].internalIP", i), "NAT %s is not in the endpoint networks", nat.InternalIP)
		}
	}
}

// expectedWorkloadEndpointName is Project Calico's name for an endpoint: node, orchestrator, the
// pod (k8s), container ID (cni), orchestrator (libnetwork) or workload, and endpoint.
func expectedWorkloadEndpointName(s *WorkloadEndpointSpec) (string, bool) {
	id := s.Workload
	switch s.Orchestrator {
	case OrchestratorK8s:
		id = s.Pod
	case OrchestratorCNI:
		id = s.ContainerID
	case "libnetwork":
		id = s.Orchestrator
	}
	for _, p := range []string{s.Node, s.Orchestrator, id, s.Endpoint} {
		if p == "" || strings.HasPrefix(p, "-") || strings.HasSuffix(p, "-") {
			return "", false
		}
	}
	return WorkloadEndpointName(s.Node, s.Orchestrator, id, s.Endpoint), true
}

func inNetworks(ip string, networks []string) bool {
	addr, err := ParseCIDROrIP(ip)
	if err != nil {
		return true // reported by Validate
	}
	for _, n := range networks {
		if c, err := ParseCIDROrIP(n); err == nil && c.Contains(addr.IP) {
			return true
		}
	}
	return false
}

// writeMeta: annotation keys and size, and timestamps that Kubernetes' types would not decode.
func writeMeta(e *errs, m *ObjectMeta) {
	validateAnnotations(e, m.Annotations)
	for _, ts := range []struct{ field, v string }{
		{"metadata.creationTimestamp", m.CreationTimestamp}, {"metadata.deletionTimestamp", m.DeletionTimestamp},
	} {
		if _, err := time.Parse(time.RFC3339, ts.v); ts.v != "" && err != nil {
			e.add(ts.field, "%q is not an RFC 3339 time", ts.v)
		}
	}
}

// Project Calico's policy name rules: a GlobalNetworkPolicy is a DNS-1123 label, optionally
// after one "<label>." prefix; a NetworkPolicy likewise, or a "knp.default." / "ossg.default."
// prefixed subdomain. Neither needs its tier as prefix.
var (
	gnpName = regexp.MustCompile(`^([a-z0-9]([-a-z0-9]*[a-z0-9])?\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	npName  = regexp.MustCompile(`^(([a-z0-9]([-a-z0-9]*[a-z0-9])?)(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)?|((knp|ossg)\.default\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*))$`)
)

func writePolicy(e *errs, name string, namespaced bool, p PolicySpecView) {
	re := gnpName
	if namespaced {
		re = npName
	}
	if len(name) <= 253 && !re.MatchString(name) {
		e.add("metadata.name", "policy name %q must consist of lower case alphanumeric characters or '-', with at most one '.'", name)
	}
	seen := map[string]bool{}
	for _, t := range p.Types {
		if seen[t] {
			e.add("spec.types", "'%s' type specified more than once", t)
		}
		seen[t] = true
	}
	for _, s := range []struct{ field, sel string }{
		{"spec.selector", p.Selector}, {"spec.serviceAccountSelector", p.ServiceAcctSel}, {"spec.namespaceSelector", p.NamespaceSel},
	} {
		if strings.Contains(s.sel, "global(") {
			e.add(s.field, "global() can only be used in an EntityRule namespaceSelector")
		}
	}
	writeRules(e, "spec.ingress", p.Ingress)
	writeRules(e, "spec.egress", p.Egress)
	writeServices(e, p, namespaced)
}

// writeServices: services may only be a source of ingress rules and a destination of egress
// rules, and a global policy must name the service's namespace.
func writeServices(e *errs, p PolicySpecView, namespaced bool) {
	for i, r := range p.Ingress {
		if r.Destination.Services != nil {
			e.add(fmt.Sprintf("spec.ingress[%d].destination.services", i), "not allowed in ingress rule destination")
		}
		if s := r.Source.Services; s != nil && !namespaced && s.Namespace == "" {
			e.add(fmt.Sprintf("spec.ingress[%d].source.services.namespace", i), "must specify a namespace")
		}
	}
	for i, r := range p.Egress {
		if r.Source.Services != nil {
			e.add(fmt.Sprintf("spec.egress[%d].source.services", i), "not allowed in egress rule source")
		}
		if s := r.Destination.Services; s != nil && !namespaced && s.Namespace == "" {
			e.add(fmt.Sprintf("spec.egress[%d].destination.services.namespace", i), "must specify a namespace")
		}
	}
}

var calicoProtocolName = regexp.MustCompile(`^(TCP|UDP|ICMP|ICMPv6|SCTP|UDPLite)$`)

func writeRules(e *errs, field string, rules []Rule) {
	for i := range rules {
		f, r := fmt.Sprintf("%s[%d]", field, i), &rules[i]
		writeRuleProtocols(e, f, r)
		writeRuleNets(e, f, r)
		for _, ent := range []struct {
			field string
			er    *EntityRule
		}{{f + ".source", &r.Source}, {f + ".destination", &r.Destination}} {
			writeEntity(e, ent.field, ent.er)
		}
	}
}

// writeRuleProtocols: protocol names in Project Calico's spelling (readers also take the
// lower-case names older writers used), and ICMP (1) needs ipVersion 4 and ICMPv6 (58) ipVersion
// 6, for protocol and notProtocol alike.
func writeRuleProtocols(e *errs, f string, r *Rule) {
	for _, p := range []struct {
		field string
		proto *Protocol
	}{{f + ".protocol", r.Protocol}, {f + ".notProtocol", r.NotProtocol}} {
		if p.proto == nil {
			continue
		}
		if !p.proto.IsNum && !calicoProtocolName.MatchString(p.proto.Name) {
			e.add(p.field, "protocol name %q must be one of TCP, UDP, ICMP, ICMPv6, SCTP, UDPLite", p.proto.Name)
		}
		if r.IPVersion == nil {
			continue
		}
		n, _ := p.proto.NumberValue()
		if (n == 1 && *r.IPVersion != 4) || (n == 58 && *r.IPVersion != 6) {
			e.add(p.field, "protocol %s requires ipVersion %d", p.proto, map[uint8]int{1: 4, 58: 6}[n])
		}
	}
}

// writeRuleNets: one family per rule, and no catch-all CIDR in notNets (it matches nothing).
func writeRuleNets(e *errs, f string, r *Rule) {
	families := map[int]bool{}
	for _, l := range []struct {
		field   string
		nets    []string
		negated bool
	}{{f + ".source.nets", r.Source.Nets, false}, {f + ".source.notNets", r.Source.NotNets, true},
		{f + ".destination.nets", r.Destination.Nets, false}, {f + ".destination.notNets", r.Destination.NotNets, true}} {
		for _, n := range l.nets {
			c, err := ParseCIDROrIP(n)
			if err != nil {
				continue // reported by Validate
			}
			v := IPVersionOf(n)
			families[v] = true
			if ones, _ := c.Mask.Size(); l.negated && ones == 0 {
				e.add(l.field, "catch-all CIDR %s in a negation matches no traffic", n)
			}
		}
	}
	if families[4] && families[6] {
		e.add(f, "rule contains both IPv4 and IPv6 CIDRs")
	}
}

// writeEntity: global() in a namespaceSelector must be all of it, and not in a selector; a
// service match excludes the other match fields and needs a name.
func writeEntity(e *errs, f string, er *EntityRule) {
	writePortNumbers(e, f+".ports", er.Ports)
	writePortNumbers(e, f+".notPorts", er.NotPorts)
	if strings.Contains(er.Selector, "global(") {
		e.add(f+".selector", "global() can only be used in an EntityRule namespaceSelector")
	}
	if ns := er.NamespaceSelector; strings.Contains(ns, "global(") && strings.Join(strings.Fields(ns), "") != "global()" {
		e.add(f+".namespaceSelector", "global() must be the only term of a namespaceSelector")
	}
	s := er.Services
	if s == nil {
		return
	}
	if s.Name == "" {
		e.add(f+".services.name", "services must specify a service name")
	}
	if er.NamespaceSelector != "" || er.ServiceAccounts != nil || er.Selector != "" || er.NotSelector != "" ||
		len(er.Nets)+len(er.NotNets)+len(er.Ports)+len(er.NotPorts) > 0 {
		e.add(f+".services", "services cannot be combined with selectors, service accounts, nets or ports")
	}
}

// writePortNumbers: a port number, and each end of a range, is 1-65535 (Project Calico's
// validator). Readers take port 0 as written: it matches no packet, whereas dropping the policy
// could widen what it allows.
func writePortNumbers(e *errs, field string, ports []Port) {
	for i, p := range ports {
		if p.PortName == "" && p.MinPort < 1 {
			e.addNamed(fmt.Sprintf("%s[%d]", field, i), "Port", p.MinPort, "port range invalid, port number must be between 1 and 65535")
		}
	}
}

// fixedTiers are Project Calico's built-in tiers with the order its CRD requires of them (their
// default actions are checked by Validate).
var fixedTiers = map[string]struct{ order float64 }{TierDefault: {1e6}, "kube-admin": {1e3}, "kube-baseline": {1e7}}

func writeTier(e *errs, t *Tier) {
	if len(t.Name) > 63 {
		e.add("metadata.name", "tier name is too long by %d bytes", len(t.Name)-63)
	}
	want, ok := fixedTiers[t.Name]
	if !ok {
		return
	}
	if t.Spec.Order == nil || *t.Spec.Order != want.order {
		e.add("spec.order", "the %q tier must have order %.0f", t.Name, want.order)
	}
}
