package nft

import (
	"fmt"
	"strings"

	"github.com/calico-host/calico-host/pkg/nft/vm"
)

// Field is a value of the packet or its metadata that a rule can compare,
// look up in a set or use as a verdict map key: `ip saddr`, `tcp dport`,
// `meta l4proto`, `iifname`... Several fields form a concatenated lookup:
// InSet("s", FieldDAddr(IPv4), FieldL4Proto, FieldDPort(0)) is
// `ip daddr . meta l4proto . th dport @s`.
type Field struct {
	kind fieldKind
	arg  uint8 // IP version for address and ICMP fields, protocol for ports
}

type fieldKind uint8

const (
	fkIIFName fieldKind = iota + 1
	fkOIFName
	fkL4Proto
	fkNFProto
	fkMark
	fkIIFType  // a dependency only
	fkProtocol // a dependency only (EtherType)
	fkSAddr
	fkDAddr
	fkSPort
	fkDPort
	fkICMPType
	fkICMPCode
	fkEtherSAddr
	fkEtherDAddr
	fkARPOp
	fkARPSAddrIP
	fkARPDAddrIP
	fkARPSAddrEther
	fkARPDAddrEther
	fkCtState
	fkCtStatus
)

// Fields without parameters.
var (
	FieldIIFName       = Field{kind: fkIIFName}
	FieldOIFName       = Field{kind: fkOIFName}
	FieldL4Proto       = Field{kind: fkL4Proto}
	FieldNFProto       = Field{kind: fkNFProto}
	FieldMark          = Field{kind: fkMark}
	FieldEtherSAddr    = Field{kind: fkEtherSAddr}
	FieldEtherDAddr    = Field{kind: fkEtherDAddr}
	FieldARPOp         = Field{kind: fkARPOp}
	FieldARPSAddrIP    = Field{kind: fkARPSAddrIP}
	FieldARPDAddrIP    = Field{kind: fkARPDAddrIP}
	FieldARPSAddrEther = Field{kind: fkARPSAddrEther}
	FieldARPDAddrEther = Field{kind: fkARPDAddrEther}
	fieldIIFType       = Field{kind: fkIIFType}
	fieldProtocol      = Field{kind: fkProtocol}
	fieldCtState       = Field{kind: fkCtState}
	fieldCtStatus      = Field{kind: fkCtStatus}
)

// FieldSAddr is `ip saddr` (v IPv4) or `ip6 saddr` (IPv6).
func FieldSAddr(v IPVersion) Field { return Field{kind: fkSAddr, arg: uint8(v)} }

// FieldDAddr is `ip daddr` or `ip6 daddr`.
func FieldDAddr(v IPVersion) Field { return Field{kind: fkDAddr, arg: uint8(v)} }

// FieldSPort is the source port of protocol proto (`tcp sport` for
// ProtoTCP, also udp, sctp, udplite), or `th sport` for proto 0: the
// transport header of any protocol, without a protocol check.
func FieldSPort(proto uint8) Field { return Field{kind: fkSPort, arg: proto} }

// FieldDPort is the destination port; see FieldSPort.
func FieldDPort(proto uint8) Field { return Field{kind: fkDPort, arg: proto} }

// FieldICMPType is `icmp type` (IPv4) or `icmpv6 type` (IPv6).
func FieldICMPType(v IPVersion) Field { return Field{kind: fkICMPType, arg: uint8(v)} }

// FieldICMPCode is `icmp code` or `icmpv6 code`.
func FieldICMPCode(v IPVersion) Field { return Field{kind: fkICMPCode, arg: uint8(v)} }

type fieldInfo struct {
	text  string
	size  int
	typ   baseType // the datatype of its values (0: cannot be a set key)
	meta  vm.MetaKey
	base  vm.PayloadBase
	off   uint32
	arpOK bool // usable in arp tables
	ipOK  bool // usable in the IP families (ip, ip6, inet, bridge, netdev)
}

var metaFields = map[fieldKind]fieldInfo{
	fkIIFName:  {text: "iifname", size: ifnameSize, typ: btIfname, meta: vm.MetaIIFName, arpOK: true, ipOK: true},
	fkOIFName:  {text: "oifname", size: ifnameSize, typ: btIfname, meta: vm.MetaOIFName, arpOK: true, ipOK: true},
	fkL4Proto:  {text: "meta l4proto", size: 1, typ: btInetProto, meta: vm.MetaL4Proto, ipOK: true},
	fkNFProto:  {text: "meta nfproto", size: 1, typ: btNFProto, meta: vm.MetaNFProto, ipOK: true},
	fkMark:     {text: "meta mark", size: 4, typ: btMark, meta: vm.MetaMark, arpOK: true, ipOK: true},
	fkIIFType:  {text: "meta iiftype", size: 2, meta: vm.MetaIIFType, arpOK: true, ipOK: true},
	fkProtocol: {text: "meta protocol", size: 2, meta: vm.MetaProtocol, ipOK: true},
}

var payloadFields = map[fieldKind]fieldInfo{
	fkEtherSAddr:    {text: "ether saddr", size: 6, typ: btEtherAddr, base: vm.BaseLL, off: 6, arpOK: true, ipOK: true},
	fkEtherDAddr:    {text: "ether daddr", size: 6, typ: btEtherAddr, base: vm.BaseLL, off: 0, arpOK: true, ipOK: true},
	fkARPOp:         {text: "arp operation", size: 2, typ: btARPOp, base: vm.BaseNetwork, off: 6, arpOK: true},
	fkARPSAddrEther: {text: "arp saddr ether", size: 6, typ: btEtherAddr, base: vm.BaseNetwork, off: 8, arpOK: true},
	fkARPSAddrIP:    {text: "arp saddr ip", size: 4, typ: btIPv4Addr, base: vm.BaseNetwork, off: 14, arpOK: true},
	fkARPDAddrEther: {text: "arp daddr ether", size: 6, typ: btEtherAddr, base: vm.BaseNetwork, off: 18, arpOK: true},
	fkARPDAddrIP:    {text: "arp daddr ip", size: 4, typ: btIPv4Addr, base: vm.BaseNetwork, off: 24, arpOK: true},
	fkCtState:       {text: "ct state", size: 4},
	fkCtStatus:      {text: "ct status", size: 4},
}

// info describes the field (from a table built once: it is called for
// every field of every rule lowered).
func (f Field) info() fieldInfo { return fieldInfos[f] }

var fieldInfos = buildFieldInfos()

func buildFieldInfos() map[Field]fieldInfo {
	m := map[Field]fieldInfo{}
	for k, fi := range metaFields {
		m[Field{kind: k}] = fi
	}
	for k, fi := range payloadFields {
		m[Field{kind: k}] = fi
	}
	for _, v := range []IPVersion{IPv4, IPv6} {
		addr := fieldInfo{size: 4, typ: btIPv4Addr, base: vm.BaseNetwork, off: 12, ipOK: true}
		icmp := fieldInfo{size: 1, typ: btICMPType, base: vm.BaseTransport, ipOK: true}
		if v == IPv6 {
			addr.size, addr.typ, addr.off, icmp.typ = 16, btIPv6Addr, 8, btICMPv6Type
		}
		m[FieldSAddr(v)] = with(addr, ipKeyword(v)+" saddr", 0, addr.typ)
		m[FieldDAddr(v)] = with(addr, ipKeyword(v)+" daddr", uint32(addr.size), addr.typ)
		m[FieldICMPType(v)] = with(icmp, icmpKeyword(v)+" type", 0, icmp.typ)
		m[FieldICMPCode(v)] = with(icmp, icmpKeyword(v)+" code", 1, 0)
	}
	for _, p := range []uint8{0, ProtoTCP, ProtoUDP, ProtoSCTP, ProtoUDPLite} {
		port := fieldInfo{size: 2, typ: btInetService, base: vm.BaseTransport, ipOK: true}
		m[FieldSPort(p)] = with(port, portKeyword(p)+" sport", 0, port.typ)
		m[FieldDPort(p)] = with(port, portKeyword(p)+" dport", 2, port.typ)
	}
	return m
}

// with returns fi with text, an added offset and a value type.
func with(fi fieldInfo, text string, off uint32, typ baseType) fieldInfo {
	fi.text, fi.off, fi.typ = text, fi.off+off, typ
	return fi
}

func ipKeyword(v IPVersion) string {
	if v == IPv6 {
		return "ip6"
	}
	return "ip"
}

func icmpKeyword(v IPVersion) string {
	if v == IPv6 {
		return "icmpv6"
	}
	return "icmp"
}

// String is the field as nft prints it.
func (f Field) String() string {
	if fi, ok := fieldInfos[f]; ok {
		return fi.text
	}
	return fmt.Sprintf("invalid field (%d, %d)", f.kind, f.arg)
}

// valid reports whether f is a well-formed field.
func (f Field) valid() bool {
	switch f.kind {
	case fkSAddr, fkDAddr, fkICMPType, fkICMPCode:
		return IPVersion(f.arg).valid()
	case fkSPort, fkDPort:
		return f.arg == 0 || hasPorts(f.arg)
	}
	return f.info().text != ""
}

// DataType is the type of the field's values (for a set or map keyed by it).
func (f Field) DataType() DataType {
	if b := f.info().typ; b != 0 {
		return single(b)
	}
	return DataType{}
}

// formatValue prints a value of the field as nft does.
func (f Field) formatValue(b []byte) string {
	switch f.kind {
	case fkICMPCode:
		if f.arg == uint8(IPv6) {
			return formatICMPv6Code(b)
		}
		return formatICMPCode(b)
	case fkIIFType:
		if len(b) == 2 && b[0]|b[1] != 0 {
			return "ether"
		}
	}
	if t := f.info().typ; t != 0 && len(b) == baseInfos[t].size {
		return baseInfos[t].format(b)
	}
	if f.kind == fkIIFName || f.kind == fkOIFName {
		return formatIfname(b) // a prefix: shorter than IFNAMSIZ
	}
	return formatDecimal(b)
}

// needs lists the protocol facts a field depends on: the IP version of the
// packet, its transport protocol (-1: none), an Ethernet link layer.
func (f Field) needs() (v IPVersion, l4 int, ether bool) {
	l4 = -1
	switch f.kind {
	case fkSAddr, fkDAddr:
		v = IPVersion(f.arg)
	case fkICMPType, fkICMPCode:
		v, l4 = IPVersion(f.arg), int(ProtoICMP)
		if v == IPv6 {
			l4 = int(ProtoICMPv6)
		}
	case fkSPort, fkDPort:
		if f.arg != 0 {
			l4 = int(f.arg)
		}
	case fkEtherSAddr, fkEtherDAddr:
		ether = true
	}
	return v, l4, ether
}

// load emits the instruction that loads the field into reg.
func (f Field) load(l *lowerer, reg vm.Register) {
	fi := f.info()
	if fi.meta != 0 {
		l.emit(vm.Meta{Key: fi.meta, Reg: reg})
		return
	}
	switch f.kind {
	case fkCtState:
		l.emit(vm.Ct{Key: vm.CtState, DReg: reg})
	case fkCtStatus:
		l.emit(vm.Ct{Key: vm.CtStatus, DReg: reg})
	default:
		l.emit(vm.Payload{Base: fi.base, Offset: fi.off, Len: uint32(fi.size), DReg: reg})
	}
}

// fieldList is a comparable list of 1 to maxConcat fields.
type fieldList struct {
	n uint8
	f [maxConcat]Field
}

func newFieldList(fields []Field) (fieldList, bool) {
	var l fieldList
	if len(fields) == 0 || len(fields) > maxConcat {
		return l, false
	}
	l.n = uint8(len(fields))
	copy(l.f[:], fields)
	return l, true
}

func (l fieldList) slice() []Field { return l.f[:l.n] }

func (l fieldList) String() string {
	parts := make([]string, l.n)
	for i, f := range l.slice() {
		parts[i] = f.String()
	}
	return strings.Join(parts, " . ")
}

// dataType is the key type of a lookup of these fields.
func (l fieldList) dataType() DataType {
	types := make([]DataType, l.n)
	for i, f := range l.slice() {
		types[i] = f.DataType()
	}
	return Concat(types...)
}

// isAddress reports whether f is an IPv4 or IPv6 source or destination address.
func (f Field) isAddress() bool { return f.kind == fkSAddr || f.kind == fkDAddr }
