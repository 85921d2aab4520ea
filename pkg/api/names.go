package api

import (
	"fmt"
	"strings"
)

// WorkloadEndpointName builds a WorkloadEndpoint name from its parts, joining them with "-" and
// doubling every "-" inside a part, as Project Calico does: ("host-a", "cni", "0123", "eth0")
// -> "host--a-cni-0123-eth0".
func WorkloadEndpointName(node, orchestrator, workload, endpoint string) string {
	parts := []string{node, orchestrator, workload, endpoint}
	for i, p := range parts {
		parts[i] = strings.ReplaceAll(p, "-", "--")
	}
	return strings.Join(parts, "-")
}

// SplitWorkloadEndpointName splits a name made by WorkloadEndpointName back into its parts.
func SplitWorkloadEndpointName(name string) (node, orchestrator, workload, endpoint string, err error) {
	var parts []string
	var cur strings.Builder
	for i := 0; i < len(name); i++ {
		if name[i] != '-' {
			cur.WriteByte(name[i])
			continue
		}
		if i+1 < len(name) && name[i+1] == '-' {
			cur.WriteByte('-')
			i++
			continue
		}
		parts = append(parts, cur.String())
		cur.Reset()
	}
	parts = append(parts, cur.String())
	if len(parts) != 4 {
		return "", "", "", "", fmt.Errorf("workload endpoint name %q does not have 4 parts", name)
	}
	return parts[0], parts[1], parts[2], parts[3], nil
}

// WorkloadID is the workload identifier used in felix status keys: "<namespace>/<workload>".
func WorkloadID(namespace, workload string) string { return namespace + "/" + workload }

// PolicyNameWithoutDefaultTier strips the "default." prefix that default-tier policy names may carry.
func PolicyNameWithoutDefaultTier(name string) string {
	return strings.TrimPrefix(name, TierDefault+".")
}
