package rules

import (
	"fmt"
	"math/bits"
	"net/netip"

	"github.com/calico-host/calico-host/pkg/nft"
)

// Config is what the renderers need from felix's configuration, already defaulted.
type Config struct {
	IPv6             bool
	WorkloadPrefixes []string // interface name prefixes of workloads, e.g. "cali", "tap"
	Marks            Marks

	EndpointToHost Action // verdict for workload-to-host traffic after egress policy: Drop, Return or Accept
	FailsafeIn     []ProtoPort
	FailsafeOut    []ProtoPort

	DropInvalid             bool // drop conntrack-invalid packets in endpoint chains
	AllowVXLANFromWorkloads bool
	AllowIPIPFromWorkloads  bool
	VXLANPort               uint16
	// WireguardPortV4/V6 are the WireGuard listening ports of the enabled versions (0 = off).
	WireguardPortV4, WireguardPortV6 uint16
	Reject                           bool   // deny with reject instead of drop
	LogPrefix                        string // log rule prefix, without the ": " separator
	// FlowLogs puts NFLOG statements into verdict rules (see LogTo); the callers give policy
	// and profile rules theirs (AttributedRules).
	FlowLogs bool

	// WireguardHostMark, when not 0 (WireguardHostEncryptionEnabled with WireGuard on), is the
	// WireGuard mark raw PREROUTING puts on packets from host interfaces other than lo and
	// WireguardIfaces, so the reverse-path check of tunnel packets from peers (whose addresses
	// are routed through the device) skips felix's WireGuard table, as Project Calico does.
	WireguardHostMark uint32
	WireguardIfaces   []string

	NATOutgoingAddress netip.Addr    // SNAT to this address instead of masquerading (when valid)
	NATPortRange       nft.PortRange // source ports for NAT outgoing TCP and UDP (zero: the kernel's choice)
	// NATExcludeHosts (NATOutgoingExclusions IPPoolsAndHostIPs): NAT outgoing leaves traffic to
	// any host's address (the all-hosts set) alone too.
	NATExcludeHosts bool
	// ServiceLoop is what happens to forwarded traffic to the service CIDRs (ServiceLoopPrevention).
	ServiceLoop LoopAction

	OpenStack    bool
	MetadataAddr netip.Addr
	MetadataPort uint16
}

// Action is a fixed verdict chosen by configuration (DefaultEndpointToHostAction).
type Action uint8

// Configured verdicts; the zero value is Project Calico's default, Drop.
const (
	ActionDrop Action = iota
	ActionReturn
	ActionAccept
)

// LoopAction is ServiceLoopPrevention: the verdict of the cidr-block chain.
type LoopAction uint8

// Service loop prevention verdicts; the zero value is Project Calico's default, Drop.
const (
	LoopDrop LoopAction = iota
	LoopReject
	LoopDisabled
)

// ProtoPort is a failsafe port: protocol number (TCP, UDP or SCTP), optional remote network,
// port.
type ProtoPort struct {
	Protocol uint8
	Net      netip.Prefix // invalid: any address
	Port     uint16
}

// Families are the IP versions the ruleset handles: one table each (ip, then ip6 when IPv6 is
// on). With IPv6 off there is no ip6 table, so IPv6 is neither policed nor NATed, as in Calico.
func (c *Config) Families() []nft.IPVersion {
	if c.IPv6 {
		return []nft.IPVersion{nft.IPv4, nft.IPv6}
	}
	return []nft.IPVersion{nft.IPv4}
}

// TableFamily is the table family holding the rules of IP version v.
func TableFamily(v nft.IPVersion) nft.Family {
	if v == nft.IPv6 {
		return nft.FamilyIP6
	}
	return nft.FamilyIP
}

// deny is the verdict of a policy deny and of the end-of-tier and end-of-chain drops in the
// filter layer.
func (c *Config) deny(l Layer) nft.Expr {
	if c.Reject && l == Filter {
		return nft.Reject()
	}
	return nft.Drop()
}

// Marks are the packet mark bits felix uses, allocated from MarkMask.
type Marks struct {
	Accept   uint32 // a policy allowed the packet
	Pass     uint32 // a policy passed the packet to the next tier
	Scratch0 uint32 // scratch: came from a workload (raw); OR blocks in policy rules
	Scratch1 uint32 // scratch: OR blocks in policy rules
}

// MarksFromMask allocates the mark bits from the lowest set bit of mask upwards, as Calico does
// (ACCEPT, PASS, DROP, SCRATCH0, SCRATCH1; the DROP bit is reserved but unused).
func MarksFromMask(mask uint32) (Marks, error) {
	var got []uint32
	for m := mask; m != 0 && len(got) < 5; m &= m - 1 {
		got = append(got, 1<<bits.TrailingZeros32(m))
	}
	if len(got) < 5 {
		return Marks{}, fmt.Errorf("mark mask %#x has %d bits, need at least 5", mask, bits.OnesCount32(mask))
	}
	return Marks{Accept: got[0], Pass: got[1], Scratch0: got[3], Scratch1: got[4]}, nil
}

// all is every bit felix clears before evaluating policy.
func (m Marks) all() uint32 { return m.Accept | m.Pass | m.Scratch0 | m.Scratch1 }

// isSet matches packets with every bit of b set; isClear those with none.
func isSet(b uint32) nft.Match   { return nft.MarkMasked(b, b) }
func isClear(b uint32) nft.Match { return nft.MarkMasked(b, 0) }

// clearBits and setBits change the packet mark.
func clearBits(b uint32) nft.Expr { return nft.AndMark(^b) }
func setBits(b uint32) nft.Expr   { return nft.OrMark(b) }

// rule is shorthand for nft.NewRule.
func rule(x ...nft.Expr) nft.Rule { return nft.NewRule(x...) }
