package calc

import "github.com/calico-host/calico-host/pkg/api"

// configCalc follows FelixConfiguration `default` and `node.<host>`, ClusterInformation
// `default` and this host's Node: the datastore's part of felix's configuration (for Facts) and
// the host facts the dataplane needs (ConfigUpdate).
type configCalc struct {
	host    string
	global  *api.FelixConfigurationSpec
	perHost *api.FelixConfigurationSpec
	cluster *api.ClusterInformationSpec
	node    *nodeInfo
	dirty   bool
	sent    *ConfigUpdate
}

func newConfigCalc(host string) *configCalc {
	return &configCalc{host: host, dirty: true}
}

// setFelixConfig records FelixConfiguration `default` or `node.<host>` (others are ignored).
func (c *configCalc) setFelixConfig(name string, spec *api.FelixConfigurationSpec) {
	switch name {
	case "default":
		c.global = spec
	case "node." + c.host:
		c.perHost = spec
	}
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
	cu := c.build()
	if c.sent != nil && *c.sent == *cu {
		return nil
	}
	c.sent = cu
	return []Update{*cu}
}
