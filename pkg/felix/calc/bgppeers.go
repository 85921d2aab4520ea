package calc

import (
	"maps"
	"net/netip"
	"slices"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/selector"
)

// bgpPeerCalc finds this host's workload endpoints that are local BGP peers, as Project
// Calico's felix does (its active BGP peer calculator): a BGPPeer applies to this host when its
// node is this host, or, without a node, when its nodeSelector matches this host's labels; its
// localWorkloadSelector then selects local workload endpoints (their labels with the profiles'
// labelsToApply). A workload matched by several BGPPeers belongs to the first by name. Such an
// endpoint gets BGPConfiguration default's localWorkloadPeeringIPV4/IPV6 as host-side
// addresses, so that it can reach BIRD there.
type bgpPeerCalc struct {
	host       string
	log        zerolog.Logger
	index      *labelIndex // local workload endpoints against the applying localWorkloadSelectors
	peers      map[string]*bgpPeerInfo
	nodeLabels map[string]string
	matches    map[string][]string // item ID -> matching BGPPeer names, sorted
	addrs      []netip.Addr        // peering addresses (IPv4 first), valid ones only
	onChange   func(itemID string) // an endpoint's peer or addresses changed
}

// bgpPeerInfo is what the calculator needs of a BGPPeer; a selector that does not parse is nil
// (the BGPPeer then selects nothing).
type bgpPeerInfo struct {
	node             string
	nodeSel, workSel *selector.Selector
}

func newBGPPeerCalc(host string, log zerolog.Logger, onChange func(string)) *bgpPeerCalc {
	c := &bgpPeerCalc{host: host, log: log, peers: map[string]*bgpPeerInfo{}, matches: map[string][]string{},
		onChange: onChange}
	c.index = newLabelIndex(c.onMatch)
	return c
}

// setPeer records a BGPPeer (nil: deleted).
func (c *bgpPeerCalc) setPeer(name string, p *api.BGPPeer) {
	if p == nil {
		delete(c.peers, name)
		c.index.DeleteSelector(name)
		return
	}
	info := &bgpPeerInfo{node: p.Spec.Node}
	info.nodeSel = c.parse(name, "nodeSelector", p.Spec.NodeSelector)
	if p.Spec.LocalWorkloadSelector != "" {
		info.workSel = c.parse(name, "localWorkloadSelector", p.Spec.LocalWorkloadSelector)
	}
	c.peers[name] = info
	c.refresh(name, info)
}

func (c *bgpPeerCalc) parse(name, field, s string) *selector.Selector {
	sel, err := selector.Parse(s)
	if err != nil {
		c.log.Error().Err(err).Str("bgpPeer", name).Str("field", field).
			Msg("BGPPeer has a selector that does not parse; it selects no local workload")
		return nil
	}
	return sel
}

// refresh files or unfiles a BGPPeer's localWorkloadSelector as it applies to this host or not.
func (c *bgpPeerCalc) refresh(name string, p *bgpPeerInfo) {
	if p.workSel == nil || !c.applies(p) {
		c.index.DeleteSelector(name)
		return
	}
	c.index.UpdateSelector(name, p.workSel)
}

func (c *bgpPeerCalc) applies(p *bgpPeerInfo) bool {
	if p.node != "" {
		return p.node == c.host
	}
	return p.nodeSel != nil && p.nodeSel.EvaluateMap(c.nodeLabels)
}

// setNodeLabels records this host's Node labels (nil: no Node).
func (c *bgpPeerCalc) setNodeLabels(labels map[string]string) {
	if maps.Equal(labels, c.nodeLabels) {
		return
	}
	c.nodeLabels = labels
	for _, name := range sortedKeys(c.peers) {
		c.refresh(name, c.peers[name])
	}
}

// setBGPConfig records the peering addresses of BGPConfiguration default (others are ignored).
// An address that does not parse, is of the wrong family or is not unicast (loopback, unspecified,
// multicast: the kernel may refuse it on every peer's interface) is not used (an error names it).
func (c *bgpPeerCalc) setBGPConfig(name string, spec *api.BGPConfigurationSpec) {
	if name != "default" {
		return
	}
	var addrs []netip.Addr
	if spec != nil {
		for _, f := range []struct {
			field, value string
			family       int
		}{{"localWorkloadPeeringIPV4", spec.LocalWorkloadPeeringIPV4, 4}, {"localWorkloadPeeringIPV6", spec.LocalWorkloadPeeringIPV6, 6}} {
			if f.value == "" {
				continue
			}
			if a := parseAddrFamily(f.value, f.family); a.IsGlobalUnicast() || a.IsLinkLocalUnicast() {
				addrs = append(addrs, a)
				continue
			}
			c.log.Error().Str("bgpConfiguration", name).Str("field", f.field).Str("value", f.value).
				Msg("Not a unicast IP address of the field's family; local workload peers do not get it")
		}
	}
	if slices.Equal(addrs, c.addrs) {
		return
	}
	c.addrs = addrs
	for _, id := range sortedKeys(c.matches) {
		c.onChange(id)
	}
}

// onMatch is the index's callback: a BGPPeer starts or stops selecting a local workload.
func (c *bgpPeerCalc) onMatch(name, itemID string, matched bool) {
	names := c.matches[itemID]
	if matched {
		names = append(names, name)
		slices.Sort(names)
	} else {
		names = slices.DeleteFunc(names, func(n string) bool { return n == name })
	}
	if len(names) == 0 {
		delete(c.matches, itemID)
	} else {
		c.matches[itemID] = names
	}
	c.onChange(itemID)
}

// peerFor returns the BGPPeer a local workload endpoint peers through ("" when none) and the
// host-side addresses it gets.
func (c *bgpPeerCalc) peerFor(itemID string) (string, []netip.Addr) {
	names := c.matches[itemID]
	if len(names) == 0 {
		return "", nil
	}
	return names[0], slices.Clone(c.addrs)
}
