package confd

import (
	"fmt"
	"maps"
	"net/netip"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/selector"
)

// PeerLocalWorkload is the type of a session with a workload on this node (BGPPeer
// localWorkloadSelector), as it prefixes BIRD protocol names: Local_Workload_10_65_0_5.
const PeerLocalWorkload = "Local_Workload"

// localWorkload is a WorkloadEndpoint on this node that a BGPPeer's localWorkloadSelector
// selects: BIRD peers with its first address of each family.
type localWorkload struct {
	key string        // namespace/name
	ip  [2]netip.Addr // by family index (invalid: none)
}

// pairWorkloads pairs this node's workloads with BGPPeers, as Project Calico's felix does: among
// the BGPPeers that apply to this node (node, nodeSelector, or neither) and whose
// localWorkloadSelector matches the workload's labels (its own, then its profiles'
// labelsToApply), the first by name peers with it; the others do not. The result is by BGPPeer
// name, each list in workload key order.
func (b *builder) pairWorkloads() map[string][]localWorkload {
	out := map[string][]localWorkload{}
	if b.local == nil || len(b.in.Workloads) == 0 {
		return out
	}
	var sels []namedSelector
	for _, name := range sortedKeys(b.in.Peers) {
		p := b.in.Peers[name]
		if p.Spec.LocalWorkloadSelector == "" || !b.appliesToLocal(p) {
			continue
		}
		s, err := selector.Parse(p.Spec.LocalWorkloadSelector)
		if err != nil {
			b.warn("BGPPeer %s: bad localWorkloadSelector %q: %v; it peers with no workload", name, p.Spec.LocalWorkloadSelector, err)
			continue
		}
		sels = append(sels, namedSelector{name, s})
	}
	for _, key := range sortedKeys(b.in.Workloads) {
		w := b.in.Workloads[key]
		if w.Spec.Node != b.local.name {
			continue
		}
		labels := b.workloadLabels(w)
		for _, s := range sels {
			if !s.sel.EvaluateMap(labels) {
				continue
			}
			if lw, ok := b.workloadAddrs(key, w, s.name); ok {
				out[s.name] = append(out[s.name], lw)
			}
			break // the first matching BGPPeer is the workload's only one
		}
	}
	return out
}

type namedSelector struct {
	name string
	sel  *selector.Selector
}

// workloadLabels are a workload's labels, then the labelsToApply of its profiles in order (a
// label it sets itself wins).
func (b *builder) workloadLabels(w *api.WorkloadEndpoint) map[string]string {
	labels := maps.Clone(w.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	for _, name := range w.Spec.Profiles {
		if prof := b.in.Profiles[name]; prof != nil {
			for k, v := range prof.Spec.LabelsToApply {
				if _, set := labels[k]; !set {
					labels[k] = v
				}
			}
		}
	}
	return labels
}

// workloadAddrs finds the first address of each family in a workload's ipNetworks. A workload
// with an entry that is not an address or CIDR, or whose first address of a family BIRD cannot
// peer with, gets no session (a warning names it).
func (b *builder) workloadAddrs(key string, w *api.WorkloadEndpoint, peer string) (localWorkload, bool) {
	lw := localWorkload{key: key}
	for _, n := range w.Spec.IPNetworks {
		ip, err := parseAddr(n)
		if err != nil {
			b.warn("BGPPeer %s: workload %s has a bad ipNetworks entry %q; no session with it", peer, key, n)
			return localWorkload{}, false
		}
		if fi := familyIndex(ip); !lw.ip[fi].IsValid() {
			lw.ip[fi] = ip
		}
	}
	for fi, ip := range lw.ip {
		switch {
		case !ip.IsValid():
		case !sessionAddr(ip):
			b.warn("BGPPeer %s: workload %s: BIRD cannot peer with %s; no session with it", peer, key, ip)
			lw.ip[fi] = netip.Addr{}
		case b.isNodeAddr(ip):
			b.warn("BGPPeer %s: workload %s claims %s, a node's BGP address; no session with it", peer, key, ip)
			lw.ip[fi] = netip.Addr{}
		}
	}
	if !lw.ip[0].IsValid() && !lw.ip[1].IsValid() {
		b.warn("BGPPeer %s: workload %s has no address yet; no session with it", peer, key)
		return localWorkload{}, false
	}
	return lw, true
}

// isNodeAddr reports whether ip is the BGP address of a node: a workload claiming it gets no
// session, so that it cannot replace or double that node's mesh or BGPPeer session.
func (b *builder) isNodeAddr(ip netip.Addr) bool {
	for _, n := range b.nodes {
		if n.ip[familyIndex(ip)] == ip {
			return true
		}
	}
	return false
}

// workloadTargets are the workloads a BGPPeer peers with in family fi.
func (b *builder) workloadTargets(p *api.BGPPeer, fi int) []target {
	var out []target
	for _, w := range b.workloads[p.Name] {
		if ip := w.ip[fi]; ip.IsValid() {
			out = append(out, target{ip: ip, as: b.peerAS(p), workload: w.key})
		}
	}
	return out
}

// workloadPeer is the session with a local workload. As in Project Calico, it takes from the
// BGPPeer only asNumber, localASNumber and filters: the workload connects (BIRD is passive)
// to this node's peering address, so no source address is set, and the BGPPeer's other
// session settings (password, timers, next hop, TTL security) do not apply. Unlike Project
// Calico's, the routes a workload sends never get a priority above the normal one (CapPriority).
func (b *builder) workloadPeer(c candidate, funcs []FilterFunc) (Peer, bool) {
	what := fmt.Sprintf("BGPPeer %s: local workload %s", c.peer.Name, c.t.workload)
	name, err := peerName(PeerLocalWorkload, c.t.ip, 0)
	if err != nil {
		b.warn("%s: no session with %s: %v", what, c.t.ip, err)
		return Peer{}, false
	}
	p := Peer{Name: name, Type: PeerLocalWorkload, Comment: newComment(what), IP: c.t.ip, AS: c.t.as, Passive: true, CapPriority: true}
	if n := c.peer.Spec.LocalASNumber; n != nil {
		p.LocalAS = ASN(*n)
	}
	if p.AS == p.localAS(b.local.as) && b.local.clusterID.IsValid() {
		p.RRClient, p.RRClusterID = true, b.local.clusterID
	}
	b.peerFilterCalls(&p, c.peer.Name, c.peer.Spec.Filters, funcs)
	return p, true
}
