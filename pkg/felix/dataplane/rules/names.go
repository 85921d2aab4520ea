package rules

import (
	"crypto/sha256"
	"encoding/base64"
	"strings"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/nft"
)

// Layer is one of Calico's iptables-style tables inside the nft table.
type Layer string

// Layers.
const (
	Filter Layer = "filter"
	NAT    Layer = "nat"
	Raw    Layer = "raw"
	Mangle Layer = "mangle"
)

// Name is the nft name of a logical chain or map of the layer: Filter.Name("cali-INPUT") is
// "filter-cali-INPUT".
func (l Layer) Name(logical string) string { return limitName(string(l) + "-" + logical) }

// Logical names of the static chains and maps (before the layer prefix).
const (
	chainInput          = "cali-INPUT"
	chainForward        = "cali-FORWARD"
	chainOutput         = "cali-OUTPUT"
	chainPrerouting     = "cali-PREROUTING"
	chainPostrouting    = "cali-POSTROUTING"
	chainWorkloadToHost = "cali-wl-to-host"
	chainFailsafeIn     = "cali-failsafe-in"
	chainFailsafeOut    = "cali-failsafe-out"
	chainWorkloadRPF    = "cali-wl-rpf"
	chainWGIncomingMark = "cali-wireguard-incoming-mark"
	chainFromWorkload   = "cali-from-wl-dispatch"
	chainToWorkload     = "cali-to-wl-dispatch"
	chainFromHost       = "cali-from-host-endpoint"
	chainToHost         = "cali-to-host-endpoint"
	chainFromHostFwd    = "cali-from-hep-forward"
	chainToHostFwd      = "cali-to-hep-forward"
	chainFIPDNAT        = "cali-fip-dnat"
	chainFIPSNAT        = "cali-fip-snat"
	chainNATOutgoing    = "cali-nat-outgoing"
	chainCIDRBlock      = "cali-cidr-block"
)

// Per-endpoint chain prefixes: to/from workload, to/from host endpoint, and the applyOnForward
// host endpoint chains.
const (
	prefixToWorkload   = "cali-tw-"
	prefixFromWorkload = "cali-fw-"
	prefixToHost       = "cali-th-"
	prefixFromHost     = "cali-fh-"
	prefixToHostFwd    = "cali-thfw-"
	prefixFromHostFwd  = "cali-fhfw-"
)

// EndpointChainEgress says which policy direction an endpoint chain applies, from its name:
// egress for the chains of traffic from a workload or to a host endpoint (forward ones too),
// ingress for the others; ok is false for a chain that is no endpoint chain.
func EndpointChainEgress(chain string) (egress, ok bool) {
	for _, c := range []struct {
		prefix string
		egress bool
	}{
		{prefixToWorkload, false}, {prefixFromWorkload, true}, {prefixToHostFwd, true},
		{prefixFromHostFwd, false}, {prefixToHost, true}, {prefixFromHost, false},
	} {
		if strings.Contains(chain, "-"+c.prefix) {
			return c.egress, true
		}
	}
	return false, false
}

// Internal IP set IDs (the family-specific set names are made by SetName).
const (
	SetAllPools  = "all-ipam-pools"  // every IP pool
	SetMasqPools = "masq-ipam-pools" // pools with natOutgoing
	SetAllVXLAN  = "all-vxlan-net"   // the underlay addresses of the other hosts' VTEPs
	SetAllHosts  = "all-hosts-net"   // every host's address (IPIP, NATOutgoingExclusions)
)

// maxName is the longest name nft accepts (NFT_NAME_MAXLEN - 1).
const maxName = nft.MaxNameLen

// limitName makes a name nft accepts: an over-long name becomes a prefix of it, "_" and a hash
// of the whole, as Calico's GetLengthLimitedID does; so does a name with characters nft names
// cannot hold (a profile or policy name from the datastore: "+", "@", spaces, non-ASCII),
// with those characters in the prefix replaced by "_" (the hash keeps names apart).
func limitName(s string) string {
	if len(s) <= maxName && nft.ValidName(s) {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	h := base64.RawURLEncoding.EncodeToString(sum[:])[:22]
	prefix := []byte(s[:min(len(s), maxName-len(h)-1)])
	for i, c := range prefix {
		if !nameByte(c) {
			prefix[i] = '_'
		}
	}
	return string(prefix) + "_" + h
}

// nameByte reports whether nft names may hold c (besides a leading digit, which our prefixes
// never have).
func nameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_./:-", c) >= 0
}

// SetName is the nft set of an IP set ID for a family, named like Calico's: "cali40s-<hash>"
// (IPv4) or "cali60s-<hash>" (IPv6) for the calc ID "s:<hash>".
func SetName(v nft.IPVersion, id string) string {
	fam := "4"
	if v == nft.IPv6 {
		fam = "6"
	}
	return limitName("cali" + fam + "0" + strings.ReplaceAll(id, ":", "-"))
}

// PolicyName is the policy part of a policy chain name: "<kind>/[<ns>/]<name>", with the
// "default." tier prefix dropped as Calico does.
func PolicyName(id calc.PolicyID) string {
	name := id.Name
	if id.Tier == "default" || id.Tier == "" {
		name = strings.TrimPrefix(name, "default.")
	}
	kind := id.Kind
	if kind == "" {
		kind = "gnp"
	}
	if id.Namespace != "" {
		return kind + "/" + id.Namespace + "/" + name
	}
	return kind + "/" + name
}

// PolicyChain is the chain of one direction of a policy in a layer:
// "filter-cali-pi-gnp/allow-web" (ingress) or "filter-cali-po-gnp/allow-web" (egress).
func PolicyChain(l Layer, id calc.PolicyID, egress bool) string {
	if egress {
		return l.Name("cali-po-" + PolicyName(id))
	}
	return l.Name("cali-pi-" + PolicyName(id))
}

// GroupChain is the chain of a policy group: the policy's own chain for a group of one
// (PolicyChain), else "filter-cali-gi-<hash>" (ingress) or "filter-cali-go-<hash>" (egress),
// the hash (20 characters of base64url SHA-256) over the members in order, as Calico names its
// groups.
func GroupChain(l Layer, egress bool, members []calc.PolicyID) string {
	if len(members) == 1 {
		return PolicyChain(l, members[0], egress)
	}
	h := sha256.New()
	for _, id := range members {
		h.Write([]byte(id.Tier + "\x00" + PolicyName(id) + "\x00"))
	}
	sum := base64.RawURLEncoding.EncodeToString(h.Sum(nil))[:20]
	if egress {
		return l.Name("cali-go-" + sum)
	}
	return l.Name("cali-gi-" + sum)
}

// ProfileChain is the chain of one direction of a profile: "filter-cali-pri-<name>" (inbound)
// or "filter-cali-pro-<name>" (outbound).
func ProfileChain(l Layer, name string, egress bool) string {
	if egress {
		return l.Name("cali-pro-" + name)
	}
	return l.Name("cali-pri-" + name)
}

// DispatchMaps are the verdict maps that send workload traffic to the endpoint chains, keyed by
// interface name: from-workload (iifname) and to-workload (oifname).
func DispatchMaps() (from, to string) {
	return Filter.Name(chainFromWorkload), Filter.Name(chainToWorkload)
}

// WorkloadRPFChain is the static chain that drops spoofed workload packets, except the
// prefixes endpoints may spoof (allowSpoofedSourcePrefixes).
func WorkloadRPFChain() string { return Raw.Name(chainWorkloadRPF) }
