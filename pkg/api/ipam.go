package api

import "fmt"

// Affinity states of a host's claim on an IPAM block.
const (
	AffinityPending         = "pending"
	AffinityConfirmed       = "confirmed"
	AffinityPendingDeletion = "pendingDeletion"
)

// AllocationBlock is an IPAM block (/calico/ipam/v2/assignment/ipv4/block/<cidr with - for />).
type AllocationBlock struct {
	CIDR                        string                `json:"cidr"`
	Affinity                    *string               `json:"affinity"`
	AffinityClaimTime           string                `json:"affinity_claim_time,omitempty"`
	StrictAffinity              bool                  `json:"strictAffinity,omitempty"`
	Allocations                 []*int                `json:"allocations"`
	Unallocated                 []int                 `json:"unallocated"`
	Attributes                  []AllocationAttribute `json:"attributes"`
	SequenceNumber              uint64                `json:"sequenceNumber"`
	SequenceNumberForAllocation map[string]uint64     `json:"sequenceNumberForAllocation"`
	Deleted                     bool                  `json:"deleted"`
}

// AllocationAttribute records who holds an allocation.
type AllocationAttribute struct {
	HandleID            *string           `json:"handle_id,omitempty"`
	ActiveOwnerAttrs    map[string]string `json:"secondary,omitempty"`
	AlternateOwnerAttrs map[string]string `json:"alternateOwnerAttrs,omitempty"`
	ReleasedAt          string            `json:"releasedAt,omitempty"`
}

// BlockAffinity is a host's claim on a block (/calico/ipam/v2/host/<node>/ipv4/block/<cidr>).
type BlockAffinity struct {
	State   string `json:"state"`
	Deleted bool   `json:"deleted"`
}

// Validate checks the affinity's state: one of Project Calico's affinity states, or empty
// (written by releases before states existed; Project Calico treats it as confirmed).
func (a *BlockAffinity) Validate() error {
	switch a.State {
	case "", AffinityPending, AffinityConfirmed, AffinityPendingDeletion:
		return nil
	}
	return fmt.Errorf("invalid affinity state %q (want %s, %s or %s)", a.State, AffinityPending, AffinityConfirmed, AffinityPendingDeletion)
}

// IPAMHandle counts the addresses a handle holds in each block (/calico/ipam/v2/handle/<id>).
type IPAMHandle struct {
	Block   map[string]int `json:"block"`
	Deleted bool           `json:"deleted"`
}

// IPAMConfig is the IPAM configuration read by the IPAM library (/calico/ipam/v2/config).
type IPAMConfig struct {
	StrictAffinity     bool `json:"strict_affinity,omitempty"`
	AutoAllocateBlocks bool `json:"auto_allocate_blocks,omitempty"`
	MaxBlocksPerHost   int  `json:"maxBlocksPerHost,omitempty"`
	// Project Calico's KubeVirt and cooldown settings: calico-host's IPAM does not implement
	// them (calicoctl ipam configure refuses to set them) but keeps them as stored.
	KubeVirtVMAddressPersistence *string `json:"kubeVirtVMAddressPersistence,omitempty"`
	IPCooldownSeconds            int     `json:"ipCooldownSeconds,omitempty"`
}

// AgentStatus is felix's liveness report (/calico/felix/v2/<region>/host/<node>/status).
type AgentStatus struct {
	Time        string  `json:"time"`
	Uptime      float64 `json:"uptime"`
	FirstUpdate bool    `json:"first_update"`
}

// EndpointStatus is the status of one endpoint as reported by felix.
type EndpointStatus struct {
	Status string `json:"status"`
}

// Endpoint status values.
const (
	StatusUp    = "up"
	StatusDown  = "down"
	StatusError = "error"
)
