package topo

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
)

// pcState is what the simulated calico-node reads from the datastore on each sync.
type pcState struct {
	self  *api.Node
	nodes []*api.Node // every Node, sorted by name
	pools []*api.IPPool
	as    string // this node's AS number (the Node's, else BGPConfiguration default's, else 64512)
	mesh  bool   // nodeToNodeMeshEnabled (default true)
	// affinities are this host's block affinities per IP version, in key order (confd's `ls`).
	affinities map[int][]pcAffinity
	blocks     []pcBlock // every allocation block with a host affinity
}

type pcAffinity struct {
	cidr  netip.Prefix
	state string // "" (implicitly confirmed), confirmed, pending, pendingDeletion
}

type pcBlock struct {
	cidr netip.Prefix
	node string
}

func (pc *projectCalico) readState(ctx context.Context) (*pcState, error) {
	return readPCState(ctx, pc.h.f, pc.h.Name)
}

// readPCState reads what calico-node on host `name` would see.
func readPCState(ctx context.Context, f *Fabric, name string) (*pcState, error) {
	ds, err := f.Datastore()
	if err != nil {
		return nil, err
	}
	st := &pcState{as: "64512", mesh: true, affinities: map[int][]pcAffinity{}}
	if st.nodes, _, err = datastore.ListAs[*api.Node](ctx, ds, ""); err != nil {
		return nil, err
	}
	sort.Slice(st.nodes, func(i, j int) bool { return st.nodes[i].Name < st.nodes[j].Name })
	for _, n := range st.nodes {
		if n.Name == name {
			st.self = n
		}
	}
	if st.self == nil {
		return nil, fmt.Errorf("node %s is not registered", name)
	}
	if st.pools, _, err = datastore.ListAs[*api.IPPool](ctx, ds, ""); err != nil {
		return nil, err
	}
	if err := st.readBGPConfig(ctx, ds); err != nil {
		return nil, err
	}
	if err := st.readAffinities(ctx, ds); err != nil {
		return nil, err
	}
	return st, st.readBlocks(ctx, ds)
}

func (st *pcState) readBGPConfig(ctx context.Context, ds *datastore.Client) error {
	cfg, err := datastore.GetAs[*api.BGPConfiguration](ctx, ds, "", "default")
	switch {
	case datastore.IsNotFound(err):
	case err != nil:
		return err
	default:
		if cfg.Spec.ASNumber != nil {
			st.as = strconv.FormatUint(uint64(*cfg.Spec.ASNumber), 10)
		}
		if cfg.Spec.NodeToNodeMeshEnabled != nil {
			st.mesh = *cfg.Spec.NodeToNodeMeshEnabled
		}
	}
	if bgp := st.self.Spec.BGP; bgp != nil && bgp.ASNumber != nil {
		st.as = strconv.FormatUint(uint64(*bgp.ASNumber), 10)
	}
	return nil
}

func (st *pcState) readAffinities(ctx context.Context, ds *datastore.Client) error {
	kvs, _, err := ds.ListKV(ctx, datastore.HostPrefix+st.self.Name+"/", 0)
	if err != nil {
		return err
	}
	sort.Slice(kvs, func(i, j int) bool { return kvs[i].Key < kvs[j].Key })
	for _, kv := range kvs {
		_, cidrText, ok := datastore.ParseAffinityKey(kv.Key)
		if !ok {
			continue
		}
		cidr, err := netip.ParsePrefix(cidrText)
		if err != nil {
			return fmt.Errorf("%s: %w", kv.Key, err)
		}
		var aff api.BlockAffinity
		if err := json.Unmarshal(kv.Value, &aff); err != nil {
			return fmt.Errorf("%s: %w", kv.Key, err)
		}
		fam := familyOf(cidr.Addr())
		st.affinities[fam] = append(st.affinities[fam], pcAffinity{cidr: cidr, state: aff.State})
	}
	return nil
}

func (st *pcState) readBlocks(ctx context.Context, ds *datastore.Client) error {
	kvs, _, err := ds.ListKV(ctx, datastore.BlockPrefix, 0)
	if err != nil {
		return err
	}
	for _, kv := range kvs {
		var b api.AllocationBlock
		if err := json.Unmarshal(kv.Value, &b); err != nil {
			return fmt.Errorf("%s: %w", kv.Key, err)
		}
		cidr, err := netip.ParsePrefix(b.CIDR)
		if err != nil || b.Affinity == nil || !strings.HasPrefix(*b.Affinity, "host:") {
			continue
		}
		st.blocks = append(st.blocks, pcBlock{cidr: cidr, node: strings.TrimPrefix(*b.Affinity, "host:")})
	}
	return nil
}

// nodeAddr is a Node's BGP address of a family (without its prefix length), or invalid.
func nodeAddr(n *api.Node, fam int) netip.Addr {
	if n.Spec.BGP == nil {
		return netip.Addr{}
	}
	s := n.Spec.BGP.IPv4Address
	if fam == 6 {
		s = n.Spec.BGP.IPv6Address
	}
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Addr()
	}
	a, _ := netip.ParseAddr(s)
	return a
}

// poolOf returns the pool holding cidr, or nil.
func (st *pcState) poolOf(cidr netip.Prefix) *api.IPPool {
	for _, p := range st.pools {
		if pp, err := netip.ParsePrefix(p.Spec.CIDR); err == nil && pp.Overlaps(cidr) && pp.Bits() <= cidr.Bits() {
			return p
		}
	}
	return nil
}

func familyOf(a netip.Addr) int {
	if a.Is4() {
		return 4
	}
	return 6
}
