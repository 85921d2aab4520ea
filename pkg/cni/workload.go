package cni

import (
	"crypto/sha1"
	"encoding/hex"

	"github.com/calico-host/calico-host/pkg/api"
)

// Orchestrators written into WorkloadEndpoints.
const (
	OrchestratorCNI = "cni"
	OrchestratorK8s = "k8s"
)

// Workload identifies the container's endpoint and the names derived from it.
type Workload struct {
	Network      string
	Node         string
	Orchestrator string
	Namespace    string
	Pod          string // k8s only
	ContainerID  string
	Endpoint     string // the container interface name
	Name         string // the WorkloadEndpoint name
	HostVeth     string
	Handle       string // IPAM handle "<network>.<containerID>"
	LegacyHandle string // the handle of older Project Calico releases
}

// NewWorkload derives the workload identity. Pod name and namespace come from CNI_ARGS only.
func NewWorkload(network, node, containerID, ifName string, a *Args, testNamespace string) Workload {
	w := Workload{Network: network, Node: node, ContainerID: containerID, Endpoint: ifName,
		Handle: network + "." + containerID, LegacyHandle: containerID}
	if a != nil && a.IsK8s() {
		w.Orchestrator, w.Namespace, w.Pod = OrchestratorK8s, string(a.K8S_POD_NAMESPACE), string(a.K8S_POD_NAME)
		w.Name = api.WorkloadEndpointName(node, OrchestratorK8s, w.Pod, ifName)
		w.HostVeth = K8sVethName(w.Namespace, w.Pod)
		w.LegacyHandle = w.Namespace + "." + w.Pod
		return w
	}
	w.Orchestrator, w.Namespace = OrchestratorCNI, "default"
	if testNamespace != "" {
		w.Namespace = testNamespace
	}
	w.Name = api.WorkloadEndpointName(node, OrchestratorCNI, containerID, ifName)
	w.HostVeth = CNIVethName(containerID)
	return w
}

// CNIVethName is the host veth of a cni-mode container: "cali" + the first 11 characters of its ID.
func CNIVethName(containerID string) string {
	id := containerID
	if len(id) > 11 {
		id = id[:11]
	}
	return "cali" + id
}

// K8sVethName is the host veth of a pod: "cali" + hex(sha1("<namespace>.<pod>"))[:11].
func K8sVethName(namespace, pod string) string {
	sum := sha1.Sum([]byte(namespace + "." + pod))
	return "cali" + hex.EncodeToString(sum[:])[:11]
}

// Attrs are the IPAM allocation attributes Project Calico's plugin records.
func (w Workload) Attrs(timestamp string) map[string]string {
	m := map[string]string{"node": w.Node, "timestamp": timestamp}
	if w.Orchestrator == OrchestratorK8s {
		m["namespace"], m["pod"] = w.Namespace, w.Pod
	}
	return m
}
