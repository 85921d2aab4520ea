package api

// Encapsulation modes of an IP pool.
const (
	EncapNever       = "Never"
	EncapAlways      = "Always"
	EncapCrossSubnet = "CrossSubnet"
)

// IPPool uses.
const (
	UseWorkload     = "Workload"
	UseTunnel       = "Tunnel"
	UseLoadBalancer = "LoadBalancer"
)

// IPPool is a range of addresses that IPAM allocates from.
type IPPool struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       IPPoolSpec    `json:"spec"`
	Status     *IPPoolStatus `json:"status,omitempty"`
}

// IPPoolSpec is the specification of an IPPool. AssignmentMode is a pointer in Project Calico;
// an explicit empty value is invalid there, so a plain string round-trips every valid pool.
type IPPoolSpec struct {
	CIDR              string   `json:"cidr"`
	VXLANMode         string   `json:"vxlanMode,omitempty"`
	IPIPMode          string   `json:"ipipMode,omitempty"`
	NATOutgoing       bool     `json:"natOutgoing,omitempty"`
	Disabled          bool     `json:"disabled,omitempty"`
	DisableBGPExport  bool     `json:"disableBGPExport,omitempty"`
	BlockSize         int      `json:"blockSize,omitempty"`
	NodeSelector      string   `json:"nodeSelector,omitempty"`
	NamespaceSelector string   `json:"namespaceSelector,omitempty"`
	AllowedUses       []string `json:"allowedUses,omitempty"`
	AssignmentMode    string   `json:"assignmentMode,omitempty"`
}

// IPPoolStatus is the status Project Calico's controllers report on a pool.
type IPPoolStatus struct {
	Conditions []Condition `json:"conditions,omitempty"`
}

// AllowsUse reports whether the pool may be used for the given purpose (no allowedUses = all).
func (s *IPPoolSpec) AllowsUse(use string) bool {
	if len(s.AllowedUses) == 0 {
		return use != UseLoadBalancer
	}
	for _, u := range s.AllowedUses {
		if u == use {
			return true
		}
	}
	return false
}

// IPAMConfiguration is the v3 IPAM configuration object.
type IPAMConfiguration struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       IPAMConfigurationSpec `json:"spec"`
}

// IPAMConfigurationSpec is the specification of an IPAMConfiguration.
type IPAMConfigurationSpec struct {
	StrictAffinity               bool    `json:"strictAffinity"`
	AutoAllocateBlocks           bool    `json:"autoAllocateBlocks"`
	MaxBlocksPerHost             int     `json:"maxBlocksPerHost,omitempty"`
	MinIPReclaimAgeSeconds       *int32  `json:"minIPReclaimAgeSeconds,omitempty"`
	KubeVirtVMAddressPersistence *string `json:"kubeVirtVMAddressPersistence,omitempty"`
	IPCooldownSeconds            int32   `json:"ipCooldownSeconds,omitempty"`
}

// IPReservation keeps addresses out of IPAM's new allocations (existing ones are not released).
type IPReservation struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       IPReservationSpec `json:"spec"`
}

// IPReservationSpec lists the reserved CIDRs (a bare address is a /32 or /128).
type IPReservationSpec struct {
	ReservedCIDRs []string `json:"reservedCIDRs,omitempty"`
}
