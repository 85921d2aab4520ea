package api

// WorkloadEndpoint is a container's or VM's interface.
type WorkloadEndpoint struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       WorkloadEndpointSpec `json:"spec"`
}

// WorkloadEndpointSpec is the specification of a WorkloadEndpoint.
type WorkloadEndpointSpec struct {
	Orchestrator               string                 `json:"orchestrator,omitempty"`
	Workload                   string                 `json:"workload,omitempty"`
	Node                       string                 `json:"node,omitempty"`
	ContainerID                string                 `json:"containerID,omitempty"`
	Pod                        string                 `json:"pod,omitempty"`
	Endpoint                   string                 `json:"endpoint,omitempty"`
	ServiceAccountName         string                 `json:"serviceAccountName,omitempty"`
	IPNetworks                 []string               `json:"ipNetworks,omitempty"`
	IPNATs                     []IPNAT                `json:"ipNATs,omitempty"`
	IPv4Gateway                string                 `json:"ipv4Gateway,omitempty"`
	IPv6Gateway                string                 `json:"ipv6Gateway,omitempty"`
	Profiles                   []string               `json:"profiles,omitempty"`
	InterfaceName              string                 `json:"interfaceName,omitempty"`
	MAC                        string                 `json:"mac,omitempty"`
	Ports                      []WorkloadEndpointPort `json:"ports,omitempty"`
	AllowSpoofedSourcePrefixes []string               `json:"allowSpoofedSourcePrefixes,omitempty"`
	QoSControls                *QoSControls           `json:"qosControls,omitempty"`
	// AllowedIPs is written by networking-calico (allowed address pairs) and read only by its DHCP agent.
	AllowedIPs []string `json:"allowedIps,omitempty"`
}

// IPNAT is a 1:1 NAT (an OpenStack floating IP).
type IPNAT struct {
	InternalIP string `json:"internalIP"`
	ExternalIP string `json:"externalIP"`
}

// WorkloadEndpointPort is a named port of a workload.
type WorkloadEndpointPort struct {
	Name     string   `json:"name"`
	Protocol Protocol `json:"protocol"`
	Port     uint16   `json:"port"`
	HostPort uint16   `json:"hostPort"`
	HostIP   string   `json:"hostIP"`
}

// QoSControls are bandwidth and packet-rate limits of a workload.
type QoSControls struct {
	IngressBandwidth      int64 `json:"ingressBandwidth,omitempty"`
	EgressBandwidth       int64 `json:"egressBandwidth,omitempty"`
	IngressBurst          int64 `json:"ingressBurst,omitempty"`
	EgressBurst           int64 `json:"egressBurst,omitempty"`
	IngressPeakrate       int64 `json:"ingressPeakrate,omitempty"`
	EgressPeakrate        int64 `json:"egressPeakrate,omitempty"`
	IngressMinburst       int64 `json:"ingressMinburst,omitempty"`
	EgressMinburst        int64 `json:"egressMinburst,omitempty"`
	IngressPacketRate     int64 `json:"ingressPacketRate,omitempty"`
	EgressPacketRate      int64 `json:"egressPacketRate,omitempty"`
	IngressPacketBurst    int64 `json:"ingressPacketBurst,omitempty"`
	EgressPacketBurst     int64 `json:"egressPacketBurst,omitempty"`
	IngressMaxConnections int64 `json:"ingressMaxConnections,omitempty"`
	EgressMaxConnections  int64 `json:"egressMaxConnections,omitempty"`
	DSCP                  *DSCP `json:"dscp,omitempty"`
}

// HostEndpoint is an interface of a host that policy applies to ("*" = all of the host's interfaces).
type HostEndpoint struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       HostEndpointSpec `json:"spec"`
}

// HostEndpointSpec is the specification of a HostEndpoint.
type HostEndpointSpec struct {
	Node          string         `json:"node,omitempty"`
	InterfaceName string         `json:"interfaceName,omitempty"`
	ExpectedIPs   []string       `json:"expectedIPs,omitempty"`
	Profiles      []string       `json:"profiles,omitempty"`
	Ports         []EndpointPort `json:"ports,omitempty"`
}

// EndpointPort is a named port of a host endpoint.
type EndpointPort struct {
	Name     string   `json:"name"`
	Protocol Protocol `json:"protocol"`
	Port     uint16   `json:"port"`
}

// LiveMigration is written by networking-calico while a VM port moves between hosts.
type LiveMigration struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       LiveMigrationSpec `json:"spec"`
}

// LiveMigrationSpec names the source and target of a live migration.
type LiveMigrationSpec struct {
	Source *LiveMigrationSource `json:"source,omitempty"`
	Target *LiveMigrationTarget `json:"target,omitempty"`
}

// LiveMigrationSource identifies the migrating workload (KubeVirt: one object per VM) or workload
// endpoint (OpenStack: one object per port); exactly one is set.
type LiveMigrationSource struct {
	Workload         *WorkloadIdentifier          `json:"workload,omitempty"`
	WorkloadEndpoint *WorkloadEndpointIdentifiers `json:"workloadEndpoint,omitempty"`
}

// LiveMigrationTarget identifies the target pod or VM by selector (KubeVirt) or the target
// workload endpoint (OpenStack); exactly one is set.
type LiveMigrationTarget struct {
	Selector         *string                      `json:"selector,omitempty"`
	WorkloadEndpoint *WorkloadEndpointIdentifiers `json:"workloadEndpoint,omitempty"`
}

// WorkloadIdentifier identifies a pod or VM, possibly with several interfaces.
type WorkloadIdentifier struct {
	Hostname       string `json:"hostname,omitempty"`
	OrchestratorID string `json:"orchestratorID,omitempty"`
	WorkloadID     string `json:"workloadID,omitempty"`
}

// WorkloadEndpointIdentifiers identify a workload endpoint by its parts.
type WorkloadEndpointIdentifiers struct {
	Hostname       string `json:"hostname,omitempty"`
	OrchestratorID string `json:"orchestratorID,omitempty"`
	WorkloadID     string `json:"workloadID,omitempty"`
	EndpointID     string `json:"endpointID,omitempty"`
}
