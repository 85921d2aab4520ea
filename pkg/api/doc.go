// Package api holds the projectcalico.org/v3 resource types that calico-host reads and writes,
// with JSON field names and omission rules identical to Project Calico's, the defaults that
// calicoctl fills in on write, and per-kind validation.
//
// It also holds the non-v3 values stored in etcd: IPAM blocks, affinities and handles, and the
// felix status reports. It imports nothing else of this module.
package api

// APIVersion is the apiVersion of every v3 resource.
const APIVersion = "projectcalico.org/v3"

// Well-known labels and annotations.
const (
	LabelNamespace      = "projectcalico.org/namespace"
	LabelOrchestrator   = "projectcalico.org/orchestrator"
	LabelTier           = "projectcalico.org/tier"
	LabelServiceAccount = "projectcalico.org/serviceaccount"
	AnnotationMetadata  = "projectcalico.org/metadata"
)

// Orchestrator names used in WorkloadEndpoints.
const (
	OrchestratorCNI       = "cni"
	OrchestratorK8s       = "k8s"
	OrchestratorOpenStack = "openstack"
)
