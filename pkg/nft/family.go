package nft

import (
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"
)

// Family is a table's address family, numbered as the kernel numbers them
// (NFPROTO_*).
type Family uint8

// Table families.
const (
	FamilyInet   Family = unix.NFPROTO_INET
	FamilyIP     Family = unix.NFPROTO_IPV4
	FamilyARP    Family = unix.NFPROTO_ARP
	FamilyNetdev Family = unix.NFPROTO_NETDEV
	FamilyBridge Family = unix.NFPROTO_BRIDGE
	FamilyIP6    Family = unix.NFPROTO_IPV6
)

var familyNames = map[Family]string{
	FamilyInet: "inet", FamilyIP: "ip", FamilyARP: "arp", FamilyNetdev: "netdev",
	FamilyBridge: "bridge", FamilyIP6: "ip6",
}

// String is the family's nft keyword.
func (f Family) String() string {
	if s, ok := familyNames[f]; ok {
		return s
	}
	return "family(" + strconv.Itoa(int(f)) + ")"
}

// Valid reports whether f is a family this package supports.
func (f Family) Valid() bool { _, ok := familyNames[f]; return ok }

// ipFamilies reports whether the family's packets are IP packets of a
// known version, or may be (inet, bridge, netdev).
func (f Family) carriesIP(v IPVersion) bool {
	switch f {
	case FamilyIP:
		return v == IPv4
	case FamilyIP6:
		return v == IPv6
	case FamilyInet, FamilyBridge, FamilyNetdev:
		return true
	}
	return false
}

// TableID names a table: its family and name.
type TableID struct {
	Family Family
	Name   string
}

func (id TableID) String() string { return id.Family.String() + " " + quoteName(id.Name) }

// IPVersion is an IP version: the family of an address or of a match.
type IPVersion uint8

// IP versions.
const (
	IPv4 IPVersion = 4
	IPv6 IPVersion = 6
)

func (v IPVersion) String() string {
	if v == IPv6 {
		return "ipv6"
	}
	return "ipv4"
}

// nfproto is the version's NFPROTO_* number (the value of meta nfproto).
func (v IPVersion) nfproto() byte {
	if v == IPv6 {
		return unix.NFPROTO_IPV6
	}
	return unix.NFPROTO_IPV4
}

// ethertype is the version's EtherType (the value of meta protocol).
func (v IPVersion) ethertype() uint16 {
	if v == IPv6 {
		return unix.ETH_P_IPV6
	}
	return unix.ETH_P_IP
}

func (v IPVersion) valid() bool { return v == IPv4 || v == IPv6 }

// ChainType is a base chain's type.
type ChainType string

// Base chain types.
const (
	ChainFilter ChainType = "filter"
	ChainNAT    ChainType = "nat"
	ChainRoute  ChainType = "route"
)

// Hook is the netfilter hook a base chain is attached to.
type Hook string

// Hooks. ARP tables have input, output and forward; netdev tables ingress
// (and egress); the IP families the five IP hooks (inet also ingress).
const (
	HookPrerouting  Hook = "prerouting"
	HookInput       Hook = "input"
	HookForward     Hook = "forward"
	HookOutput      Hook = "output"
	HookPostrouting Hook = "postrouting"
	HookIngress     Hook = "ingress"
	HookEgress      Hook = "egress"
)

var ipHooks = map[Hook]uint32{
	HookPrerouting: unix.NF_INET_PRE_ROUTING, HookInput: unix.NF_INET_LOCAL_IN,
	HookForward: unix.NF_INET_FORWARD, HookOutput: unix.NF_INET_LOCAL_OUT,
	HookPostrouting: unix.NF_INET_POST_ROUTING,
}

var hookTables = map[Family]map[Hook]uint32{
	FamilyIP:     ipHooks,
	FamilyIP6:    ipHooks,
	FamilyBridge: ipHooks,
	FamilyInet:   withHook(ipHooks, HookIngress, 5),             // NF_INET_INGRESS,
	FamilyARP:    {HookInput: 0, HookOutput: 1, HookForward: 2}, // NF_ARP_IN, _OUT, _FORWARD
	FamilyNetdev: {HookIngress: unix.NF_NETDEV_INGRESS, HookEgress: 1},
}

func withHook(m map[Hook]uint32, h Hook, n uint32) map[Hook]uint32 {
	out := map[Hook]uint32{h: n}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// HookNumber is the kernel's number of hook h in family f.
func HookNumber(f Family, h Hook) (uint32, bool) {
	n, ok := hookTables[f][h]
	return n, ok
}

// HookByNumber is the hook the kernel numbers n in family f.
func HookByNumber(f Family, n uint32) (Hook, bool) {
	for h, m := range hookTables[f] {
		if m == n {
			return h, true
		}
	}
	return "", false
}

// Policy is a base chain's default verdict. The zero value is accept.
type Policy string

// Base chain policies.
const (
	PolicyAccept Policy = "accept"
	PolicyDrop   Policy = "drop"
)

// Standard base chain priorities, as nft names them.
const (
	PriorityRaw      int32 = -300
	PriorityMangle   int32 = -150
	PriorityDstNAT   int32 = -100
	PriorityFilter   int32 = 0
	PrioritySecurity int32 = 50
	PrioritySrcNAT   int32 = 100
)

// BaseChain attaches a chain to a hook.
type BaseChain struct {
	Type     ChainType
	Hook     Hook
	Priority int32
	Policy   Policy // "" is accept
	Device   string // netdev ingress/egress and inet ingress only
}

// EffectivePolicy is the policy, accept when unset.
func (b *BaseChain) EffectivePolicy() Policy {
	if b.Policy == "" {
		return PolicyAccept
	}
	return b.Policy
}

// SameHook reports whether a and b (either may be nil) attach to the same
// hook the same way: everything but the policy, which the kernel can change
// in place, is equal.
func SameHook(a, b *BaseChain) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Type == b.Type && a.Hook == b.Hook && a.Priority == b.Priority && a.Device == b.Device
}

// EqualBase reports whether two (possibly nil) base chain declarations are
// the same, policy included.
func EqualBase(a, b *BaseChain) bool {
	return SameHook(a, b) && (a == nil || a.EffectivePolicy() == b.EffectivePolicy())
}

func (b *BaseChain) validate(f Family) error {
	if _, ok := HookNumber(f, b.Hook); !ok {
		return fmt.Errorf("hook %q does not exist in family %s", b.Hook, f)
	}
	switch {
	case b.Type == ChainFilter:
	case b.Type == ChainNAT && (f == FamilyIP || f == FamilyIP6 || f == FamilyInet) && b.Hook != HookForward && b.Hook != HookIngress:
	case b.Type == ChainRoute && (f == FamilyIP || f == FamilyIP6 || f == FamilyInet) && b.Hook == HookOutput:
	default:
		return fmt.Errorf("a %q chain cannot use hook %s in family %s", b.Type, b.Hook, f)
	}
	if p := b.EffectivePolicy(); p != PolicyAccept && p != PolicyDrop {
		return fmt.Errorf("unknown policy %q", p)
	}
	needDev := f == FamilyNetdev || b.Hook == HookIngress
	if needDev != (b.Device != "") {
		return fmt.Errorf("hook %s in family %s: device %q", b.Hook, f, b.Device)
	}
	return validateIfname(b.Device, false)
}
