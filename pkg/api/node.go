package api

// Node is a host running calico-host (or Project Calico's calico/node).
type Node struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       NodeSpec   `json:"spec"`
	Status     NodeStatus `json:"status"`
}

// NodeSpec is the specification of a Node.
type NodeSpec struct {
	BGP                  *NodeBGPSpec    `json:"bgp,omitempty"`
	IPv4VXLANTunnelAddr  string          `json:"ipv4VXLANTunnelAddr,omitempty"`
	VXLANTunnelMACAddr   string          `json:"vxlanTunnelMACAddr,omitempty"`
	IPv6VXLANTunnelAddr  string          `json:"ipv6VXLANTunnelAddr,omitempty"`
	VXLANTunnelMACAddrV6 string          `json:"vxlanTunnelMACAddrV6,omitempty"`
	OrchRefs             []OrchRef       `json:"orchRefs,omitempty"`
	Wireguard            *NodeWireguard  `json:"wireguard,omitempty"`
	Addresses            []NodeAddress   `json:"addresses,omitempty"`
	Interfaces           []NodeInterface `json:"interfaces,omitempty"`
}

// NodeBGPSpec holds the BGP settings of a Node.
type NodeBGPSpec struct {
	ASNumber                *ASNumber `json:"asNumber,omitempty"`
	IPv4Address             string    `json:"ipv4Address,omitempty"`
	IPv6Address             string    `json:"ipv6Address,omitempty"`
	IPv4IPIPTunnelAddr      string    `json:"ipv4IPIPTunnelAddr,omitempty"`
	RouteReflectorClusterID string    `json:"routeReflectorClusterID,omitempty"`
}

// OrchRef links a Node to an orchestrator's node.
type OrchRef struct {
	Orchestrator string `json:"orchestrator"`
	NodeName     string `json:"nodeName,omitempty"`
}

// NodeWireguard holds WireGuard settings (kept for round trips).
type NodeWireguard struct {
	InterfaceIPv4Address string `json:"interfaceIPv4Address,omitempty"`
	InterfaceIPv6Address string `json:"interfaceIPv6Address,omitempty"`
}

// NodeAddress is one address of a Node.
type NodeAddress struct {
	Address string `json:"address"`
	Type    string `json:"type,omitempty"`
}

// NodeInterface lists the addresses of one host interface.
type NodeInterface struct {
	Name      string   `json:"name,omitempty"`
	Addresses []string `json:"addresses,omitempty"`
}

// NodeStatus is the status of a Node.
type NodeStatus struct {
	WireguardPublicKey   string   `json:"wireguardPublicKey,omitempty"`
	WireguardPublicKeyV6 string   `json:"wireguardPublicKeyV6,omitempty"`
	PodCIDRs             []string `json:"podCIDRs,omitempty"`
}

// ClusterInformation holds cluster-wide facts; `default` is the only instance.
type ClusterInformation struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       ClusterInformationSpec `json:"spec"`
}

// ClusterInformationSpec is the specification of ClusterInformation.
type ClusterInformationSpec struct {
	ClusterGUID    string `json:"clusterGUID,omitempty"`
	ClusterType    string `json:"clusterType,omitempty"`
	CalicoVersion  string `json:"calicoVersion,omitempty"`
	DatastoreReady *bool  `json:"datastoreReady,omitempty"`
	Variant        string `json:"variant,omitempty"`
}
