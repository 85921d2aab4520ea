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
	ServiceLoadBalancerAggregation string                `json:"serviceLoadBalancerAggregation,omitempty"`
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

// SecretKeyRef names a key of a secret.
type SecretKeyRef struct {
	Name string `json:"name"`
	Key  string `json:"key"`
}

// BGPPeer is an explicit BGP peering.
type BGPPeer struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       BGPPeerSpec `json:"spec"`
}

// BGPPeerSpec is the specification of a BGPPeer.
type BGPPeerSpec struct {
	Node                     string       `json:"node,omitempty"`
	PeerIP                   string       `json:"peerIP,omitempty"`
	ASNumber                 *ASNumber    `json:"asNumber,omitempty"`
	NodeSelector             string       `json:"nodeSelector,omitempty"`
	PeerSelector             string       `json:"peerSelector,omitempty"`
	Password                 *BGPPassword `json:"password,omitempty"`
	SourceAddress            string       `json:"sourceAddress,omitempty"`
	MaxRestartTime           *Duration    `json:"maxRestartTime,omitempty"`
	NumAllowedLocalASNumbers *int         `json:"numAllowedLocalASNumbers,omitempty"`
	TTLSecurity              *int         `json:"ttlSecurity,omitempty"`
	KeepOriginalNextHop      bool         `json:"keepOriginalNextHop,omitempty"`
	NextHopMode              string       `json:"nextHopMode,omitempty"`
	ReachableBy              string       `json:"reachableBy,omitempty"`
	Filters                  []string     `json:"filters,omitempty"`
	LocalWorkloadSelector    string       `json:"localWorkloadSelector,omitempty"`
	ReversePeering           string       `json:"reversePeering,omitempty"`
}

// BGPFilter is a set of import and export rules for BGP peers.
type BGPFilter struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       BGPFilterSpec `json:"spec"`
}

// BGPFilterSpec is the specification of a BGPFilter.
type BGPFilterSpec struct {
	ExportV4 []BGPFilterRule `json:"exportV4,omitempty"`
	ImportV4 []BGPFilterRule `json:"importV4,omitempty"`
	ExportV6 []BGPFilterRule `json:"exportV6,omitempty"`
	ImportV6 []BGPFilterRule `json:"importV6,omitempty"`
}

// BGPFilterRule is one filter rule.
type BGPFilterRule struct {
	CIDR          string                 `json:"cidr,omitempty"`
	PrefixLength  *BGPFilterPrefixLength `json:"prefixLength,omitempty"`
	MatchOperator string                 `json:"matchOperator,omitempty"`
	Source        string                 `json:"source,omitempty"`
	Interface     string                 `json:"interface,omitempty"`
	Action        string                 `json:"action"`
}

// BGPFilterPrefixLength bounds the prefix length a filter rule matches.
type BGPFilterPrefixLength struct {
	Min *int `json:"min,omitempty"`
	Max *int `json:"max,omitempty"`
}
