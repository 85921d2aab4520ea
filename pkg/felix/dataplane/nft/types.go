package nft

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
)

// baseType is one nft datatype usable as a set key or a field of a
// concatenation: its netlink identity and how its values are parsed and
// printed.
type baseType struct {
	name    string
	magic   uint32 // nft's datatype number (NFTA_SET_KEY_TYPE)
	size    int    // bytes in a register
	nft     nftables.SetDatatype
	ordered bool // a big-endian number: ranges and intervals make sense
	host    bool // stored in host byte order (nft needs to know to print it)
	parse   func(s string) ([]byte, error)
	format  func(b []byte) string
}

var baseTypes = map[string]*baseType{}

func init() {
	for _, t := range []*baseType{
		{name: TypeIPv4Addr, magic: 7, size: 4, nft: nftables.TypeIPAddr, ordered: true, parse: parseIPv4, format: formatAddr},
		{name: TypeIPv6Addr, magic: 8, size: 16, nft: nftables.TypeIP6Addr, ordered: true, parse: parseIPv6, format: formatAddr},
		{name: TypeEtherAddr, magic: 9, size: 6, nft: nftables.TypeEtherAddr, ordered: true, parse: parseEther, format: formatEther},
		{name: TypeInetProto, magic: 12, size: 1, nft: nftables.TypeInetProto, ordered: true, parse: parseProto, format: formatProtoBytes},
		{name: TypeInetService, magic: 13, size: 2, nft: nftables.TypeInetService, ordered: true, parse: parseService, format: formatService},
		{name: TypeMark, magic: 19, size: 4, nft: nftables.TypeMark, host: true, parse: parseMark, format: formatMarkBytes},
		{name: TypeIfname, magic: 41, size: ifnameSize, nft: nftables.TypeIFName, host: true, parse: parseIfname, format: formatIfname},
	} {
		baseTypes[t.name] = t
	}
}

const ifnameSize = 16

func baseTypeByMagic(m uint32) *baseType {
	for _, t := range baseTypes {
		if t.magic == m {
			return t
		}
	}
	return nil
}

// setType is a parsed (possibly concatenated) set key type.
type setType struct {
	name   string
	fields []*baseType
	size   int // key length: each field padded to 4 bytes when concatenated
}

// setTypes caches parsed set types; a ruleset uses only a handful.
var setTypes sync.Map // string -> *setType

// parseSetType parses "ipv4_addr" or "ipv4_addr . inet_proto . inet_service".
// The result is shared and must not be modified.
func parseSetType(s string) (*setType, error) {
	if t, ok := setTypes.Load(s); ok {
		return t.(*setType), nil
	}
	t, err := parseSetTypeUncached(s)
	if err == nil {
		setTypes.Store(s, t)
	}
	return t, err
}

func parseSetTypeUncached(s string) (*setType, error) {
	parts := strings.Split(s, ".")
	if len(parts) > 5 {
		return nil, fmt.Errorf("type %q: at most 5 concatenated fields", s)
	}
	t := &setType{}
	for _, p := range parts {
		bt := baseTypes[strings.TrimSpace(p)]
		if bt == nil {
			return nil, fmt.Errorf("type %q: unknown datatype %q", s, strings.TrimSpace(p))
		}
		t.fields = append(t.fields, bt)
	}
	names := make([]string, len(t.fields))
	for i, f := range t.fields {
		names[i] = f.name
		t.size += t.fieldSize(f)
	}
	t.name = Concat(names...)
	return t, nil
}

// setTypeFromMagic decodes the kernel's NFTA_SET_KEY_TYPE (6 bits per field).
func setTypeFromMagic(m uint32) (*setType, error) {
	var names []string
	for ; m != 0; m >>= nftables.SetConcatTypeBits {
		bt := baseTypeByMagic(m & nftables.SetConcatTypeMask)
		if bt == nil {
			return nil, fmt.Errorf("unsupported set datatype %d", m&nftables.SetConcatTypeMask)
		}
		names = append([]string{bt.name}, names...)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("set without datatype")
	}
	return parseSetType(Concat(names...))
}

func (t *setType) concat() bool { return len(t.fields) > 1 }

func (t *setType) fieldSize(f *baseType) int {
	if len(t.fields) > 1 {
		return (f.size + 3) &^ 3
	}
	return f.size
}

// nftType is the google/nftables datatype for AddSet.
func (t *setType) nftType() nftables.SetDatatype {
	if !t.concat() {
		return t.fields[0].nft
	}
	types := make([]nftables.SetDatatype, len(t.fields))
	for i, f := range t.fields {
		types[i] = f.nft
	}
	return nftables.MustConcatSetType(types...)
}

// byteOrder is the key byte order recorded in the set's userdata, which nft
// uses to print elements; nil for concatenations.
func (t *setType) byteOrder() binaryutil.ByteOrder {
	switch {
	case t.concat():
		return nil
	case t.fields[0].host:
		return binaryutil.NativeEndian
	}
	return binaryutil.BigEndian
}

// intervalCapable reports whether the type can back an interval set.
func (t *setType) intervalCapable() bool {
	return !t.concat() && t.fields[0].ordered
}

func parseIPv4(s string) ([]byte, error) {
	a, err := parseHostAddr(s, 32)
	if err != nil || !a.Is4() {
		return nil, fmt.Errorf("%q is not an IPv4 address", s)
	}
	b := a.As4()
	return b[:], nil
}

func parseIPv6(s string) ([]byte, error) {
	a, err := parseHostAddr(s, 128)
	if err != nil || !a.Is6() {
		return nil, fmt.Errorf("%q is not an IPv6 address", s)
	}
	b := a.As16()
	return b[:], nil
}

// parseHostAddr accepts an address, optionally written as a host prefix.
func parseHostAddr(s string, hostBits int) (netip.Addr, error) {
	if addr, bits, ok := strings.Cut(s, "/"); ok {
		if bits != strconv.Itoa(hostBits) {
			return netip.Addr{}, fmt.Errorf("%q is a network, not an address", s)
		}
		s = addr
	}
	return netip.ParseAddr(s)
}

func formatAddr(b []byte) string {
	a, _ := netip.AddrFromSlice(b)
	return a.String()
}

func parseEther(s string) ([]byte, error) {
	mac, err := net.ParseMAC(s)
	if err != nil || len(mac) != 6 {
		return nil, fmt.Errorf("%q is not an Ethernet address", s)
	}
	return mac, nil
}

func formatEther(b []byte) string { return net.HardwareAddr(b).String() }

func parseProto(s string) ([]byte, error) {
	if p, ok := protoByName[s]; ok {
		return []byte{p}, nil
	}
	n, err := strconv.ParseUint(s, 10, 8)
	if err != nil {
		return nil, fmt.Errorf("%q is not an IP protocol", s)
	}
	return []byte{byte(n)}, nil
}

func formatProtoBytes(b []byte) string { return protoName(b[0]) }

func parseService(s string) ([]byte, error) {
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("%q is not a port", s)
	}
	return binary.BigEndian.AppendUint16(nil, uint16(n)), nil
}

func formatService(b []byte) string { return strconv.Itoa(int(binary.BigEndian.Uint16(b))) }

func parseMark(s string) ([]byte, error) {
	n, err := strconv.ParseUint(s, 0, 32)
	if err != nil {
		return nil, fmt.Errorf("%q is not a mark", s)
	}
	return binary.NativeEndian.AppendUint32(nil, uint32(n)), nil
}

func formatMarkBytes(b []byte) string { return formatMark(binary.NativeEndian.Uint32(b)) }

func formatMark(m uint32) string { return fmt.Sprintf("0x%08x", m) }

func parseIfname(s string) ([]byte, error) {
	name := strings.TrimSuffix(strings.TrimPrefix(s, `"`), `"`)
	if name == "" || len(name) >= ifnameSize || strings.ContainsAny(name, "\x00\"*") {
		return nil, fmt.Errorf("%q is not an interface name", s)
	}
	return ifnameKey(name), nil
}

// ifnameKey pads an interface name to IFNAMSIZ.
func ifnameKey(name string) []byte {
	b := make([]byte, ifnameSize)
	copy(b, name)
	return b
}

func formatIfname(b []byte) string {
	return strconv.Quote(strings.TrimRight(string(b), "\x00"))
}

// IP protocol numbers with the names nft prints for them.
const (
	ProtoICMP    uint8 = 1
	ProtoTCP     uint8 = 6
	ProtoUDP     uint8 = 17
	ProtoICMPv6  uint8 = 58
	ProtoSCTP    uint8 = 132
	ProtoUDPLite uint8 = 136
)

var protoNames = map[uint8]string{
	1: "icmp", 2: "igmp", 6: "tcp", 17: "udp", 47: "gre", 50: "esp", 51: "ah",
	58: "ipv6-icmp", 132: "sctp", 136: "udplite",
}

var protoByName = func() map[string]uint8 {
	m := map[string]uint8{}
	for n, s := range protoNames {
		m[s] = n
	}
	m["icmpv6"] = 58
	return m
}()

// protoName is the nft spelling of an IP protocol: a name or a number.
func protoName(p uint8) string {
	if s, ok := protoNames[p]; ok {
		return s
	}
	return strconv.Itoa(int(p))
}
