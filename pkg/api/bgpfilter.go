package api

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

// BGPFilterRule is one filter rule: match criteria, a terminal action and, for Accept, route
// modifications. Project Calico has one type per family (BGPFilterRuleV4/V6) with identical
// JSON; validation applies the family's limits.
type BGPFilterRule struct {
	CIDR          string                   `json:"cidr,omitempty"`
	PrefixLength  *BGPFilterPrefixLength   `json:"prefixLength,omitempty"`
	Source        string                   `json:"source,omitempty"`
	Interface     string                   `json:"interface,omitempty"`
	MatchOperator string                   `json:"matchOperator,omitempty"`
	PeerType      string                   `json:"peerType,omitempty"`
	Communities   *BGPFilterCommunityMatch `json:"communities,omitempty"`
	ASPathPrefix  []ASNumber               `json:"asPathPrefix,omitempty"`
	Priority      *int                     `json:"priority,omitempty"`
	Action        string                   `json:"action"`
	Operations    []BGPFilterOperation     `json:"operations,omitempty"`
}

// BGPFilterPrefixLength bounds the prefix length a filter rule matches.
type BGPFilterPrefixLength struct {
	Min *int `json:"min,omitempty"`
	Max *int `json:"max,omitempty"`
}

// BGPFilterCommunityMatch matches routes carrying a BGP community ("aa:nn" or "aa:nn:mm").
type BGPFilterCommunityMatch struct {
	Values []string `json:"values"`
}

// BGPFilterOperation is one route modification; exactly one field is set.
type BGPFilterOperation struct {
	AddCommunity  *BGPFilterAddCommunity  `json:"addCommunity,omitempty"`
	PrependASPath *BGPFilterPrependASPath `json:"prependASPath,omitempty"`
	SetPriority   *BGPFilterSetPriority   `json:"setPriority,omitempty"`
}

// BGPFilterAddCommunity adds a BGP community to the route.
type BGPFilterAddCommunity struct {
	Value string `json:"value"`
}

// BGPFilterPrependASPath prepends AS numbers to the route's AS path.
type BGPFilterPrependASPath struct {
	Prefix []ASNumber `json:"prefix"`
}

// BGPFilterSetPriority sets the route's priority (felix's route metric units).
type BGPFilterSetPriority struct {
	Value int `json:"value"`
}
