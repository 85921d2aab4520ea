package api

import (
	"fmt"
	"reflect"
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
	validatePolicy(e, k8sView(e, p))
}
