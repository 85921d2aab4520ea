package datastore

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/calico-host/calico-host/pkg/api"
)

// Key prefixes.
const (
	ResourcePrefix = "/calico/resources/v3/projectcalico.org/"
	IPAMPrefix     = "/calico/ipam/v2/"
	BlockPrefix    = "/calico/ipam/v2/assignment/"
	HostPrefix     = "/calico/ipam/v2/host/"
	HandlePrefix   = "/calico/ipam/v2/handle/"
	IPAMConfigKey  = "/calico/ipam/v2/config"
	FelixV2Prefix  = "/calico/felix/v2/"
	FelixV1Prefix  = "/calico/felix/v1/"
)

// KindPrefix is the key prefix of every object of a kind ("/calico/resources/v3/projectcalico.org/ippools/").
func KindPrefix(k api.KindInfo) string { return ResourcePrefix + k.Plural + "/" }

// ResourceKey is the key of one object.
func ResourceKey(k api.KindInfo, namespace, name string) string {
	if k.Namespaced {
		return KindPrefix(k) + namespace + "/" + name
	}
	return KindPrefix(k) + name
}

// KeyOf is the key of an object.
func KeyOf(r api.Resource) (string, error) {
	k, ok := api.KindOf(r)
	if !ok {
		return "", fmt.Errorf("unknown resource type %T", r)
	}
	m := r.GetObjectMeta()
	return ResourceKey(k, m.Namespace, m.Name), nil
}

// ResourceID identifies one v3 object by its key parts. Kind points to the one KindInfo of its
// kind (see NewResourceID), so ResourceIDs compare with ==.
type ResourceID struct {
	Kind      *api.KindInfo
	Namespace string
	Name      string
}

// kindsByPlural holds one KindInfo per kind, by the plural of its keys.
var kindsByPlural = func() map[string]*api.KindInfo {
	m := map[string]*api.KindInfo{}
	for _, k := range api.Kinds() {
		m[k.Plural] = &k
	}
	return m
}()

// NewResourceID is the ID of the object of kind k named namespace/name.
func NewResourceID(k api.KindInfo, namespace, name string) ResourceID {
	return ResourceID{Kind: kindsByPlural[k.Plural], Namespace: namespace, Name: name}
}

// ParseResourceKey splits a v3 resource key into kind, namespace and name.
func ParseResourceKey(key string) (ResourceID, bool) {
	rest, ok := strings.CutPrefix(key, ResourcePrefix)
	if !ok {
		return ResourceID{}, false
	}
	parts := strings.Split(rest, "/")
	k, ok := kindsByPlural[parts[0]]
	if !ok {
		return ResourceID{}, false
	}
	switch {
	case k.Namespaced && len(parts) == 3 && parts[1] != "" && parts[2] != "":
		return ResourceID{Kind: k, Namespace: parts[1], Name: parts[2]}, true
	case !k.Namespaced && len(parts) == 2 && parts[1] != "":
		return ResourceID{Kind: k, Name: parts[1]}, true
	}
	return ResourceID{}, false
}

// family returns "ipv4" or "ipv6" for a CIDR string.
func family(cidr string) string {
	if strings.Contains(cidr, ":") {
		return "ipv6"
	}
	return "ipv4"
}

// cidrSegment writes a CIDR as a key segment ("10.65.0.0/26" -> "10.65.0.0-26").
func cidrSegment(cidr string) string { return strings.ReplaceAll(cidr, "/", "-") }

// CIDRFromSegment reverses cidrSegment: the last "-" becomes "/".
func CIDRFromSegment(seg string) string {
	i := strings.LastIndex(seg, "-")
	if i < 0 {
		return seg
	}
	return seg[:i] + "/" + seg[i+1:]
}

// BlockKey is the key of an IPAM block.
func BlockKey(cidr string) string {
	return BlockPrefix + family(cidr) + "/block/" + cidrSegment(cidr)
}

// AffinityKey is the key of a host's affinity to a block.
func AffinityKey(host, cidr string) string {
	return HostPrefix + host + "/" + family(cidr) + "/block/" + cidrSegment(cidr)
}

// HandleKey is the key of an IPAM handle.
func HandleKey(id string) string { return HandlePrefix + id }

// ParseBlockKey returns the CIDR of a block key.
func ParseBlockKey(key string) (cidr string, ok bool) {
	rest, ok := strings.CutPrefix(key, BlockPrefix)
	if !ok {
		return "", false
	}
	fam, seg, ok := strings.Cut(rest, "/block/")
	if !ok || (fam != "ipv4" && fam != "ipv6") || seg == "" {
		return "", false
	}
	return CIDRFromSegment(seg), true
}

// ParseAffinityKey returns the host and CIDR of an affinity key.
func ParseAffinityKey(key string) (host, cidr string, ok bool) {
	rest, ok := strings.CutPrefix(key, HostPrefix)
	if !ok {
		return "", "", false
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 4 || parts[2] != "block" || (parts[1] != "ipv4" && parts[1] != "ipv6") {
		return "", "", false
	}
	return parts[0], CIDRFromSegment(parts[3]), true
}

// AffinityBlock returns the block an affinity key names. The key's CIDR must be canonical (the
// network address, in the form Project Calico writes) and of the key's family: a key naming a
// block any other way names no block.
func AffinityBlock(key string) (netip.Prefix, error) {
	_, s, ok := ParseAffinityKey(key)
	if !ok {
		return netip.Prefix{}, fmt.Errorf("not an affinity key")
	}
	p, err := netip.ParsePrefix(s)
	switch {
	case err != nil:
		return netip.Prefix{}, fmt.Errorf("affinity key: bad block CIDR %q", s)
	case p.Masked() != p || p.String() != s:
		return netip.Prefix{}, fmt.Errorf("affinity key: block CIDR %q is not canonical (%s)", s, p.Masked())
	case family(s) != strings.Split(strings.TrimPrefix(key, HostPrefix), "/")[1] || p.Addr().Is4In6():
		return netip.Prefix{}, fmt.Errorf("affinity key: block CIDR %q is not of the key's family", s)
	}
	return p, nil
}

// Region returns felix's region segment: "no-region" or "region-<name>".
func Region(openstackRegion string) string {
	if openstackRegion == "" {
		return "no-region"
	}
	return "region-" + openstackRegion
}

// AgentStatusKey is felix's leased liveness key.
func AgentStatusKey(region, host string) string {
	return FelixV2Prefix + region + "/host/" + host + "/status"
}

// LastReportedStatusKey is felix's lease-less copy of its liveness report.
func LastReportedStatusKey(region, host string) string {
	return FelixV2Prefix + region + "/host/" + host + "/last_reported_status"
}

// WorkloadEndpointStatusKey is the key felix writes a workload endpoint's status to.
// workloadID is "<namespace>/<workload>"; "%" and "/" in IDs are escaped as Project Calico does.
func WorkloadEndpointStatusKey(region, host, orchestrator, workloadID, endpoint string) string {
	return FelixV2Prefix + region + "/host/" + host + "/workload/" + escapeID(orchestrator) + "/" +
		escapeID(workloadID) + "/endpoint/" + escapeID(endpoint)
}

// HostEndpointStatusKey is the (still v1, region-less) key of a host endpoint's status.
func HostEndpointStatusKey(host, endpoint string) string {
	return FelixV1Prefix + "host/" + host + "/endpoint/" + escapeID(endpoint)
}

func escapeID(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "%", "%25"), "/", "%2f")
}
