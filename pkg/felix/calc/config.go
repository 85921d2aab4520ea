package calc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"strings"

	"github.com/calico-host/calico-host/pkg/api"
)

// paramRenames maps the v3 FelixConfiguration JSON names whose felix parameter name is not just
// the JSON name with its first letter upper-cased (api/pkg/apis/projectcalico/v3/felixconfig.go
// confignamev1 tags).
var paramRenames = map[string]string{
	"reportingInterval":              "ReportingIntervalSecs",
	"reportingTTL":                   "ReportingTTLSecs",
	"endpointReportingDelay":         "EndpointReportingDelaySecs",
	"nftablesMode":                   "NFTablesMode",
	"vxlanEnabled":                   "VXLANEnabled",
	"vxlanPort":                      "VXLANPort",
	"vxlanVNI":                       "VXLANVNI",
	"vxlanMTU":                       "VXLANMTU",
	"vxlanMTUV6":                     "VXLANMTUV6",
	"ipv6Support":                    "Ipv6Support",
	"ipipEnabled":                    "IpInIpEnabled",
	"ipipMTU":                        "IpInIpMtu",
	"externalNodesList":              "ExternalNodesCIDRList",
	"natOutgoingAddress":             "NATOutgoingAddress",
	"natPortRange":                   "NATPortRange",
	"natOutgoingExclusions":          "NATOutgoingExclusions",
	"mtuIfacePattern":                "MTUIfacePattern",
	"ipForwarding":                   "IPForwarding",
	"bpfEnabled":                     "BPFEnabled",
	"bpfLogLevel":                    "BPFLogLevel",
	"bpfConnectTimeLoadBalancing":    "BPFConnectTimeLoadBalancing",
	"bpfHostNetworkedNATWithoutCTLB": "BPFHostNetworkedNATWithoutCTLB",
}

// paramName is the felix parameter name of a v3 JSON field name.
func paramName(jsonName string) string {
	if n, ok := paramRenames[jsonName]; ok {
		return n
	}
	return strings.ToUpper(jsonName[:1]) + jsonName[1:]
}

// specParams renders every set field of a FelixConfiguration spec as felix parameters with
// values in FELIX_* environment syntax.
func specParams(spec *api.FelixConfigurationSpec) (map[string]string, error) {
	raw, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("encoding spec: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var fields map[string]any
	if err := dec.Decode(&fields); err != nil {
		return nil, fmt.Errorf("decoding spec: %w", err)
	}
	out := make(map[string]string, len(fields))
	for k, v := range fields {
		val, err := paramValue(k, v)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", k, err)
		}
		out[paramName(k)] = val
	}
	return out, nil
}

// paramValue renders one JSON value in FELIX_* syntax: strings as they are (durations are Go
// duration strings), booleans "true"/"false", numbers in decimal, failsafe ports as
// "<proto>:[<net>:]<port>,..." and other lists comma-joined.
func paramValue(field string, v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case bool:
		if x {
			return "true", nil
		}
		return "false", nil
	case json.Number:
		return x.String(), nil
	case []any:
		if strings.HasPrefix(field, "failsafe") {
			return failsafePorts(x)
		}
		parts := make([]string, len(x))
		for i, e := range x {
			s, err := paramValue(field, e)
			if err != nil {
				return "", err
			}
			parts[i] = s
		}
		return strings.Join(parts, ","), nil
	}
	b, err := json.Marshal(v)
	return string(b), err
}

// failsafePorts renders failsafe ports as "tcp:22,udp:68" (IPv6 nets in brackets).
func failsafePorts(list []any) (string, error) {
	parts := make([]string, 0, len(list))
	for _, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			return "", fmt.Errorf("failsafe port is not an object")
		}
		proto, _ := m["protocol"].(string)
		port, _ := m["port"].(json.Number)
		s := strings.ToLower(proto) + ":"
		if n, _ := m["net"].(string); n != "" {
			if strings.Contains(n, ":") {
				n = "[" + n + "]"
			}
			s += n + ":"
		}
		parts = append(parts, s+port.String())
	}
	return strings.Join(parts, ","), nil
}

// configCalc merges FelixConfiguration `default` and `node.<host>`, ClusterInformation
// `default` and this host's Node into one ConfigUpdate.
type configCalc struct {
	host    string
	global  map[string]string
	perHost map[string]string
	cluster *api.ClusterInformationSpec
	node    *nodeInfo
	dirty   bool
	sent    *ConfigUpdate
}

func newConfigCalc(host string) *configCalc {
	return &configCalc{host: host, dirty: true}
}

// setFelixConfig records FelixConfiguration `default` or `node.<host>` (others are ignored).
func (c *configCalc) setFelixConfig(name string, params map[string]string) {
	switch name {
	case "default":
		c.global = params
	case "node." + c.host:
		c.perHost = params
	default:
		return
	}
	c.dirty = true
}

func (c *configCalc) setCluster(name string, spec *api.ClusterInformationSpec) {
	if name == "default" {
		c.cluster, c.dirty = spec, true
	}
}

func (c *configCalc) setNode(n *nodeInfo) { c.node, c.dirty = n, true }

// build computes the current ConfigUpdate.
func (c *configCalc) build() *ConfigUpdate {
	cu := &ConfigUpdate{Params: map[string]string{}}
	maps.Copy(cu.Params, c.global)
	maps.Copy(cu.Params, c.perHost)
	if ci := c.cluster; ci != nil {
		cu.ClusterGUID, cu.ClusterType, cu.CalicoVersion = ci.ClusterGUID, ci.ClusterType, ci.CalicoVersion
		// Absent datastoreReady counts as ready: only an explicit false pauses felix.
		cu.DatastoreReady = ci.DatastoreReady == nil || *ci.DatastoreReady
	}
	if n := c.node; n != nil {
		cu.HostIPv4, cu.HostIPv6 = n.ipv4, n.ipv6
		cu.VXLANTunnelAddrV4, cu.VXLANTunnelAddrV6 = n.vxlan[0], n.vxlan[1]
		cu.VXLANTunnelMAC, cu.VXLANTunnelMACV6 = n.vxlanMAC(4), n.vxlanMAC(6)
	}
	return cu
}

// flush returns the ConfigUpdate when it changed (and always on the first flush).
func (c *configCalc) flush() []Update {
	if !c.dirty {
		return nil
	}
	c.dirty = false
	cu := c.build()
	if c.sent != nil && reflect.DeepEqual(c.sent, cu) {
		return nil
	}
	c.sent = cu
	return []Update{*cu}
}
