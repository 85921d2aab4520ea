// Package api holds the projectcalico.org/v3 resource types that calico-host reads and writes,
// with JSON field names and omission rules identical to Project Calico's, the defaults that
// calicoctl fills in on write, and per-kind validation.
//
// It also holds the non-v3 values stored in etcd: IPAM blocks, affinities and handles, and the
// felix status reports. It imports nothing else of this module.
//
// The files:
//
//	doc.go                    APIVersion, the well-known labels and annotations, orchestrators
//	meta.go                   TypeMeta, ObjectMeta, Resource, KindInfo (the kinds' names)
//	node.go                   Node, ClusterInformation
//	pool.go                   IPPool, IPAMConfiguration, IPReservation
//	endpoint.go               WorkloadEndpoint, HostEndpoint, LiveMigration
//	policy.go                 Tier, GlobalNetworkPolicy, NetworkPolicy, Profile, network sets
//	staged.go                 the staged policy kinds
//	staged_k8s.go             a staged Kubernetes policy converted as Project Calico converts it
//	rule.go                   Rule, EntityRule, ICMPFields and the rest of a policy rule
//	numorstring.go            Port, Protocol, ASNumber, Duration, DSCP: Calico's number-or-string
//	                          values, marshalled as Project Calico marshals them
//	bgp.go                    BGPConfiguration, BGPPeer; bgpfilter.go: BGPFilter
//	felixconfig.go            FelixConfiguration
//	kubecontrollers.go        KubeControllersConfiguration, stored and returned unchanged
//	ipam.go                   IPAM blocks, affinities, handles, IPAM config; felix status reports
//	names.go                  WorkloadEndpointName and its inverse, WorkloadID, default-tier names
//	defaults.go               SetDefaults: what calicoctl fills in on write
//	defaultprofile.go         the built-in profile projectcalico-default-allow
//	validate.go               Validator (Validate, ValidateWrite), FieldError, ValidationError
//	validate_kinds.go         pools (and PoolOverlapError), nodes, tiers and endpoints
//	validate_policy.go        policies and their rules
//	validate_staged.go        staged policies
//	validate_bgp.go           BGPConfiguration and BGPPeer
//	validate_bgpfilter.go     BGPFilter, and Unsupported: rules calico-host cannot enforce
//	validate_felix.go         FelixConfiguration, and dropping the invalid fields of one
//	validate_livemigration.go LiveMigration
//	validate_write.go         the write-time rules readers do not need
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
