package api

import (
	"net"
	"time"
)

// SetDefaults fills in the defaults that calicoctl applies on write, as the fixtures show.
func SetDefaults(r Resource) {
	switch o := r.(type) {
	case *IPPool:
		defaultIPPool(&o.Spec)
	case *GlobalNetworkPolicy:
		defaultPolicy(&o.ObjectMeta, &o.Spec.Tier, &o.Spec.Types, o.Spec.Ingress, o.Spec.Egress)
	case *NetworkPolicy:
		defaultPolicy(&o.ObjectMeta, &o.Spec.Tier, &o.Spec.Types, o.Spec.Ingress, o.Spec.Egress)
	case *StagedGlobalNetworkPolicy:
		defaultPolicy(&o.ObjectMeta, &o.Spec.Tier, &o.Spec.Types, o.Spec.Ingress, o.Spec.Egress)
		defaultStaged(&o.Spec.StagedAction, &o.Spec.Types)
	case *StagedNetworkPolicy:
		defaultPolicy(&o.ObjectMeta, &o.Spec.Tier, &o.Spec.Types, o.Spec.Ingress, o.Spec.Egress)
		defaultStaged(&o.Spec.StagedAction, &o.Spec.Types)
	case *StagedKubernetesNetworkPolicy:
		defaultStaged(&o.Spec.StagedAction, nil)
	case *Tier:
		if o.Spec.DefaultAction == "" {
			o.Spec.DefaultAction = ActionDeny
		}
	case *WorkloadEndpoint:
		defaultWorkloadEndpoint(o)
	case *FelixConfiguration:
		defaultFelixConfiguration(&o.Spec)
	case *BGPConfiguration:
		// The defaults of Project Calico's CRD schema, which its client applies in etcd mode.
		if o.Spec.ServiceLoadBalancerAggregation == nil {
			o.Spec.ServiceLoadBalancerAggregation = Str("Enabled")
		}
		if o.Spec.LogSeverityScreen == "" {
			o.Spec.LogSeverityScreen = "Info"
		}
	case *KubeControllersConfiguration:
		defaultKubeControllers(&o.Spec)
		if rc := o.Status.RunningConfig; rc != nil {
			defaultKubeControllersSchema(rc)
		}
	}
}

// defaultKubeControllers fills in what Project Calico's client writes (prometheusMetricsPort
// 9094, the node controller's leakGracePeriod 15m, a template's nodeSelector all()) and the
// defaults of its CRD schema (defaultKubeControllersSchema).
func defaultKubeControllers(s *KubeControllersConfigurationSpec) {
	if s.PrometheusMetricsPort == nil {
		s.PrometheusMetricsPort = Int(9094)
	}
	if n := s.Controllers.Node; n != nil {
		if n.LeakGracePeriod == nil {
			n.LeakGracePeriod = &Duration{Duration: 15 * time.Minute}
		}
		if n.HostEndpoint != nil {
			for i := range n.HostEndpoint.Templates {
				if n.HostEndpoint.Templates[i].NodeSelector == "" {
					n.HostEndpoint.Templates[i].NodeSelector = "all()"
				}
			}
		}
	}
	defaultKubeControllersSchema(s)
}

// defaultKubeControllersSchema applies the defaults of Project Calico's CRD schema, which its
// client applies in etcd mode (also to status.runningConfig): healthChecks Enabled, and inside
// the controllers present loadBalancer.assignIPs AllServices and migration.policyNameMigrator
// Enabled.
func defaultKubeControllersSchema(s *KubeControllersConfigurationSpec) {
	if s.HealthChecks == "" {
		s.HealthChecks = "Enabled"
	}
	if lb := s.Controllers.LoadBalancer; lb != nil && lb.AssignIPs == "" {
		lb.AssignIPs = "AllServices"
	}
	if m := s.Controllers.Migration; m != nil && m.PolicyNameMigrator == "" {
		m.PolicyNameMigrator = "Enabled"
	}
}

// SetReadDefaults fills in, on an object read from the datastore, the defaults its consumers rely
// on where they do not change its meaning: a pool's encapsulation, block size, node selector and
// uses; a tier's default action; a policy's tier. Unlike SetDefaults it never derives a policy's
// types: a policy stored without types (networking-calico writes them so) applies to both
// directions, as felix treats it, and it never renames or relabels anything.
func SetReadDefaults(r Resource) {
	switch o := r.(type) {
	case *IPPool:
		defaultIPPool(&o.Spec)
	case *Tier:
		if o.Spec.DefaultAction == "" {
			o.Spec.DefaultAction = ActionDeny
		}
	case *GlobalNetworkPolicy:
		if o.Spec.Tier == "" {
			o.Spec.Tier = TierDefault
		}
	case *NetworkPolicy:
		if o.Spec.Tier == "" {
			o.Spec.Tier = TierDefault
		}
	case *StagedGlobalNetworkPolicy:
		if o.Spec.Tier == "" {
			o.Spec.Tier = TierDefault
		}
	case *StagedNetworkPolicy:
		if o.Spec.Tier == "" {
			o.Spec.Tier = TierDefault
		}
	}
}

// defaultStaged does what Project Calico's client does to a staged policy after the policy
// defaults: a Delete keeps no types; then its CRD schema's default action, Set, applies.
func defaultStaged(action *string, types *[]string) {
	if *action == StagedActionDelete && types != nil {
		*types = nil
	}
	if *action == "" {
		*action = StagedActionSet
	}
}

func defaultIPPool(s *IPPoolSpec) {
	// calicoctl stores the pool CIDR in canonical form ("FD5C:0001:2::/48" -> "fd5c:1:2::/48");
	// an address with host bits set is left for validation to reject.
	if ip, n, err := net.ParseCIDR(s.CIDR); err == nil && ip.Equal(n.IP) {
		s.CIDR = n.String()
	}
	if s.IPIPMode == "" {
		s.IPIPMode = EncapNever
	}
	if s.VXLANMode == "" {
		s.VXLANMode = EncapNever
	}
	if s.NodeSelector == "" {
		s.NodeSelector = "all()"
	}
	if s.BlockSize == 0 {
		s.BlockSize = 26
		if ip, _, err := net.ParseCIDR(s.CIDR); err == nil && ip.To4() == nil {
			s.BlockSize = 122
		}
	}
	if len(s.AllowedUses) == 0 {
		s.AllowedUses = []string{UseWorkload, UseTunnel}
	}
	if s.AssignmentMode == "" {
		s.AssignmentMode = "Automatic"
	}
}

// defaultPolicy does what Project Calico does to a policy it writes: the tier defaults to
// "default" and is recorded in the tier label (the name is kept as given: a policy in another
// tier needs no tier prefix), and the types are derived from the rule lists. The metadata
// annotation is the datastore's: pkg/datastore adds it on write and removes it on read.
func defaultPolicy(m *ObjectMeta, tier *string, types *[]string, ingress, egress []Rule) {
	if *tier == "" {
		*tier = TierDefault
	}
	if m.Labels == nil {
		m.Labels = map[string]string{}
	}
	m.Labels[LabelTier] = *tier
	if len(*types) == 0 {
		*types = DefaultPolicyTypes(ingress, egress)
	}
}

// DefaultPolicyTypes derives policy types from which rule lists are present, as Project Calico
// does: Ingress unless there are only egress rules, plus Egress when there are egress rules.
func DefaultPolicyTypes(ingress, egress []Rule) []string {
	switch {
	case len(egress) == 0:
		return []string{PolicyTypeIngress}
	case len(ingress) == 0:
		return []string{PolicyTypeEgress}
	default:
		return []string{PolicyTypeIngress, PolicyTypeEgress}
	}
}

func defaultWorkloadEndpoint(w *WorkloadEndpoint) {
	if w.Labels == nil {
		w.Labels = map[string]string{}
	}
	if w.Namespace == "" {
		w.Namespace = "default"
	}
	w.Labels[LabelNamespace] = w.Namespace
	if w.Spec.Orchestrator != "" {
		w.Labels[LabelOrchestrator] = w.Spec.Orchestrator
	}
}

func defaultFelixConfiguration(s *FelixConfigurationSpec) {
	setDefault(&s.BPFConnectTimeLoadBalancing, "TCP")
	setDefault(&s.BPFHostNetworkedNATWithoutCTLB, "Enabled")
	if on := s.BPFConnectTimeLoadBalancingEnabled; on != nil {
		// Project Calico's client maps the deprecated boolean onto the newer fields.
		s.BPFHostNetworkedNATWithoutCTLB = Str("Disabled")
		s.BPFConnectTimeLoadBalancing = Str("Disabled")
		if *on {
			s.BPFConnectTimeLoadBalancing = Str("Enabled")
		}
	}
	setDefault(&s.BPFLogLevel, "")
	setDefault(&s.FloatingIPs, "Disabled")
	setDefault(&s.NFTablesFlowTableOffload, "Disabled")
	setDefault(&s.NFTablesMode, "Auto")
}

func setDefault(p **string, v string) {
	if *p == nil {
		*p = Str(v)
	}
}

// Str returns a pointer to s.
func Str(s string) *string { return &s }

// Bool returns a pointer to b.
func Bool(b bool) *bool { return &b }

// Int returns a pointer to i.
func Int(i int) *int { return &i }

// Float returns a pointer to f.
func Float(f float64) *float64 { return &f }
