package cni

import (
	"crypto/sha1"
	"encoding/hex"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/calico-host/calico-host/pkg/api"
)

// Orchestrators written into WorkloadEndpoints.
const (
	OrchestratorCNI = "cni"
	OrchestratorK8s = "k8s"
)

// Workload identifies the container's endpoint and the names derived from it. Every part is
// validated by NewWorkload.
type Workload struct {
	Network      string
	Node         string
	Orchestrator string
	Namespace    string
	Pod          string // k8s only
	ContainerID  string
	Endpoint     IfName // the container interface name
	Name         string // the WorkloadEndpoint name
	HostVeth     IfName
	Handle       string // IPAM handle "<network>.<containerID>"
	LegacyHandle string // the handle of older Project Calico releases
}

// NewWorkload derives the workload identity, refusing any part that Project Calico's validator
// would refuse in the WorkloadEndpoint (a CNI error naming the input). Pod name and namespace come
// from CNI_ARGS only.
func NewWorkload(network, node, containerID, ifName string, a *Args, testNamespace string) (Workload, error) {
	w := Workload{Network: network, Node: node, ContainerID: containerID,
		Handle: network + "." + containerID, LegacyHandle: containerID}
	var err error
	if w.Endpoint, err = parseEndpoint(ifName); err != nil {
		return w, err
	}
	if err := checkIdentity(node, containerID); err != nil {
		return w, err
	}
	if a != nil && a.IsK8s() {
		return w.k8s(string(a.K8S_POD_NAMESPACE), string(a.K8S_POD_NAME))
	}
	w.Orchestrator, w.Namespace = OrchestratorCNI, "default"
	if testNamespace != "" {
		if err := checkName(types.ErrInvalidEnvironmentVariables, "CNI_TEST_NAMESPACE", testNamespace, dnsLabel, labelText, 63); err != nil {
			return w, err
		}
		w.Namespace = testNamespace
	}
	// In cni mode the container ID is part of the WorkloadEndpoint name: lower case only.
	if err := checkName(types.ErrInvalidEnvironmentVariables, "CNI_CONTAINERID (part of the WorkloadEndpoint name without K8S_POD_NAME)",
		containerID, dnsLabel, labelText, maxContainerID); err != nil {
		return w, err
	}
	w.Name = api.WorkloadEndpointName(node, OrchestratorCNI, containerID, ifName)
	w.HostVeth = CNIVethName(containerID)
	return w, nil
}

func (w Workload) k8s(namespace, pod string) (Workload, error) {
	if err := checkName(types.ErrInvalidEnvironmentVariables, "K8S_POD_NAMESPACE in CNI_ARGS", namespace, dnsLabel, labelText, 63); err != nil {
		return w, err
	}
	if err := checkName(types.ErrInvalidEnvironmentVariables, "K8S_POD_NAME in CNI_ARGS", pod, dnsSubdomain, subdomainText, 253); err != nil {
		return w, err
	}
	w.Orchestrator, w.Namespace, w.Pod = OrchestratorK8s, namespace, pod
	w.Name = api.WorkloadEndpointName(w.Node, OrchestratorK8s, pod, string(w.Endpoint))
	w.HostVeth = K8sVethName(namespace, pod)
	w.LegacyHandle = namespace + "." + pod
	return w, nil
}

// parseEndpoint validates CNI_IFNAME: a kernel interface name that is also a valid endpoint name.
func parseEndpoint(ifName string) (IfName, error) {
	n, err := ParseIfName("CNI_IFNAME", ifName)
	if err != nil {
		return "", err
	}
	if err := checkName(types.ErrInvalidEnvironmentVariables, "CNI_IFNAME", ifName, dnsSubdomain, subdomainText, 15); err != nil {
		return "", err
	}
	return n, nil
}

// checkIdentity validates the node name and CNI_CONTAINERID.
func checkIdentity(node, containerID string) error {
	if err := checkName(types.ErrInvalidNetworkConfig, "node name (nodename, nodename_file or hostname)", node, dnsSubdomain, subdomainText, 253); err != nil {
		return err
	}
	return checkName(types.ErrInvalidEnvironmentVariables, "CNI_CONTAINERID", containerID, containerIDRule, containerText, maxContainerID)
}

// CNIVethName is the host veth of a cni-mode container: "cali" + the first 11 characters of its ID.
func CNIVethName(containerID string) IfName {
	id := containerID
	if len(id) > 11 {
		id = id[:11]
	}
	return IfName("cali" + id)
}

// K8sVethName is the host veth of a pod: "cali" + hex(sha1("<namespace>.<pod>"))[:11].
func K8sVethName(namespace, pod string) IfName {
	sum := sha1.Sum([]byte(namespace + "." + pod))
	return IfName("cali" + hex.EncodeToString(sum[:])[:11])
}

// Attrs are the IPAM allocation attributes Project Calico's plugin records.
func (w Workload) Attrs(timestamp string) map[string]string {
	m := map[string]string{"node": w.Node, "timestamp": timestamp}
	if w.Orchestrator == OrchestratorK8s {
		m["namespace"], m["pod"] = w.Namespace, w.Pod
	}
	return m
}
