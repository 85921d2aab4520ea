package confd

import (
	"fmt"
	"net/netip"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// Inputs are the datastore objects the BGP model is computed from, by name. Affinities are
// this host's block affinities, by block CIDR. Workloads are the WorkloadEndpoints on this node,
// by namespace/name, and Profiles the profiles whose labelsToApply they inherit (both for BGP
// peering with local workloads). InvalidConfigs, InvalidFilters and InvalidPools are the
// BGPConfigurations, BGPFilters and IPPools stored under a key but not valid, by name: what went
// wrong, with the key (an invalid pool whose CIDR parses is in Pools too, as written).
type Inputs struct {
	BGPConfigs     map[string]*api.BGPConfiguration
	InvalidConfigs map[string]string
	Peers          map[string]*api.BGPPeer
	Filters        map[string]*api.BGPFilter
	InvalidFilters map[string]string
	Nodes          map[string]*api.Node
	Pools          map[string]*api.IPPool
	InvalidPools   map[string]string
	Affinities     map[string]*api.BlockAffinity
	Workloads      map[string]*api.WorkloadEndpoint
	Profiles       map[string]*api.Profile
}

// NewInputs returns empty Inputs.
func NewInputs() *Inputs {
	return &Inputs{
		BGPConfigs:     map[string]*api.BGPConfiguration{},
		InvalidConfigs: map[string]string{},
		Peers:          map[string]*api.BGPPeer{},
		Filters:        map[string]*api.BGPFilter{},
		InvalidFilters: map[string]string{},
		Nodes:          map[string]*api.Node{},
		Pools:          map[string]*api.IPPool{},
		InvalidPools:   map[string]string{},
		Affinities:     map[string]*api.BlockAffinity{},
		Workloads:      map[string]*api.WorkloadEndpoint{},
		Profiles:       map[string]*api.Profile{},
	}
}

// SyncerConfig is the syncer configuration of confd for node nodeName: its prefixes and Decode.
func SyncerConfig(nodeName string) syncer.Config {
	return syncer.Config{Prefixes: SyncPrefixes(nodeName), Decoder: Decode}
}

// Decode is syncer.DefaultDecoder, except that a BGPFilter or BGPConfiguration that is not valid
// is delivered as a *syncer.Invalid (without a Value: it is not used) rather than as absent: the
// sessions using a filter must stop exchanging routes rather than run without it, and a node
// whose BGP configuration is unknown must not fall back to the defaults (a full mesh in AS
// 64512). An IPPool that does not validate but whose CIDR parses is delivered as a
// *syncer.Invalid holding the pool as written, and used as written, as felix does: absent, its
// export and kernel rules would vanish (a pool with BGP export disabled would have this host's
// blocks in it exported).
func Decode(id datastore.ID, value []byte, modRevision int64) (any, error) {
	v, err := syncer.DefaultDecoder(id, value, modRevision)
	if err == nil {
		return v, nil
	}
	rid, ok := id.(datastore.ResourceID)
	if !ok {
		return v, err
	}
	switch rid.Kind.Kind {
	case "BGPFilter", "BGPConfiguration":
		return &syncer.Invalid{Err: err}, nil
	case "IPPool":
		if inv, _ := syncer.FailClosedDecoder(id, value, modRevision); inv != nil {
			if p, ok := inv.(*syncer.Invalid).Value.(*api.IPPool); ok && validCIDR(p.Spec.CIDR) {
				return &syncer.Invalid{Value: p, Err: err}, nil
			}
		}
	}
	return v, err
}

// validCIDR reports whether s parses as a CIDR.
func validCIDR(s string) bool {
	_, err := netip.ParsePrefix(s)
	return err == nil
}

// SyncPrefixes are the etcd prefixes confd watches for node nodeName.
func SyncPrefixes(nodeName string) []string {
	var out []string
	for _, plural := range []string{"bgpconfigurations", "bgppeers", "bgpfilters", "nodes", "ippools",
		"workloadendpoints", "profiles"} {
		out = append(out, datastore.ResourcePrefix+plural+"/")
	}
	return append(out, datastore.HostPrefix+nodeName+"/")
}

// Store keeps the Inputs of one node up to date from syncer messages.
type Store struct {
	nodeName string
	in       *Inputs
	// workloadPeers are the BGPPeers with a localWorkloadSelector (kept as BGPPeers arrive, so
	// that a workload or profile update does not scan every BGPPeer).
	workloadPeers map[string]bool
	// snapshot: a snapshot was applied (the inputs are complete as of some revision).
	snapshot bool
}

// NewStore returns an empty store for node nodeName.
func NewStore(nodeName string) *Store {
	return &Store{nodeName: nodeName, in: NewInputs(), workloadPeers: map[string]bool{}}
}

// HasSnapshot reports whether a snapshot was applied.
func (s *Store) HasSnapshot() bool { return s.snapshot }

// Inputs returns the current inputs (owned by the store: read them, do not keep them across Apply).
func (s *Store) Inputs() *Inputs { return s.in }

// Apply applies one syncer message: a snapshot replaces everything. It reports whether anything
// the model depends on was delivered (workloads of other nodes are not, nor workloads and
// profiles while no BGPPeer peers with local workloads).
func (s *Store) Apply(m syncer.Message) bool {
	if m.Snapshot {
		s.in, s.workloadPeers, s.snapshot = NewInputs(), map[string]bool{}, true
	}
	changed := m.Snapshot
	for _, u := range m.Updates {
		if s.apply(u) {
			changed = true
		}
	}
	return changed
}

// apply stores (or, for a nil value, deletes) one key; false: the key is not one of this node's
// inputs.
func (s *Store) apply(u syncer.Update) bool {
	switch id := u.ID.(type) {
	case datastore.AffinityID:
		if id.Host == s.nodeName { // other hosts' affinities are delivered but not kept
			setOrDelete(s.in.Affinities, id.CIDR.String(), u.Value)
		}
		return true
	case datastore.ResourceID:
		return s.applyResource(id, u.Value)
	}
	return true
}

// applyResource stores (or deletes) one of the v3 resources the model is computed from.
func (s *Store) applyResource(id datastore.ResourceID, v any) bool {
	switch id.Kind.Kind {
	case "BGPConfiguration":
		setOrDelete(s.in.BGPConfigs, id.Name, v)
		setInvalid(s.in.InvalidConfigs, id, v)
	case "BGPPeer":
		setOrDelete(s.in.Peers, id.Name, v)
		if p := s.in.Peers[id.Name]; p != nil && p.Spec.LocalWorkloadSelector != "" {
			s.workloadPeers[id.Name] = true
		} else {
			delete(s.workloadPeers, id.Name)
		}
	case "BGPFilter":
		setOrDelete(s.in.Filters, id.Name, v)
		setInvalid(s.in.InvalidFilters, id, v)
	case "Node":
		setOrDelete(s.in.Nodes, id.Name, v)
	case "IPPool":
		pool := v
		if bad, ok := v.(*syncer.Invalid); ok {
			pool = bad.Value
		}
		setOrDelete(s.in.Pools, id.Name, pool)
		setInvalid(s.in.InvalidPools, id, v)
	case "Profile":
		setOrDelete(s.in.Profiles, id.Name, v)
		return s.workloadPeering()
	case "WorkloadEndpoint":
		return s.applyWorkload(id, v) && s.workloadPeering()
	}
	return true
}

// workloadPeering reports whether a BGPPeer peers with local workloads: only then do workloads
// and profiles change the model (a BGPPeer that starts to is an update of its own).
func (s *Store) workloadPeering() bool { return len(s.workloadPeers) > 0 }

// applyWorkload keeps a WorkloadEndpoint if it is on this node (a workload that moves to another
// node is forgotten). It reports whether this node's workloads changed.
func (s *Store) applyWorkload(id datastore.ResourceID, v any) bool {
	key := id.Namespace + "/" + id.Name
	if w, ok := v.(*api.WorkloadEndpoint); ok && w != nil && w.Spec.Node == s.nodeName {
		s.in.Workloads[key] = w
		return true
	}
	_, had := s.in.Workloads[key]
	delete(s.in.Workloads, key)
	return had
}

// setInvalid records (or forgets) that the object named id is stored but not valid.
func setInvalid(m map[string]string, id datastore.ResourceID, v any) {
	delete(m, id.Name)
	if bad, ok := v.(*syncer.Invalid); ok {
		m[id.Name] = fmt.Sprintf("%s %s (key %s) is invalid: %v", id.Kind.Kind, id.Name, id.Key(), bad.Err)
	}
}

// setOrDelete stores v under k when it has type T, and deletes k otherwise (nil = deleted or
// invalid).
func setOrDelete[T any](m map[string]*T, k string, v any) {
	if t, ok := v.(*T); ok && t != nil {
		m[k] = t
		return
	}
	delete(m, k)
}
