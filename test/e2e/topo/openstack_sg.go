package topo

import (
	"context"
	"fmt"
	"strings"
)

// SGRule is one Neutron security group rule, with Neutron's fields as its database holds them:
// Protocol may be nil, -1, 0, "any", a name ("tcp", "icmp", "ipv6-icmp", "sctp"...), an int, or
// a numeric string (Neutron stores "--protocol 17" as the string "17"). networking-calico's
// policy.py translates it (SecurityGroup.Write).
type SGRule struct {
	Direction string // "ingress" or "egress"
	Ethertype string // "IPv4" (default) or "IPv6"
	Protocol  any
	// PortMin and PortMax are port_range_min/max (nil = None); for icmp and ipv6-icmp they
	// are the ICMP type and code (-1 = unset).
	PortMin, PortMax *int
	RemoteGroup      string // remote_group_id
	RemotePrefix     string // remote_ip_prefix
}

// Int is a pointer to n, for SGRule port ranges.
func Int(n int) *int { return &n }

// Ports is a port range for an SGRule: Ports(22) or Ports(8000, 8100).
func Ports(minMax ...int) (*int, *int) {
	if len(minMax) == 1 {
		return Int(minMax[0]), Int(minMax[0])
	}
	return Int(minMax[0]), Int(minMax[1])
}

// SecurityGroup is a Neutron security group in one region namespace.
type SecurityGroup struct {
	ID        string
	Namespace string // default OpenStackNamespace
	Rules     []SGRule
}

// ipProtocolMap is the part of neutron_lib's IP_PROTOCOL_MAP that networking-calico consults
// after its own special cases (icmp and ipv6-icmp are handled before it).
var ipProtocolMap = map[string]int{"tcp": 6, "udp": 17, "sctp": 132, "icmpv6": 58, "udplite": 136, "gre": 47, "esp": 50, "ah": 51}

// Key is where the security group's policy lives.
func (sg SecurityGroup) Key() string {
	return V3Key("networkpolicies", sg.namespace(), sg.PolicyName())
}

// PolicyName is ossg.default.<id>.
func (sg SecurityGroup) PolicyName() string { return "ossg.default." + sg.ID }

func (sg SecurityGroup) namespace() string {
	if sg.Namespace == "" {
		return OpenStackNamespace
	}
	return sg.Namespace
}

// Selector is the label selector of VMs in the group: has(sg.projectcalico.org/openstack-<id>).
func (sg SecurityGroup) Selector() string { return SGSelector(sg.ID) }

// SGSelector is the selector of a security group's members.
func SGSelector(id string) string { return fmt.Sprintf("has(sg.projectcalico.org/openstack-%s)", id) }

// Spec is the NetworkPolicy spec policy.py builds: selector, ingress and egress; no order,
// tier or types.
func (sg SecurityGroup) Spec() map[string]any {
	in, out := []map[string]any{}, []map[string]any{}
	for _, r := range sg.Rules {
		if r.Direction == "ingress" {
			in = append(in, r.calico())
		} else {
			out = append(out, r.calico())
		}
	}
	return map[string]any{"ingress": in, "egress": out, "selector": sg.Selector()}
}

// Write creates or rewrites the security group's NetworkPolicy.
func (sg SecurityGroup) Write(ctx context.Context, f *Fabric) error {
	return f.writeV3(ctx, v3Object{kind: "NetworkPolicy", plural: "networkpolicies", ns: sg.namespace(),
		name: sg.PolicyName(), spec: sg.Spec()})
}

// Delete removes the security group's NetworkPolicy.
func (sg SecurityGroup) Delete(ctx context.Context, f *Fabric) error {
	return f.deleteV3(ctx, "networkpolicies", sg.namespace(), sg.PolicyName())
}

// calico translates one rule as policy.py's _neutron_rule_to_etcd_rule does, including its
// quirks: ports go in destination for ingress but in the remote entity for egress, and a rule
// given by protocol number keeps port_range_min/max as ports.
func (r SGRule) calico() map[string]any {
	ethertype := r.Ethertype
	if ethertype == "" {
		ethertype = "IPv4"
	}
	rule := map[string]any{"action": "Allow", "ipVersion": map[string]int{"IPv4": 4, "IPv6": 6}[ethertype]}
	if p := r.protocol(ethertype); p != nil {
		rule["protocol"] = p
	}
	var portSpec []any
	if r.Protocol == "icmp" || r.Protocol == "ipv6-icmp" {
		icmp := map[string]int{}
		if r.PortMin != nil && *r.PortMin != -1 {
			icmp["type"] = *r.PortMin
		}
		if r.PortMax != nil && *r.PortMax != -1 {
			icmp["code"] = *r.PortMax
		}
		if len(icmp) > 0 {
			rule["icmp"] = icmp
		}
	} else if r.PortMin != nil && *r.PortMin != -1 {
		if r.PortMax == nil || *r.PortMin == *r.PortMax {
			portSpec = []any{*r.PortMin}
		} else {
			portSpec = []any{fmt.Sprintf("%d:%d", *r.PortMin, *r.PortMax)}
		}
	}
	entity := map[string]any{}
	if r.RemoteGroup != "" {
		entity["selector"] = SGSelector(r.RemoteGroup)
	}
	if r.RemotePrefix != "" {
		entity["nets"] = []string{r.RemotePrefix}
	}
	if portSpec != nil {
		if r.Direction == "ingress" {
			rule["destination"] = map[string]any{"ports": portSpec}
		} else {
			entity["ports"] = portSpec
		}
	}
	if len(entity) > 0 {
		if r.Direction == "ingress" {
			rule["source"] = entity
		} else {
			rule["destination"] = entity
		}
	}
	return rule
}

// protocol maps the Neutron protocol to the Calico one (nil: any).
func (r SGRule) protocol(ethertype string) any {
	switch p := r.Protocol.(type) {
	case nil:
		return nil
	case int:
		if p == -1 || p == 0 {
			return nil
		}
		return p
	case string:
		switch {
		case p == "any":
			return nil
		case p == "ipv6-icmp":
			return "ICMPv6"
		case p == "icmp":
			return map[string]string{"IPv4": "ICMP", "IPv6": "ICMPv6"}[ethertype]
		}
		if n, ok := ipProtocolMap[p]; ok {
			return n
		}
		return strings.ToUpper(p)
	}
	return r.Protocol
}
