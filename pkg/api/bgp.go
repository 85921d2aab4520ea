package api

// BGPConfiguration holds BGP settings: `default` is global, `node.<name>` overrides per node.
type BGPConfiguration struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       BGPConfigurationSpec `json:"spec"`
}

// BGPConfigurationSpec is the specification of a BGPConfiguration.
type BGPConfigurationSpec struct {
	LogSeverityScreen              string                `json:"logSeverityScreen,omitempty"`
	NodeToNodeMeshEnabled          *bool                 `json:"nodeToNodeMeshEnabled,omitempty"`
	ASNumber                       *ASNumber             `json:"asNumber,omitempty"`
	ServiceLoadBalancerIPs         []ServiceIPBlock      `json:"serviceLoadBalancerIPs,omitempty"`
	ServiceExternalIPs             []ServiceIPBlock      `json:"serviceExternalIPs,omitempty"`
	ServiceClusterIPs              []ServiceIPBlock      `json:"serviceClusterIPs,omitempty"`
	ListenPort                     uint16                `json:"listenPort,omitempty"`
	Communities                    []Community           `json:"communities,omitempty"`
	PrefixAdvertisements           []PrefixAdvertisement `json:"prefixAdvertisements,omitempty"`
	NodeMeshPassword               *BGPPassword          `json:"nodeMeshPassword,omitempty"`
	NodeMeshMaxRestartTime         *Duration             `json:"nodeMeshMaxRestartTime,omitempty"`
	BindMode                       string                `json:"bindMode,omitempty"`
	IgnoredInterfaces              []string              `json:"ignoredInterfaces,omitempty"`
	LocalWorkloadPeeringIPV4       string                `json:"localWorkloadPeeringIPV4,omitempty"`
	LocalWorkloadPeeringIPV6       string                `json:"localWorkloadPeeringIPV6,omitempty"`
	ServiceLoadBalancerAggregation *string               `json:"serviceLoadBalancerAggregation,omitempty"`
	ProgramClusterRoutes           *string               `json:"programClusterRoutes,omitempty"`
	IPv4NormalRoutePriority        *int                  `json:"ipv4NormalRoutePriority,omitempty"`
	IPv6NormalRoutePriority        *int                  `json:"ipv6NormalRoutePriority,omitempty"`
}

// ServiceIPBlock is a CIDR to advertise.
type ServiceIPBlock struct {
	CIDR string `json:"cidr,omitempty"`
}

// Community is a named BGP community value ("aa:nn" or large "aa:nn:mm").
type Community struct {
	Name  string `json:"name,omitempty"`
	Value string `json:"value,omitempty"`
}

// PrefixAdvertisement attaches communities to a CIDR.
type PrefixAdvertisement struct {
	CIDR        string   `json:"cidr,omitempty"`
	Communities []string `json:"communities,omitempty"`
}

// BGPPassword refers to a secret holding a BGP password. On bare metal the secret key ref names
// a file under the configured secrets directory.
type BGPPassword struct {
	SecretKeyRef *SecretKeyRef `json:"secretKeyRef,omitempty"`
}

// SecretKeyRef names a key of a secret (Kubernetes' SecretKeySelector).
type SecretKeyRef struct {
	Name     string `json:"name,omitempty"`
	Key      string `json:"key"`
	Optional *bool  `json:"optional,omitempty"`
}

// BGPPeer is an explicit BGP peering.
type BGPPeer struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       BGPPeerSpec `json:"spec"`
}

// BGPPeerSpec is the specification of a BGPPeer. NextHopMode and ReversePeering are pointers in
// Project Calico; an explicit empty value is invalid there, so plain strings round-trip every
// valid object.
type BGPPeerSpec struct {
	Node                     string       `json:"node,omitempty"`
	NodeSelector             string       `json:"nodeSelector,omitempty"`
	PeerIP                   string       `json:"peerIP,omitempty"`
	ASNumber                 *ASNumber    `json:"asNumber,omitempty"`
	LocalASNumber            *ASNumber    `json:"localASNumber,omitempty"`
	PeerSelector             string       `json:"peerSelector,omitempty"`
	KeepOriginalNextHop      bool         `json:"keepOriginalNextHop,omitempty"`
	NextHopMode              string       `json:"nextHopMode,omitempty"`
	Password                 *BGPPassword `json:"password,omitempty"`
	SourceAddress            string       `json:"sourceAddress,omitempty"`
	MaxRestartTime           *Duration    `json:"maxRestartTime,omitempty"`
	KeepaliveTime            *Duration    `json:"keepaliveTime,omitempty"`
	NumAllowedLocalASNumbers *int         `json:"numAllowedLocalASNumbers,omitempty"`
	TTLSecurity              *int         `json:"ttlSecurity,omitempty"`
	ReachableBy              string       `json:"reachableBy,omitempty"`
	Filters                  []string     `json:"filters,omitempty"`
	LocalWorkloadSelector    string       `json:"localWorkloadSelector,omitempty"`
	ReversePeering           string       `json:"reversePeering,omitempty"`
}
