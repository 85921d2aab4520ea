package calicoctl

import (
	"errors"
	"strings"

	"github.com/calico-host/calico-host/pkg/api"
)

// In etcd mode Project Calico stores Kubernetes NetworkPolicies as NetworkPolicies named
// "knp.default.<name>", and its calicoctl refuses to manage those: they belong to the
// Kubernetes API. Ours refuses them the same way, before validating them.

const (
	kubernetesPolicyPrefix = "knp.default."
	kubernetesPolicyReason = "kubernetes network policies must be managed through the kubernetes API"
)

// isKubernetesPolicy reports whether r is a NetworkPolicy with the Kubernetes policies' prefix.
func isKubernetesPolicy(r api.Resource) bool {
	k, _ := api.KindOf(r)
	return isKubernetesPolicyName(k, r.GetObjectMeta().Name)
}

func isKubernetesPolicyName(k api.KindInfo, name string) bool {
	return k.Kind == "NetworkPolicy" && strings.HasPrefix(name, kubernetesPolicyPrefix)
}

// kubernetesPolicyWrite refuses a write as Project Calico's calicoctl does: a create is not
// supported, and an apply or replace is an update, which finds nothing to update unless such a
// policy is stored (then it is not supported either).
func (s *session) kubernetesPolicyWrite(d *document, act action) error {
	m := d.meta()
	id := identifier(d.kind, m.Namespace, m.Name)
	if act == actCreate {
		return errors.New(notSupported("create or apply", id, kubernetesPolicyReason))
	}
	if _, err := s.current(d.kind, m.Namespace, m.Name); err != nil {
		return calicoError(err, d.kind, m.Namespace, m.Name)
	}
	return errors.New(notSupported("apply or replace", id, kubernetesPolicyReason))
}

// kubernetesPolicyDelete is Project Calico's refusal to delete such a policy.
func kubernetesPolicyDelete(k api.KindInfo, namespace, name string) error {
	return errors.New(notSupported("delete", identifier(k, namespace, name), kubernetesPolicyReason))
}
