package calc

import (
	"slices"

	"github.com/calico-host/calico-host/pkg/api"
)

// configCalc follows FelixConfiguration `default`, `node.<host>` and the selector-scoped ones,
// ClusterInformation `default`, BGPConfiguration `default` and this host's Node: the
// datastore's part of felix's configuration (for Facts) and the host facts the dataplane needs
// (ConfigUpdate, ServiceCIDRsUpdate).
type configCalc struct {
	host    string
	global  *api.FelixConfigurationSpec
	perHost *api.FelixConfigurationSpec
	scoped  map[string]*scopedConfig
	cluster *api.ClusterInformationSpec
	node    *nodeInfo
	dirty   bool
	sent    *ConfigUpdate
	// services are the service CIDRs of BGPConfiguration default; sentServices what was sent.
	services, sentServices []string
	// birdRoutes are the pools whose cluster routes BIRD programs (BGPConfiguration default's
	// programClusterRoutes), for Facts.
	birdRoutes ClusterRoutes
}

func newConfigCalc(host string) *configCalc {
	return &configCalc{host: host, dirty: true, scoped: map[string]*scopedConfig{}, birdRoutes: birdDefault}
}

// setFelixConfig records FelixConfiguration `default`, `node.<host>` or a selector-scoped one
// (nil: deleted); those of other hosts are ignored. A selector-scoped one with an invalid
// nodeSelector is ignored (as absent) and its error returned.
func (c *configCalc) setFelixConfig(name string, fc *api.FelixConfiguration) error {
	var spec *api.FelixConfigurationSpec
	if fc != nil {
		spec = &fc.Spec
	}
	switch {
	case name == "default":
		c.global = spec
	case name == "node."+c.host:
		c.perHost = spec
	case isScopedName(name):
		delete(c.scoped, name)
		if fc == nil {
			return nil
		}
		sc, err := newScopedConfig(name, fc)
		if sc != nil {
			c.scoped[name] = sc
		}
		return err
	}
	return nil
}

// setBGPConfig records the service CIDRs of BGPConfiguration `default` (others are ignored):
// felix's service loop prevention blocks them. Empty CIDRs are skipped, as in Project Calico.
// It also records which pools' cluster routes BIRD programs.
func (c *configCalc) setBGPConfig(name string, spec *api.BGPConfigurationSpec) {
	if name != "default" {
		return
	}
	var cidrs []string
	c.birdRoutes = birdDefault
	if spec != nil {
		c.birdRoutes = birdClusterRoutes(spec.ProgramClusterRoutes)
		for _, blocks := range [][]api.ServiceIPBlock{spec.ServiceClusterIPs, spec.ServiceExternalIPs, spec.ServiceLoadBalancerIPs} {
			for _, b := range blocks {
				if b.CIDR != "" {
					cidrs = append(cidrs, b.CIDR)
				}
			}
		}
	}
	c.services, c.dirty = cidrs, true
}

func (c *configCalc) setCluster(name string, spec *api.ClusterInformationSpec) {
	if name == "default" {
		c.cluster = spec
	}
}

func (c *configCalc) setNode(n *nodeInfo) { c.node, c.dirty = n, true }

// build computes the current ConfigUpdate.
func (c *configCalc) build() *ConfigUpdate {
	cu := &ConfigUpdate{}
	if n := c.node; n != nil {
		cu.HostIPv4, cu.HostIPv6 = n.ipv4, n.ipv6
		cu.VXLANTunnelAddrV4, cu.VXLANTunnelAddrV6 = n.vxlan[0], n.vxlan[1]
		cu.IPIPTunnelAddr = n.ipip
		cu.VXLANTunnelMAC, cu.VXLANTunnelMACV6 = n.vxlanMAC(4), n.vxlanMAC(6)
	}
	return cu
}

// datastoreConfig is the datastore's part of felix's configuration.
func (c *configCalc) datastoreConfig() DatastoreConfig {
	dc := DatastoreConfig{Global: c.global, Node: c.perHost}
	if sc, n := matchScoped(c.scoped, c.node); sc != nil {
		dc.Scoped, dc.ScopedName, dc.ScopedMatches = sc.spec, sc.name, n
	}
	if ci := c.cluster; ci != nil {
		dc.ClusterInfo = true
		dc.ClusterGUID, dc.ClusterType, dc.CalicoVersion = ci.ClusterGUID, ci.ClusterType, ci.CalicoVersion
		// Absent datastoreReady counts as ready: only an explicit false pauses felix.
		dc.DatastoreReady = ci.DatastoreReady == nil || *ci.DatastoreReady
	}
	if c.node != nil {
		dc.VXLANTunnelMAC = c.node.vxlanMAC(4)
	}
	return dc
}

// flush returns the ConfigUpdate when it changed (and always on the first flush).
func (c *configCalc) flush() []Update {
	if !c.dirty {
		return nil
	}
	c.dirty = false
	var out []Update
	if cu := c.build(); c.sent == nil || *c.sent != *cu {
		c.sent = cu
		out = append(out, *cu)
	}
	if !slices.Equal(c.services, c.sentServices) {
		c.sentServices = c.services
		out = append(out, ServiceCIDRsUpdate{CIDRs: slices.Clone(c.services)})
	}
	return out
}
